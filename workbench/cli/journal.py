"""``workbench journal HOST UNIT``: a unit's journal (one invocation, the last N, a window), filtered,
optionally followed.

Like ``journalctl``: text is ``-o short-iso-precise``-like; ``--json`` is NDJSON, one object
per entry (``journalctl -o json``), nothing else on stdout; ``-n/--lines`` the last N lines;
``-f/--follow`` prints new lines as they arrive until Ctrl-C (or ``--until``).  What the
journal did not keep whole (rate limiting, cut lines, rotated files) is reported on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TextIO

import pandas as pd

from workbench.errors import ConfigError

JSON_COLUMNS = ["time", "pid", "invocation", "origin", "identifier", "priority", "rank", "level", "phase", "message",
                "parts", "cursor"]
FOLLOW_LINES = 10  # lines shown before following, as journalctl -f
EXAMPLES = """\
examples:
  workbench journal gpu-a sglang-k26-ddtree.service --invocation last --grep Error
  workbench journal gpu-a sglang-k26-ddtree.service -n 50 --rank TP3
  workbench journal gpu-a sglang-k26-ddtree.service -f                  # follow until Ctrl-C
  workbench journal gpu-a sglang-k26-ddtree.service --since=-1h --json | jq -r .message
  workbench journal gpu-a sglang-k26-ddtree.service --list
  workbench journal gpu-a,gpu-b sglang-k26-2node.service --rank node1/TP9   # a deployment, merged
  workbench journal slurm:testbed 42 -f                                 # a job's output until it ends
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "journal",
        help="a unit's journal: one invocation, the last N, a time window, follow; grep-like filters",
        description="Read a unit's journal (systemd or the process backend) with PID 1's lines about it, "
        "rejoin lines journald split, report what it dropped, and filter the rows.",
        epilog=EXAMPLES,
    )
    p.add_argument("host", help="host alias (ssh_config), 'local', or a local-testbed host; a deployment's "
                                "host list (gpu-a,gpu-b) or name: one journal over every node with a node column, "
                                "clock offsets measured and taken off")
    p.add_argument("unit", help="the unit (.service may be left out)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--invocation", metavar="N|ID", help="an invocation: its ID, 'last', or an index "
                       "(-1 last, -2 the one before, 0 the oldest)")
    which.add_argument("--last", type=int, metavar="N", help="the last N invocations")
    which.add_argument("--after-cursor", metavar="CURSOR", help="only what came after this cursor")
    which.add_argument("--list", action="store_true", help="list the unit's invocations instead of lines")
    p.add_argument("-n", "--lines", type=int, metavar="N",
                   help=f"only the last N lines (after filtering; with -f default {FOLLOW_LINES})")
    p.add_argument("-f", "--follow", action="store_true",
                   help="then print new lines as they arrive, until Ctrl-C or --until (a Slurm job: until it ends)")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="with -f: how often to ask the host for new lines")
    p.add_argument("--since", help="start time: ISO, epoch seconds, or journalctl syntax (--since=-1h, \"today\")")
    p.add_argument("--until", help="end time (same forms; with -f: stop following then)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="read an ended invocation in N time slices at once (default: 4 for one of 2 s or "
                        "more, else 1)")
    p.add_argument("--grep", metavar="RE", help="keep lines matching this regex")
    p.add_argument("--exclude", metavar="RE", help="drop lines matching this regex")
    p.add_argument("--level", help="this level or worse (DEBUG, INFO, WARNING, ERROR, CRITICAL)")
    p.add_argument("--rank", action="append", metavar="RANK", help="lines of this rank (TP3, DP1, ...); repeatable")
    p.add_argument("--phase", action="append", help="lines logged in this startup phase; repeatable")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="NDJSON: one JSON object per entry (journalctl -o json)")
    fmt.add_argument("--text", action="store_true", help="journalctl-like text (the default)")
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

    return services_for(connect(args.host, ssh_config=getattr(args, "ssh_config", None)))


def json_lines(frame: pd.DataFrame, host: str) -> str:
    """NDJSON of the rows: one object per entry, times in ISO 8601."""
    if frame.empty:
        return ""
    cols = [c for c in JSON_COLUMNS if c in frame]
    rows = frame[cols].astype(object).where(frame[cols].notna(), None)
    out = []
    for r in rows.to_dict(orient="records"):
        if isinstance(r.get("time"), datetime | pd.Timestamp):
            r["time"] = r["time"].isoformat()
        out.append(json.dumps({"host": host, **r}, ensure_ascii=False, default=str))
    return "\n".join(out) + "\n"


