"""The ``workbench`` console command.

Each subcommand lives in its own module under ``workbench.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (a callable
taking the parsed ``argparse.Namespace`` and returning an exit code).  Adding a
subcommand is one module and one line in :data:`COMMANDS`; :func:`build_parser`
then gives it the global options, the help formatter and the exit-code epilog.
Exit codes and environment variables: :mod:`workbench.cli.conventions`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from workbench import __version__
from workbench.cli.conventions import EXIT_INTERRUPTED, EXIT_USAGE, epilog, exit_code_for
from workbench.errors import WorkbenchError
from workbench.signals import terminate_as_interrupt

# One line per subcommand module; order is the order of ``workbench --help``.
COMMANDS: tuple[str, ...] = (
    "testbed",
    "demo",
    "services",
    "deployment",
    "restore",
    "tracebacks",
    "journal",
    "bench",
    "run",
    "report",
)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written; every option's default shown unless its help names one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if ("default" in text.lower() or not action.option_strings or default in (None, False, True, [], "")
                or default is argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def add_global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The options accepted before *and* after the subcommand.  On subparsers their default is
    SUPPRESS, so an option given before the subcommand is not overwritten by the subparser's."""
    default: Any = None if top else argparse.SUPPRESS
    parser.add_argument("--ssh-config", metavar="PATH", default=default,
                        help="ssh_config that resolves host aliases, read alone (default: $WORKBENCH_SSH_CONFIG, "
                             "else the running testbed's and ~/.ssh/config both)")


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every parser below ``parser`` (``testbed up`` too), each once."""
    seen: set[int] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if id(child) not in seen:
                    seen.add(id(child))
                    yield child
                    yield from _subparsers(child)


def leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers that run something (have no subcommands of their own)."""
    return [p for p in _subparsers(parser)
            if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Investigate LLM inference servers (SGLang, vLLM) on remote GPU hosts: service control "
                    "with safe variants, journals, traceback diagnosis, benchmarks and runbooks.",
        epilog=epilog(), formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"workbench {__version__}",
                        help="print the version and exit")
    add_global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"workbench.cli.{name}").register(sub)
    for child in _subparsers(parser):
        child.formatter_class = HelpFormatter
        add_global_options(child, top=False)
    return parser


def _quiet_stdout() -> None:
    """After a broken pipe (``workbench journal ... | head``): no second error at interpreter exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        with terminate_as_interrupt():  # SIGTERM and SIGHUP restore as Ctrl-C does
            return int(args.func(args) or 0)
    except WorkbenchError as exc:
        print(f"workbench {args.command}: error: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        print(f"workbench {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into `head` and friends
        _quiet_stdout()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
