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


def join(cmd: Command) -> str:
    """Return ``cmd`` as one shell string; argv lists are quoted item by item."""
    if isinstance(cmd, str):
        return cmd
    return shlex.join([str(part) for part in cmd])


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
    reaches ``cmd`` untouched.
    """
    import base64

    lines = []
    for key, value in env.items():
        if not key or not (key[0].isalpha() or key[0] == "_") or not all(c.isalnum() or c == "_" for c in key):
            raise ValueError(f"invalid environment variable name: {key!r}")
        lines.append(f"{key}={base64.b64encode(value.encode()).decode()}\n")
    prefix = ("".join(lines) + "\n").encode()
    script = (
        'while IFS= read -r kv && [ -n "$kv" ]; do '
        'k=${kv%%=*}; v=$(printf %s "${kv#*=}" | base64 -d; echo .); export "$k=${v%.}"; '
        "done; exec sh -c " + shlex.quote(join(cmd))
    )
    return join(["sh", "-c", script]), prefix
