"""A session's host commands are fenced: none of them can land after its host was restored.

The race this closes: the controller dies while one of its commands runs on the host (the
variant's install, a record write, a stop).  sshd does not end such a command when the
connection goes, so without a fence it could finish *after* the guard (or the next session)
restored the host, and leave the variant's file or unit behind.

From a session's first record write on, every command it sends through ``Host.run`` runs
under :meth:`Fence.wrap`: it holds a *shared* ``flock`` on the session's in-flight lock
(``<state_dir>/inflight-<id>.lock``) for as long as it runs, and runs only while the session's
record is still there, still this session's, and not marked ``"fenced_by": {...}``.  A restorer that
takes over a dead session (:func:`workbench.hostguard.fence`, on the host) first marks the record,
then takes the lock *exclusively*: that waits for every command already in flight to end (at
most :data:`FENCE_WAIT_S`, then it ends their process groups), and every command that arrives
later is refused (exit :data:`FENCED_EXIT`) -- so the restore that follows is the last word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench import shell

FENCED_EXIT = 86  # a fenced command refused to run: its session's host was handed to a restorer
MARK = "fenced_by"  # the key a restorer adds to the record before it waits for the in-flight commands
FENCE_WAIT_S = 5.0  # how long a restorer waits for in-flight commands before ending them
FLOCK_CANNOT_OPEN = 66  # flock(1)'s exit when it cannot open (make) its lock file: EX_NOINPUT
ATTR = "fence"  # the Host attribute run() consults (SSHHost, LocalHost)

REFUSAL = "workbench: not run: this session was fenced off (its host is being restored, or was)"
# Refused, it says why the restorer took over when the record still says (the mark's "why").
_CHECK = ('grep -qF -- "$1" "$2" 2>/dev/null && ! grep -qF -- "$3" "$2" 2>/dev/null || '
          '{ w=$(grep -o \'"why": "[^"]*"\' "$2" 2>/dev/null | head -n 1); '
          f'echo "{REFUSAL}${{w:+ [$w]}}" >&2; exit {FENCED_EXIT}; }}; exec sh -c "$4"')
_WHY = re.compile(r'\["why": "([^"]*)"\]')


def lock_path(state_dir: str, session_id: str) -> str:
    return f"{state_dir}/inflight-{session_id[:12]}.lock"


@dataclass(frozen=True)
class Fence:
    """The fence of one session: its in-flight lock and its record."""

    state_dir: str
    record: str
    session_id: str

    @property
    def lock(self) -> str:
        return lock_path(self.state_dir, self.session_id)

    def wrap(self, text: str) -> str:
        """``text`` (one shell command line) run under the session's shared in-flight lock, only while
        its record is this session's and not fenced; refused with :data:`FENCED_EXIT` otherwise."""
        return shell.join(["flock", "-s", "-n", "-o", "-E", str(FENCED_EXIT), self.lock, "sh", "-c", _CHECK,
                           "fenced", f'"id": "{self.session_id}"', self.record, f'"{MARK}": {{', text])

    def refused(self, exited: int | None, stderr: str) -> bool:
        """Whether a command's result is the fence's refusal (not the command's own exit 86): refused by
        the check, or before it, when the restorer has removed the state dir with the record in it (flock
        cannot make the lock file there: exit 66)."""
        return (exited == FENCED_EXIT and REFUSAL in stderr) or \
            (exited == FLOCK_CANNOT_OPEN and f"cannot open lock file {self.lock}" in stderr)


def refusal_why(stderr: str) -> str:
    """Why the restorer took the session over, as the refusal read it from the record ("" when gone)."""
    m = _WHY.search(stderr)
    return m.group(1) if m else ""


def apply(host: Any, fence: Fence | None) -> None:
    """Fence every command ``host.run`` sends from now on (``None``: no more fencing)."""
    if hasattr(host, ATTR):
        setattr(host, ATTR, fence)


def fence_argv(*, record: str, lock: str, session_id: str, by: str, why: str = "",
               wait: float = FENCE_WAIT_S) -> list[str]:
    """The command that fences a dead session off from the controller's side (the host guard's own
    :func:`~workbench.hostguard.fence`, its script on stdin: :func:`script`); prints one JSON line."""
    return ["python3", "-", "--fence", "--id", session_id, "--record", record, "--inflight", lock, "--by", by,
            "--why", why, "--fence-wait", f"{wait:g}"]


def script() -> bytes:
    return (Path(__file__).parent / "hostguard.py").read_bytes()
