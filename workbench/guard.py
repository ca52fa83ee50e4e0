"""The guard: the host puts itself back when the session's controller is gone, with no later session.

A :class:`Guard` is armed by :class:`~workbench.session.HostSession` right after the first
record is written and before the first change.  It ships :mod:`workbench.hostguard` to the
host and starts it natively (the backend's ``guard_start_argv``: a transient systemd unit made
with ``systemd-run``, or a ``setsid`` process), then refreshes a heartbeat file on the host every
:data:`BEAT_S` seconds from a thread, through the session's lock holder
(:meth:`workbench.lock.HostLock.beat`: a line over the held channel, shell builtins on the host, no
new process or channel).  The guard on the host restores from the session's record (the record's
own undo steps) when either

* the session's lock is released without a restore: the controller was killed (SIGKILL,
  SIGTERM, a crash) or its SSH connection closed -- within :data:`POLL_S` seconds; or
* the heartbeat is older than :data:`STALE_S` seconds: a network partition, a power loss of
  the controller, sshd stopped -- the guard then ends the session's lock holder itself.

Before it restores, it fences the session's commands off (:mod:`workbench.inflight`): a command
still running on the host (the variant's install) gets :data:`FENCE_WAIT_S` seconds to end, then
its process group is ended; none can land after the restore.

The bound, from the moment the controller is gone: ``STALE_S + POLL_S`` seconds to notice at
worst, plus ``FENCE_WAIT_S`` (+ 2 s for TERM) when a command was in flight, then the restore (stop and remove the variant -- up to its ``TimeoutStopSec`` -- and
queue the base's start).  A session that ends normally restores itself, then disarms the guard.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import GuardError
from workbench.hosts import Host
from workbench.inflight import FENCE_WAIT_S, lock_path
from workbench.lock import HostLock
from workbench.services import Services

BEAT_S = 2.0  # how often the controller refreshes the heartbeat file
STALE_S = 20.0  # heartbeat age after which the guard takes over
POLL_S = 0.5  # how often the guard looks at the lock and the heartbeat (hostguard.POLL_S)
SCRIPT = "hostguard.py"
RECORD = "session.json"  # the session record, in the backend's state_dir


def bound_text(stale_s: float = STALE_S) -> str:
    return (f"within {POLL_S:g} s of the controller's SSH connection closing, or {stale_s:g} s after its last "
            f"heartbeat when the link is cut, plus up to {FENCE_WAIT_S + 2:g} s for a command it left running "
            "and the time to stop the variant")


@dataclass
class GuardPaths:
    """Where a session's guard keeps its files on the host."""

    state_dir: str
    session_id: str

    @property
    def name(self) -> str:
        return f"workbench-guard-{self.session_id[:12]}.service"

    @property
    def script(self) -> str:
        return f"{self.state_dir}/{SCRIPT}"

    @property
    def log(self) -> str:
        """The guard's log where it has no journal (the process backend's ``guard_start_argv``)."""
        return f"{self.state_dir}/{self.name}.log"

    @property
    def beat(self) -> str:
        return f"{self.state_dir}/guard-{self.session_id[:12]}.beat"


