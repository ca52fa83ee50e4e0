"""The ``workbench`` console command.

Each subcommand lives in its own module under ``workbench.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (a callable
taking the parsed ``argparse.Namespace`` and returning an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from workbench.errors import WorkbenchError

# One line per subcommand module; order is the order of ``workbench --help``.
COMMANDS: tuple[str, ...] = (
    "testbed",
    "demo",
    "services",
    "tracebacks",
    "journal",
    "bench",
    "run",
    "report",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Investigate LLM inference servers on remote GPU hosts.",
    )
    parser.add_argument("--ssh-config", metavar="PATH", help="ssh_config to resolve host aliases, read alone (default: $WORKBENCH_SSH_CONFIG, else the running testbed's and ~/.ssh/config both)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"workbench.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except WorkbenchError as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and friends
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