def _until_epoch(value: str | None) -> float | None:
    """``--until`` as epoch seconds for stopping a follow (None: follow until Ctrl-C)."""
    if value is None:
        return None
    from workbench.journal.frame import to_usec

    try:
        return float(value)
    except ValueError:
        pass
    try:
        return to_usec(value) / 1e6
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"--until with -f needs an absolute time (ISO or epoch seconds), not {value!r}") from exc


def follow(fetch: Callable[[str], tuple[pd.DataFrame, str]], cursor: str, emit: Callable[[pd.DataFrame], None], *,
           interval: float = 1.0, until: float | None = None, stop: threading.Event | None = None,
           clock: Callable[[], float] = time.time) -> str:
    """Call ``fetch(cursor)`` -> (new rows, next cursor) every ``interval`` seconds and ``emit`` the
    rows, until ``stop`` is set or the clock passes ``until``; returns the last cursor.  Ctrl-C
    propagates (the caller exits 130)."""
    stop = stop or threading.Event()
    while not stop.is_set():
        rows, cursor = fetch(cursor)
        if len(rows):
            emit(rows)
        if until is not None and clock() >= until:
            break
        stop.wait(interval if until is None else max(0.0, min(interval, until - clock())))
    return cursor


def _show(frame: pd.DataFrame, args: argparse.Namespace, out: TextIO) -> None:
    from workbench.journal.filter import to_text

    out.write(json_lines(frame, args.host) if args.json else to_text(frame))
    out.flush()


def run(args: argparse.Namespace) -> int:
    from workbench.journal import read as journal_read
    from workbench.journal.filter import filter

    if args.last is not None and args.last < 1:
        raise ConfigError("--last needs 1 or more")
    if args.lines is not None and args.lines < 0:
        raise ConfigError("-n/--lines needs 0 or more")
    if args.interval <= 0:
        raise ConfigError("--interval needs a number of seconds > 0")
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs needs 1 or more")
    if args.follow and args.list:
        raise ConfigError("--follow and --list do not go together")
    until = _until_epoch(args.until) if args.follow else None
    if args.host.startswith("slurm:"):  # the job's output file(s), one invocation per job
        from workbench.cli.slurm import journal

        return journal(args, lambda frame: _show(frame, args, sys.stdout))
    from workbench.cli import deployment as dep_cli

    dep = dep_cli.resolve(args.host, args.unit, ssh_config=getattr(args, "ssh_config", None))
    if dep is not None:
        with dep_cli.connected(dep, getattr(args, "ssh_config", None)) as hosts:
            return dep_cli.journal(dep, hosts, args)
    svc = _services(args)
    if args.list:
        table = journal_read.invocations(svc, args.unit)
        if args.json:
            sys.stdout.write("".join(json.dumps(r, default=str) + "\n" for r in json.loads(
                table.to_json(orient="records", date_format="iso"))))
        else:
            print(table.to_string(index=False) if len(table) else f"{args.unit}: no invocations in the journal")
        return 0

    def pick(frame: Any) -> pd.DataFrame:
        return filter(frame, include=args.grep, exclude=args.exclude, level=args.level, rank=args.rank,
                      phase=args.phase)

    frame = journal_read.read(svc, args.unit, invocation=_invocation(args.invocation), last_invocations=args.last,
                              since=args.since, until=None if args.follow else args.until,
                              after_cursor=args.after_cursor, jobs=args.jobs)
    shown = pick(frame)
    lines = args.lines if args.lines is not None else (FOLLOW_LINES if args.follow else None)
    if lines is not None:
        shown = shown.iloc[len(shown) - lines:] if lines else shown.iloc[:0]
    _show(shown, args, sys.stdout)
    lost = frame.lost
    if lost is not None and (lost.incomplete or lost.split_lines):
        print(f"workbench journal: {lost.describe()}", file=sys.stderr)
    if not args.follow:
        if shown.empty:
            print("-- No entries --", file=sys.stderr)
        return 0

    def fetch(cursor: str) -> tuple[pd.DataFrame, str]:
        new, cursor = journal_read.since_cursor(svc, args.unit, cursor)
        if new.lost is not None and new.lost.incomplete:
            print(f"workbench journal: {new.lost.describe()}", file=sys.stderr)
        return pick(new), cursor

    follow(fetch, frame.cursor or svc.cursor(), lambda rows: _show(rows, args, sys.stdout),
           interval=args.interval, until=until)
    return 0