class Guard:
    """The controller's half: arm (start the host's guard), feed it heartbeats, disarm it."""

    def __init__(self, host: Host, svc: Services, *, session_id: str, record_path: str, lock: HostLock,
                 beat_s: float = BEAT_S, stale_s: float = STALE_S) -> None:
        self.host = host
        self.svc = svc
        self.paths = GuardPaths(svc.state_dir, session_id)
        self.record_path = record_path
        self.lock = lock  # the session's: the guard watches it, and the heartbeat goes through its holder
        self.beat_s = beat_s
        self.stale_s = stale_s
        self.armed = False
        self.last_beat = 0.0  # monotonic time of the last heartbeat the host acknowledged
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def info(self) -> dict[str, Any]:
        """What the session record says about its guard (shown by ``workbench status``)."""
        return {"name": self.paths.name, "beat": self.paths.beat, "beat_s": self.beat_s, "stale_s": self.stale_s,
                "armed": time.time()}

    def arm(self) -> None:
        """Start the guard on the host; raises if it cannot be started (nothing was changed yet)."""
        if self.armed:
            if self._thread is None:  # its heartbeat stopped for a restore: the session changes the host again
                self._start_beat()
            return
        self.host.put((Path(__file__).parent / SCRIPT).read_bytes(), self.paths.script, 0o755)
        self.host.run(["touch", "--", self.paths.beat], timeout=30, check=True)
        argv = ["python3", self.paths.script, "--id", self.paths.session_id, "--record", self.record_path,
                "--beat", self.paths.beat, "--lock", self.lock.path, "--owner", self.lock.owner_path,
                "--inflight", lock_path(self.svc.state_dir, self.paths.session_id), "--stale", f"{self.stale_s:g}",
                "--fence-wait", f"{FENCE_WAIT_S:g}"]
        res = self.host.run(self.svc.guard_start_argv(self.paths.name, argv), timeout=30)
        if not res.ok:
            raise GuardError(f"{self.host.name}: cannot arm the guard ({self.paths.name}; it needs python3 and "
                             f"systemd-run or setsid on the host): {res.tail(3)}; nothing was changed",
                             host=self.host.name, result=res)
        self.armed = True
        self._start_beat()

    def _start_beat(self) -> None:
        self.last_beat = time.monotonic()
        self._stop.clear()
        self._thread = threading.Thread(target=self._feed, daemon=True, name=f"guard-beat-{self.host.name}")
        self._thread.start()

    def _feed(self) -> None:
        reopen = True  # the file was (re)made by arm(): the holder opens it again
        while not self._stop.wait(self.beat_s):
            try:
                if self.lock.beat(self.paths.beat, self.beat_s * 3, reopen=reopen):
                    self.last_beat = time.monotonic()
                    reopen = False
            except Exception:  # a stall: the guard takes over once the beat is stale
                continue

    @property
    def silent_for(self) -> float:
        """Seconds since the host last acknowledged a heartbeat (0 when not armed)."""
        return time.monotonic() - self.last_beat if self.armed else 0.0

    @property
    def took_over(self) -> bool:
        """Whether the guard on the host may have started restoring (the heartbeat went stale)."""
        return self.armed and self.silent_for > self.stale_s

    def stop_beat(self) -> None:
        """Stop feeding the heartbeat and wait for its last beat (landed or timed out): after this the
        session's lock stream has no other reader."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.beat_s * 3 + 5)
            self._thread = None

    def disarm(self) -> None:
        """Stop the heartbeat and the guard (after the session's own restore)."""
        self.stop_beat()
        if not self.armed:
            return
        self.host.run(self.svc.guard_stop_argv(self.paths.name), timeout=30, check=True)
        # Nothing of the guard stays behind a session that ended normally.
        self.host.run(["rm", "-f", "--", self.paths.beat, self.paths.script, self.paths.log], timeout=30)
        self.armed = False

    def abandon(self) -> None:
        """Stop feeding the heartbeat, leave the guard armed: it restores the host."""
        self._stop.set()


def session_state(host: Host, svc: Services) -> dict[str, Any] | None:
    """The session on ``host`` as its files say: guarded (controller alive), abandoned, or restoring.

    One round trip: the record, the lock's owner file, the heartbeat's age, the guard's liveness."""
    path = f"{svc.state_dir}/{RECORD}"
    res = host.run(["cat", "--", path], timeout=30)
    if not res.ok:
        return None
    try:
        record = dict(json.loads(res.stdout))
    except ValueError:
        return {"state": "unreadable", "record": path}
    guard = dict(record.get("guard") or {})
    out: dict[str, Any] = {"record": path, "id": record.get("id", ""), "owner": record.get("owner", {}),
                           "created": record.get("created", []), "units": sorted(record.get("snapshots", {})),
                           "guard": guard.get("name", ""), "beat_age": None, "guard_alive": False}
    if guard.get("fired"):
        out["state"] = "abandoned"
        out["why"] = f"the guard ran at {time.strftime('%H:%M:%S', time.localtime(guard['fired']))} and could " \
                     f"not finish: {'; '.join(guard.get('problems', []))}"
        return out
    if guard.get("name"):
        age = host.run(["sh", "-c", 'echo $(( $(date +%s) - $(stat -c %Y "$1") ))', "age", guard["beat"]], timeout=30)
        out["beat_age"] = float(age.stdout.strip()) if age.ok and age.stdout.strip().lstrip("-").isdigit() else None
        out["guard_alive"] = host.run(svc.guard_alive_argv(guard["name"]), timeout=30).ok
    fresh = out["beat_age"] is not None and out["beat_age"] <= float(guard.get("stale_s", STALE_S))
    if out["guard_alive"] and fresh:
        out["state"] = "guarded"
    elif out["guard_alive"]:
        out["state"] = "restoring"
    else:
        out["state"] = "abandoned"
        out["why"] = "no live controller and no guard" if guard.get("name") else "recorded before guards existed"
    return out


def describe(host_name: str, st: dict[str, Any]) -> str:
    """One paragraph for ``workbench status``."""
    owner = st.get("owner") or {}
    who = f"{owner.get('user', '?')}@{owner.get('machine', '?')} pid {owner.get('pid', '?')}, " \
          f"{owner.get('purpose') or 'no purpose'}, since {owner.get('since', '?')}"
    changes = ", ".join(st.get("created") or []) or "no variant"
    if st["state"] == "guarded":
        return (f"session: GUARDED ({who}); changes: {changes}; heartbeat {st['beat_age']:.0f} s ago; "
                f"guard {st['guard']} restores the host if the controller goes away")
    if st["state"] == "restoring":
        return f"session: CONTROLLER GONE ({who}); guard {st['guard']} is restoring the host ({changes})"
    return (f"session: ABANDONED ({who}); changes: {changes}; {st.get('why', '')}. "
            f"Run `workbench restore {host_name}` (it says what it does).")
