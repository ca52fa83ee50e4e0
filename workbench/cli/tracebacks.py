"""``workbench tracebacks``: the failures in a server log, as a summary or as JSON.

The log comes from one function, :func:`_analyze_input`: a file or stdin (read a line at a
time, so memory stays bounded on a log of any size), or with
``--host``/``--unit`` one invocation of a unit's journal (workbench.journal.read).

Exit status (the CLI-wide meanings, README's table): 0 no failure found, 1 a failure found
(a traceback, a C++ exception or a failure line: the JSON's ``root_cause`` is not null), 2
usage error (bad arguments, unreadable file, ``--host`` without ``--unit``), 3 host problem
(with ``--host``: unreachable, host key refused, a command timed out). ``--schema`` prints the
JSON Schema of ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.errors import ConfigError
from workbench.tracebacks import Analysis, analyze, analyze_stream, format_summary, to_json
from workbench.tracebacks.render import json_schema

EXAMPLES = """\
examples:
  workbench tracebacks server.log
  journalctl -u sglang-k26-ddtree.service -b | workbench tracebacks -
  workbench tracebacks --host gpu-a --unit sglang-k26-ddtree.service --invocation -2 --json
  workbench tracebacks --host gpu-a,gpu-b --unit sglang-k26-2node.service   # first failing node/rank
exit status: 0 no failure found, 1 failure found (like grep, pytest), 2 usage error or unreadable input,
3 host problem.
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
    p.add_argument("--schema", action="store_true", help="print the JSON Schema of the --json object and exit")
    p.add_argument("--host", help="read a unit's journal on this host instead of a file (with --unit); a "
                                  "deployment's host list (gpu-a,gpu-b) names the first failing node and rank")
    p.add_argument("--unit", help="the unit whose journal to read (with --host)")
    p.add_argument("--invocation", metavar="N|ID", default="last",
                   help="which invocation: its ID, 'last' (default), or an index (-1 last, 0 the oldest)")
    p.set_defaults(func=run)


def _analyze_input(args: argparse.Namespace) -> Analysis:
    """The analysis of the log the command works on: a file or stdin read a line at a time, or a journal."""
    if getattr(args, "host", None) or getattr(args, "unit", None):
        return analyze(_read_journal(args))
    if args.file == "-":
        return analyze_stream(sys.stdin.buffer)
    try:
        fh = open(args.file, "rb")
    except OSError as exc:
        raise ConfigError(f"cannot read {args.file}: {exc.strerror or exc}; pass a readable log file or - for stdin") from exc
    with fh:
        return analyze_stream(fh)


def _read_journal(args: argparse.Namespace) -> str:
    """One invocation of a unit's journal as the traceback analysis reads it everywhere (journal.read.frame_text)."""
    if not (args.host and args.unit):
        raise ConfigError("--host and --unit go together")
    if args.file != "-":
        raise ConfigError("give a FILE or --host/--unit, not both")
    if args.host.startswith("slurm:"):  # the job's output file(s); --unit a job id or a script's last job
        from workbench.cli.slurm import job_text

        return job_text(args)
    from workbench.hosts import connect
    from workbench.journal import read as journal_read
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
    return journal_read.frame_text(frame)


EXIT_NONE_FOUND = 0
EXIT_FAILURE_FOUND = 1
EXIT_USAGE = 2


def run(args: argparse.Namespace) -> int:
    if getattr(args, "schema", False):
        json.dump(json_schema(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_NONE_FOUND
    try:
        if getattr(args, "host", None) and not args.host.startswith("slurm:"):
            from workbench.cli import deployment as dep_cli

            dep = dep_cli.resolve(args.host, args.unit, ssh_config=getattr(args, "ssh_config", None))
            if dep is not None:
                if args.file != "-":
                    raise ConfigError("give a FILE or --host/--unit, not both")
                with dep_cli.connected(dep, getattr(args, "ssh_config", None)) as hosts:
                    return dep_cli.tracebacks(dep, hosts, invocation=args.invocation, as_json=args.json)
        analysis = _analyze_input(args)
    except ConfigError as exc:
        print(f"workbench tracebacks: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        json.dump(to_json(analysis), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_summary(analysis))
    found = analysis.root_cause is not None or bool(analysis.failures)
    return EXIT_FAILURE_FOUND if found else EXIT_NONE_FOUND
