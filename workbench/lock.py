"""A per-host lock held over an open channel: released the moment its holder dies.

``flock -n`` on a file in ``/run/lock`` (tmpfs: gone at reboot), then a reader of the channel's
stdin; when the holder releases the lock, is killed, or its SSH link drops, the reader sees EOF
and exits, the file is removed (still locked: a waiter that locked the removed file sees it is
gone and tries the new one) and the kernel frees the lock.
Owner details for whoever is refused go to a side file, written by the holder, with the
holder's PID on the host (the reader), which the session's guard ends when the heartbeat stops.

The reader is also the session's heartbeat (:meth:`HostLock.beat`): each line the controller
sends over the held channel appends a byte to the heartbeat file with shell builtins only, so a
beat starts no process on the host -- a host too loaded to fork (or to open a new SSH channel)
still gets its beats, as long as the channel's bytes get through.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from workbench.errors import LockHeld, WorkbenchError
from workbench.hosts import Host, LineStream

LOCK_DIR = "/run/lock"
HELD_EXIT = 75


# $1 the lock file, $2 flock's -n or -w SECONDS.  The lock is taken on fd 9 and checked to still be
# the file at the path (a holder unlinks it on its way out, so a waiter may have locked a file that
# is gone: it tries again on the new one).  Then a reader of stdin (a subshell: builtins only)
# holds it while stdin is open, and its PID is printed (the one the guard ends when the heartbeat
# stops); once it ends, the file is removed, still locked, so no lock file stays behind a session.
# The reader takes a line naming a file (``/...``) as the heartbeat file -- opened for appending
# if it exists, never created, so a beat late after the session removed it cannot bring it back --
# and any other line as a beat: a byte appended to that file (its mtime is what the guard reads),
# answered ``ok``, or ``no`` when no heartbeat file is open.
_HOLD = r"""
p=$1; shift
exec 8<&0
while :; do
  exec 9>>"$p" || exit 1
  flock "$@" -E 75 9 || exit 75
  [ "$(stat -L -c %d:%i /proc/self/fd/9)" = "$(stat -c %d:%i -- "$p" 2>/dev/null)" ] && break
  exec 9>&-
done
while IFS= read -r l; do
  case $l in
    /*) exec 3>&-; [ -f "$l" ] && [ -w "$l" ] && exec 3>>"$l" ;;
    *) if printf . >&3; then echo ok; else echo no; fi ;;
  esac
done <&8 2>/dev/null &
c=$!
echo "LOCKED $c"
wait "$c"
rm -f -- "$p"
"""


def lock_argv(path: str, wait: float = 0) -> list[str]:
    """``flock`` that fails at once (``wait=0``) or waits on the host, then holds while stdin is open;
    the lock file is removed when the holder lets go."""
    how = ["-w", f"{wait:g}"] if wait > 0 else ["-n"]
    return ["sh", "-c", _HOLD, "lock", path, *how]


@dataclass
class HostLock:
    """``with HostLock(host, purpose="bisect"):`` — refused (``LockHeld``, with the holder's details)
    if someone holds it, at once or after ``wait`` seconds."""

    host: Host
    name: str = "workbench"
    purpose: str = ""
    timeout: float = 15.0
    wait: float = 0.0  # seconds to wait for a holder to let go (0: refuse at once)
    lock_dir: str = LOCK_DIR
    _stream: LineStream | None = None
    owner_info: dict[str, Any] | None = None
    _unacked: int = 0  # beats sent that the holder has not answered yet
    _beat_path: str = ""  # the heartbeat file the holder has open

    @property
    def path(self) -> str:
        return f"{self.lock_dir}/{self.name}.lock"

    @property
    def owner_path(self) -> str:
        return f"{self.lock_dir}/{self.name}.owner.json"

    def owner(self) -> dict[str, Any]:
        res = self.host.run(["cat", "--", self.owner_path], timeout=self.timeout)
        try:
            return dict(json.loads(res.stdout)) if res.ok else {}
        except ValueError:
            return {}

    def acquire(self) -> HostLock:
        self.host.run(["mkdir", "-p", "--", self.lock_dir], timeout=self.timeout, check=True)
        stream = self.host.stream(lock_argv(self.path, self.wait), tether=False)
        deadline = time.monotonic() + self.timeout + self.wait
        while True:
            try:
                line = stream.readline(timeout=max(0.0, deadline - time.monotonic()))
            except EOFError:
                if stream.exit_status == HELD_EXIT:
                    owner = self.owner()
                    who = ", ".join(f"{k}={v}" for k, v in owner.items()) or "unknown holder"
                    raise LockHeld(f"{self.host.name} is locked by another session ({who})",
                                   host=self.host.name, owner=owner) from None
                raise WorkbenchError(f"{self.host.name}: could not take the lock (exit {stream.exit_status}); "
                                     "is flock (util-linux) installed?") from None
            if line is None:
                stream.close()
                raise WorkbenchError(f"{self.host.name}: no answer while taking the lock within {self.timeout:.0f} s")
            word, _, pid = line.strip().partition(" ")
            if word == "LOCKED":
                break
        self._stream, self._unacked, self._beat_path = stream, 0, ""
        owner = {"user": getpass.getuser(), "machine": socket.gethostname(), "pid": os.getpid(),
                 "since": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "purpose": self.purpose,
                 "host_pid": int(pid) if pid.isdigit() else None}  # the holder on the host (the guard ends it)
        self.host.put(json.dumps(owner).encode(), self.owner_path)
        self.owner_info = owner
        return self

    def beat(self, path: str, timeout: float, *, reopen: bool = False) -> bool:
        """One heartbeat through the holder: it appends a byte to ``path`` (opened again when ``reopen``,
        or on the first beat) with shell builtins only, and answers.  True once every beat sent so far
        has been answered within ``timeout`` seconds and the last answer says the byte was written (a
        beat answered late is counted, not mistaken for this one); False if not, or if the lock is not
        held."""
        stream = self._stream
        if stream is None or stream.finished:
            return False
        try:
            if reopen or path != self._beat_path:
                stream.write(f"{path}\n".encode())
                self._beat_path = path
            stream.write(b"b\n")
        except (OSError, EOFError):  # the holder is gone (the guard ended it) and its stream with it
            return False
        self._unacked += 1
        deadline = time.monotonic() + timeout
        written = False
        while self._unacked:
            try:
                line = stream.readline(timeout=max(0.0, deadline - time.monotonic()))
            except EOFError:
                return False
            if line is None:
                return False
            if line.strip() in ("ok", "no"):
                self._unacked -= 1
                written = line.strip() == "ok"
        return written

    def release(self) -> None:
        if self._stream is not None:
            self.host.run(["rm", "-f", "--", self.owner_path], timeout=self.timeout)
            self._stream.close()
            self._stream = None
            self._unacked, self._beat_path = 0, ""

    @property
    def held(self) -> bool:
        return self._stream is not None and not self._stream.finished

    def __enter__(self) -> HostLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
