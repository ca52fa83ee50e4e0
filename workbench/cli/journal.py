"""``workbench journal HOST UNIT``: a unit's journal (one invocation, the last N, a window), filtered.

Text output is ``journalctl -o short-iso-precise``-like; ``--json`` prints one object with
the rows, the cursor to continue from and what the journal lost.  A log the journal
did not keep whole (rate limiting, cut lines, rotated files) is reported on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.errors import ConfigError

JSON_COLUMNS = ["time", "pid", "invocation", "origin", "identifier", "priority", "rank", "level", "phase", "message",
                "parts", "cursor"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "journal",
        help="a unit's journal: one invocation, the last N, a time window; grep-like filters",
        description="Read a unit's journal (systemd or the process backend) with PID 1's lines about it, "
        "rejoin lines journald split, report what it dropped, and filter the rows.",
    )
    p.add_argument("host", help="host alias (ssh_config), 'local', or a local-testbed host")
    p.add_argument("unit")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--invocation", metavar="N|ID", help="an invocation: its ID, 'last', or an index "
                       "(-1 last, -2 the one before, 0 the oldest)")
    which.add_argument("--last", type=int, metavar="N", help="the last N invocations")
    which.add_argument("--after-cursor", metavar="CURSOR", help="only what came after this cursor")
    which.add_argument("--list", action="store_true", help="list the unit's invocations instead of lines")
    p.add_argument("--since", help="start time: ISO, epoch seconds, or journalctl syntax (--since=-1h, \"today\")")
    p.add_argument("--until", help="end time")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="read an ended invocation in N time slices at once (big logs; default 1)")
    p.add_argument("--grep", metavar="RE", help="keep lines matching this regex")
    p.add_argument("--exclude", metavar="RE", help="drop lines matching this regex")
    p.add_argument("--level", help="this level or worse (DEBUG, INFO, WARNING, ERROR, CRITICAL)")
    p.add_argument("--rank", action="append", metavar="RANK", help="lines of this rank (TP3, DP1, ...); repeatable")
    p.add_argument("--phase", action="append", help="lines logged in this startup phase; repeatable")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object: rows, cursor, losses")
    fmt.add_argument("--text", action="store_true", help="journalctl-like text (the default)")
    p.add_argument("--ssh-config", dest="journal_ssh_config", metavar="PATH", help="ssh_config for the host alias")
    p.set_defaults(func=run)


def _invocation(value: str | None) -> str | int | None:
    if value is None or value == "last":
        return value
    try:
        return int(value)
    except ValueError:
        return value


def _services(args: argparse.Namespace) -> Any:
    from workbench.hosts import connect
    from workbench.services import services_for

    return services_for(connect(args.host, ssh_config=args.journal_ssh_config or getattr(args, "ssh_config", None)))


def run(args: argparse.Namespace) -> int:
    from workbench.journal import read as journal_read
    from workbench.journal.filter import filter, to_text

    svc = _services(args)
    if args.list:
        table = journal_read.invocations(svc, args.unit)
        if args.json:
            print(table.to_json(orient="records", date_format="iso", indent=2))
        else:
            print(table.to_string(index=False) if len(table) else f"{args.unit}: no invocations in the journal")
        return 0
    if args.last is not None and args.last < 1:
        raise ConfigError("--last needs 1 or more")
    frame = journal_read.read(svc, args.unit, invocation=_invocation(args.invocation), last_invocations=args.last,
                              since=args.since, until=args.until, after_cursor=args.after_cursor, jobs=args.jobs)
    shown = filter(frame, include=args.grep, exclude=args.exclude, level=args.level, rank=args.rank, phase=args.phase)
    lost = frame.lost
    if args.json:
        rows = shown[JSON_COLUMNS].astype(object).where(shown[JSON_COLUMNS].notna(), None)
        out = {"host": args.host, "unit": frame.unit, "cursor": frame.cursor, "incomplete": frame.incomplete,
               "lost": None if lost is None else {"suppressed": lost.suppressed, "split_lines": lost.split_lines,
                                                  "split_records": lost.split_records, "truncated": lost.truncated,
                                                  "binary": lost.binary, "gaps": lost.gaps, "rate_limited": lost.rate_limited, "rate_limit": lost.rate_limit,
                                                  "suppressed_records": lost.suppressed_records},
               "entries": [{**r, "time": r["time"].isoformat()} for r in rows.to_dict(orient="records")]}
        json.dump(out, sys.stdout, indent=1, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(to_text(shown))
        if shown.empty:
            print("-- No entries --", file=sys.stderr)
    if lost is not None and (lost.incomplete or lost.split_lines):
        print(f"workbench journal: {lost.describe()}", file=sys.stderr)
    return 0
