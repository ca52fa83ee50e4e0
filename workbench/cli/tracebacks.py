"""``workbench tracebacks``: the failures in a server log, as a summary or as JSON.

The text comes from one function, :func:`_read_input`, so other sources (a host's
journal) can be added there without touching the rest.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.errors import ConfigError
from workbench.tracebacks import analyze, format_summary, to_json


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "tracebacks",
        help="find the tracebacks, failures and root cause in a server log",
        description="Find every Python traceback (and C++ exception, Xid, OOM kill...) in an SGLang/vLLM log, "
        "group them into failures and name the final error and the root cause.",
    )
    p.add_argument("file", nargs="?", default="-", metavar="FILE", help="log file, or - for stdin (default)")
    p.add_argument("--json", action="store_true", help="print the stable JSON object (docs/tracebacks.md)")
    p.set_defaults(func=run)


def _read_input(args: argparse.Namespace) -> str:
    """The log text the command works on."""
    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(args.file, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise ConfigError(f"cannot read {args.file}: {exc.strerror or exc}; pass a readable log file or - for stdin") from exc
    return data.decode("utf-8", "replace")


def run(args: argparse.Namespace) -> int:
    analysis = analyze(_read_input(args))
    if args.json:
        json.dump(to_json(analysis), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_summary(analysis))
    return 0
