"""Pure shell-command builders: quoting, deadlines, tethering.

Every value that reaches a remote shell goes through :func:`join` (``shlex``);
nothing here touches a host.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence

Command = str | Sequence[str]

# Exit status of coreutils ``timeout`` when the deadline struck.
TIMEOUT_EXIT = 124
# Grace between TERM and KILL for a command that ran past its deadline.
KILL_AFTER_S = 3
# Exit status of a command whose stdin ended before all its bytes came (:func:`whole_stdin`): not run.
CUT_INPUT_EXIT = 74

# Spool stdin (memory-backed /dev/shm where there is one), count it, and only on the whole count run
# the command, its stdin the spooled copy, already unlinked.  $1 the byte count, $2 the command line,
# run by this shell (``eval``: one process fewer than ``sh -c``; it is a whole command line of its own).
_WHOLE_STDIN = (
    't=$(mktemp /dev/shm/.wb-in.XXXXXX 2>/dev/null || mktemp) || exit 74; '
    "trap 'rm -f \"$t\"' EXIT; trap 'exit 74' HUP INT PIPE TERM; "
    'cat >"$t" || { echo "cannot keep the input in $t (no space?): the command was not run" >&2; exit 74; }; '
    'n=$(wc -c <"$t"); '
    'if [ "$n" -ne "$1" ]; then echo "input cut: $n of $1 bytes came: the command was not run" >&2; exit 74; fi; '
    'exec <"$t"; rm -f "$t"; trap - EXIT HUP INT PIPE TERM; eval "$2"'
)


def join(cmd: Command) -> str:
    """Return ``cmd`` as one shell string; argv lists are quoted item by item."""
    if isinstance(cmd, str):
        return cmd
    return shlex.join([str(part) for part in cmd])


def whole_stdin(cmd: Command, size: int) -> str:
    """Wrap ``cmd`` so it runs only once all ``size`` bytes of its stdin came, and then on exactly those.

    A sender that dies mid-way (a killed controller: its channel closes) ends the command's stdin
    early, and every reader takes that end for the end of its input: ``cat`` would rename a cut file
    into place, ``python3 -`` or ``sbatch`` would run a script cut at a line.  The whole input is kept
    first (0600, unlinked before the command starts); a cut one exits :data:`CUT_INPUT_EXIT` and
    nothing of the command runs.
    """
    return join(["sh", "-c", _WHOLE_STDIN, "whole-input", str(size), join(cmd)])


def with_deadline(cmd: Command, seconds: float) -> str:
    """Wrap ``cmd`` so the host itself kills it (and its process group) after ``seconds``.

    coreutils ``timeout`` puts itself in a new process group and signals the
    whole group, so nothing the command spawned survives it: a client-side
    timeout never leaves an orphan behind.
    """
    secs = max(1, math.ceil(seconds))
    return join(["timeout", "-k", str(KILL_AFTER_S), str(secs), "sh", "-c", join(cmd)])


def tethered(cmd: Command) -> str:
    """Wrap ``cmd`` so it dies when our end of the channel goes away.

    The command runs in its own session (``setsid``) with stdin from /dev/null; a
    watcher reads the channel's stdin and kills that group on EOF, which is what
    the host sees when we close the stream, when the controller is killed, or
    when the SSH link drops.  Used for long-lived streams such as
    ``journalctl -f`` that would otherwise linger until their next write.
    """
    inner = join(cmd)
    script = (
        "exec 3<&0\n"
        f"setsid sh -c {shlex.quote(inner)} </dev/null &\n"
        "p=$!\n"
        '( cat <&3 >/dev/null; kill -TERM "-$p" 2>/dev/null ) &\n'
        "w=$!\n"
        "exec 3<&-\n"
        'wait "$p"; rc=$?\n'
        'kill "$w" 2>/dev/null\n'
        'exit "$rc"\n'
    )
    return join(["sh", "-c", script])


def with_env_from_stdin(cmd: Command, env: dict[str, str]) -> tuple[str, bytes]:
    """Return ``(command, stdin_prefix)`` that sets ``env`` without putting values on any command line.

    Values travel base64-encoded on stdin, one ``NAME=B64`` line each and an
    empty line at the end, and are decoded by the shell's builtin ``read``/
    ``printf`` feeding ``base64 -d`` through a pipe: no secret ever shows in
    ``/proc/*/cmdline`` or in ``ps``.  Whatever follows the prefix on stdin
    reaches ``cmd`` untouched.  A prefix cut before its empty line (a sender that died mid-way)
    exits :data:`CUT_INPUT_EXIT` and ``cmd`` never runs with part of its environment.
    """
    import base64

    lines = []
    for key, value in env.items():
        if not key or not (key[0].isalpha() or key[0] == "_") or not all(c.isalnum() or c == "_" for c in key):
            raise ValueError(f"invalid environment variable name: {key!r}")
        lines.append(f"{key}={base64.b64encode(value.encode()).decode()}\n")
    prefix = ("".join(lines) + "\n").encode()
    script = (
        'while IFS= read -r kv; do [ -n "$kv" ] || { whole=1; break; }; '
        'k=${kv%%=*}; v=$(printf %s "${kv#*=}" | base64 -d; echo .); export "$k=${v%.}"; '
        f'done; [ -n "${{whole:-}}" ] || {{ echo "workbench: the environment came cut" >&2; exit {CUT_INPUT_EXIT}; }}; '
        "exec sh -c " + shlex.quote(join(cmd))
    )
    return join(["sh", "-c", script]), prefix
