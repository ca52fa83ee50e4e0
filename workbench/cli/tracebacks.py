"""``workbench tracebacks``: the failures in a server log, as a summary or as JSON.

The text comes from one function, :func:`_read_input`: a file, stdin, or with
``--host``/``--unit`` one invocation of a unit's journal (workbench.journal.read).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.errors import ConfigError
from workbench.tracebacks import analyze, format_summary, to_json

EXAMPLES = """\
examples:
  workbench tracebacks server.log
  journalctl -u sglang-k26-ddtree.service -b | workbench tracebacks -
  workbench tracebacks --host gpu-a --unit sglang-k26-ddtree.service --invocation -2 --json
exit: 0 no failure in the log, 1 failures found (like grep, pytest), 2 unreadable input, 3 host problem.
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "tracebacks",
        help="find the tracebacks, failures and root cause in a server log",
        description="Find every Python traceback (and C++ exception, Xid, OOM kill...) in an SGLang/vLLM log, "
        "group them into failures and name the final error and the root cause.",
    )
    p.epilog = EXAMPLES
    p.add_argument("file", nargs="?", default="-", metavar="FILE", help="log file, or - for stdin (default)")
    p.add_argument("--json", action="store_true", help="print the stable JSON object (docs/tracebacks.md)")
    p.add_argument("--host", help="read a unit's journal on this host instead of a file (with --unit)")
    p.add_argument("--unit", help="the unit whose journal to read (with --host)")
    p.add_argument("--invocation", metavar="N|ID", default="last",
                   help="which invocation: its ID, 'last' (default), or an index (-1 last, 0 the oldest)")
    p.set_defaults(func=run)


def _read_input(args: argparse.Namespace) -> str:
    """The log text the command works on."""
    if getattr(args, "host", None) or getattr(args, "unit", None):
        return _read_journal(args)
    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(args.file, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise ConfigError(f"cannot read {args.file}: {exc.strerror or exc}; pass a readable log file or - for stdin") from exc
    return data.decode("utf-8", "replace")


def _read_journal(args: argparse.Namespace) -> str:
    """One invocation of a unit's journal (PID 1's lines included) as journalctl-like text."""
    if not (args.host and args.unit):
        raise ConfigError("--host and --unit go together")
    if args.file != "-":
        raise ConfigError("give a FILE or --host/--unit, not both")
    from workbench.hosts import connect
    from workbench.journal import read as journal_read
    from workbench.journal.filter import to_text
    from workbench.services import services_for

    invocation: str | int = args.invocation
    if invocation != "last":
        try:
            invocation = int(invocation)
        except ValueError:
            pass
    svc = services_for(connect(args.host, ssh_config=getattr(args, "ssh_config", None)))
    frame = journal_read.read(svc, args.unit, invocation=invocation)
    if frame.lost is not None and frame.lost.incomplete:
        print(f"workbench tracebacks: {frame.lost.describe()}", file=sys.stderr)
    return to_text(frame)


def run(args: argparse.Namespace) -> int:
    analysis = analyze(_read_input(args))
    if args.json:
        json.dump(to_json(analysis), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_summary(analysis))
    return 1 if analysis.failures else 0
