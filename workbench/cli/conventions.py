"""What every ``workbench`` subcommand shares: exit codes, environment variables, global options.

One table of exit codes for every command (``workbench --help`` prints it, the README
copies it, a test checks both)::

    0    success (nothing wrong found)
    1    a failure was found or happened: a log with a failure (tracebacks), a server that
         failed to start (start --wait, variant), a benchmark point where every request
         failed, a runbook that failed (cell error, server crash, restore failed)
    2    usage error or bad input: unknown option, bad value, unreadable file, unknown unit
         (ConfigError, ParseError, UnitNotFound): nothing on any host was changed
    3    host problem: unreachable, host key refused, sudo refused, a command timed out,
         the host is locked or its GPUs are busy, a runbook's kernel died (HostError,
         LockHeld, GpuBusy): retrying later may work, and a rerun resumes from the ledger
    130  interrupted (Ctrl-C, SIGTERM); the host was restored

The same numbers as ``workbench.runbooks.outcome`` uses for runbook failure kinds, so
``workbench run`` and the other commands read alike.  Like ``grep`` and ``pytest``,
"found a failure" (1) is told apart from "could not look" (2, 3).
"""

from __future__ import annotations

from workbench.errors import (
    ConfigError,
    GpuBusy,
    HostError,
    LockHeld,
    ParseError,
    UnitNotFound,
    WorkbenchError,
)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_HOST, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "success (nothing wrong found)"),
    (EXIT_FAILURE, "a failure found: failures in a log (tracebacks), a start that failed (start --wait, "
                   "variant), a bench point where every request failed, a runbook that failed"),
    (EXIT_USAGE, "usage error or bad input (bad option or value, unreadable file, unknown unit): "
                 "nothing was changed"),
    (EXIT_HOST, "host problem: unreachable, host key or sudo refused, command timeout, host locked, "
                "GPUs busy, kernel died (retry; a rerun resumes)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C, SIGTERM); the host was restored"),
)

# The environment variables the workbench reads (name, what it does).
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("WORKBENCH_SSH_CONFIG", "ssh_config for host aliases (as --ssh-config; default: the running "
                             "testbed's, else ~/.ssh/config)"),
    ("WORKBENCH_SUDO", "1: run every host command through sudo (non-root SSH users)"),
    ("WORKBENCH_SUDO_PASSWORD", "the sudo password, sent on stdin and checked once (never a parameter)"),
    ("WORKBENCH_DATA_DIR", "where runs are recorded (default: ./data)"),
    ("WORKBENCH_CACHE", "cache of the testbed images and the vLLM env (default: $XDG_CACHE_HOME/workbench "
                        "or ~/.cache/workbench)"),
    ("WORKBENCH_TESTBED_DIR", "the testbed's state directory (default: $WORKBENCH_CACHE/testbed)"),
    ("WORKBENCH_KEEP_TESTBED", "1: the test suite leaves a testbed it started running"),
    ("WORKBENCH_API_KEY", "the API key `workbench bench` sends as a Bearer token (else OPENAI_API_KEY)"),
    ("WORKBENCH_INVENTORY", "the inventory of hosts, backends and groups (default: ~/.config/workbench/inventory.toml)"),
    ("WORKBENCH_DEPLOYMENTS", "multi-node deployments file (default: deployments.toml beside the ssh_config)"),
    ("WORKBENCH_SLURM_CLUSTERS", "Slurm clusters file for slurm:NAME (default: ~/.config/workbench/slurm.toml)"),
)


def exit_code_for(exc: BaseException) -> int:
    """The exit code of an error that ended a command (the table above)."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, ConfigError | ParseError | UnitNotFound):
        return EXIT_USAGE
    if isinstance(exc, HostError | LockHeld | GpuBusy):
        return EXIT_HOST
    if isinstance(exc, WorkbenchError):
        return EXIT_FAILURE
    raise TypeError(f"not a workbench error: {exc!r}")


def table(rows: tuple[tuple[object, str], ...], width: int = 24, columns: int = 100) -> str:
    """``rows`` as an aligned two-column text block (help epilogs), the second column wrapped."""
    import textwrap

    indent = " " * (width + 3)
    return "\n".join(textwrap.fill(str(v), columns, initial_indent=f"  {k!s:<{width}} ",
                                    subsequent_indent=indent) for k, v in rows)


def epilog() -> str:
    """``workbench --help``'s epilog: exit codes and environment variables."""
    return (f"exit codes (every command):\n{table(EXIT_CODES, 4)}\n\n"
            f"environment:\n{table(ENVIRONMENT)}\n\n"
            "Global options (--ssh-config) go before or after the subcommand. `workbench COMMAND --help` "
            "shows each command's options with their defaults and examples.")
