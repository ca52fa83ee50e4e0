"""Watching a start: ready, failed (and in which phase), or timed out — as it happens.

Readiness = the health endpoint answers 200 while the unit is active under the
same ``InvocationID`` it got when we started it, and the port's listener descends from
the unit's server (the backend's ``server_roots``): a port taken meanwhile by another
process that answers 200 is not this start's readiness.  Failure = ``failed``,
``auto-restart``, a higher ``NRestarts``, a changed ``InvocationID``, or the main
process gone.  The watch is event-driven: it follows the unit's journal (or the
process backend's log) and re-checks the unit the moment PID 1 reports an exit
or the server reports it is up; between events it re-checks at most every
``poll`` seconds (default 0.5 s), which bounds detection when a log line is
lost.  Every server line also feeds a :class:`~workbench.phases.PhaseTracker`,
so the outcome carries the phase timeline and the phase a failed start died in.

A server that logged a failure before it was ready and then neither exits nor logs anything for
``hang_grace`` seconds (default :data:`HANG_GRACE_S`) has failed too: hung after the failure, as
SGLang's launcher can when a rank dies and its teardown stalls.  The verdict says so; the caller
stops the unit as after any failed start.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from workbench.errors import ServiceError, Stopped
from workbench.hosts import Host, LineStream
from workbench.inputs import check_timeout
from workbench.journal import MSG_UNIT_FAILED, MSG_UNIT_PROCESS_EXIT, TERMINAL_MESSAGE_IDS, Entry
from workbench.phases import PhaseTracker, PhaseTransition
from workbench.services import Services, exec_argv
from workbench.services.base import server_port as server_port  # re-exported: its home was here
from workbench.systemd import UnitStatus

HEALTH_PATHS = ("/health", "/health_generate", "/v1/models")
# PID 1 messages that mean the invocation's main process has ended.
FINAL_MESSAGE_IDS = {MSG_UNIT_PROCESS_EXIT, MSG_UNIT_FAILED}
# Silence after a failure line, with the server still running and not ready: hung, so failed.
# Long enough for a launcher's own teardown (SGLang waits a few seconds for its ranks) on a loaded
# host; a server that keeps logging after a failure is never judged by it.
HANG_GRACE_S = 60.0


class PortInUse(ServiceError):
    """The server's port is taken: a health check could answer for someone else."""


@dataclass(frozen=True)
class PhaseEvent:
    phase: str
    at: datetime | None
    seconds: float | None  # since the start was requested
    line: str


@dataclass
class Outcome:
    """How one start ended."""

    unit: str
    outcome: str  # "ready" | "failed" | "timeout"
    phase: str  # the phase reached ("serving" when ready) or the one it died in
    invocation_id: str
    seconds: float  # from the start request to the verdict
    reason: str
    status: UnitStatus | None = None
    timeline: list[PhaseEvent] = field(default_factory=list)
    cursor: str = ""  # journal position before the start (for retrieval)
    exit_usec: int | None = None  # journal time of the exit, when there was one
    detected_usec: int | None = None  # wall time when the watch knew
    tail: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.outcome == "ready"

    @property
    def detection_latency(self) -> float | None:
        """Seconds from the journal's exit record to the watch's verdict (failures only)."""
        if self.exit_usec is None or self.detected_usec is None:
            return None
        return (self.detected_usec - self.exit_usec) / 1e6

    def describe(self) -> str:
        return f"{self.unit}: {self.outcome.upper()} in {self.phase} after {self.seconds:.1f} s ({self.reason})"


class _Health:
    """HTTP health checks through the host's tunnel."""

    def __init__(self, base_url: str, path: str, timeout: float) -> None:
        self.client = httpx.Client(base_url=base_url, timeout=timeout)
        self.path = path
        self.last: str = "not checked"

    def ok(self) -> bool:
        try:
            r = self.client.get(self.path)
        except httpx.HTTPError as exc:
            self.last = type(exc).__name__
            return False
        self.last = f"{self.path} {r.status_code}"
        return r.status_code == 200

    def close(self) -> None:
        self.client.close()


@dataclass(frozen=True)
class Listener:
    """A process listening on a port, as the host sees it."""

    pid: int | None  # None: ``ss`` showed a listener it could not name
    chain: tuple[int, ...] = ()  # the process, its parent, ... (PID 1 left out)
    unit: str = ""  # the systemd service of its cgroup ('' when none)

    def describe(self) -> str:
        return f"pid {self.pid} ({self.unit or 'no unit'})" if self.pid else "an unknown process"


def port_listeners(host: Host, port: int) -> list[Listener]:
    """Who listens on TCP ``port`` on the host (``ss``), each with its ancestry and its unit."""
    res = host.run(["sh", "-c", 'ss -Htlnp "sport = :$1" 2>/dev/null; for p in $(ss -Htlnp "sport = :$1" 2>/dev/null '
                    "| grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do c=$p; q=$p; while :; do "
                    "q=$(sed 's/.*) //' /proc/$q/stat 2>/dev/null | cut -d' ' -f2); "
                    '[ -n "$q" ] && [ "$q" -gt 1 ] || break; c="$c,$q"; done; '
                    'echo "@@ $p $c $(grep -o \'[^/]*\\.service\' /proc/$p/cgroup 2>/dev/null | tail -n1)"; done',
                    "ports", str(port)], timeout=30)
    out = []
    for line in res.stdout.splitlines():
        if line.startswith("@@ ") and len(words := line[3:].split()) >= 2 and words[0].isdigit():
            chain = tuple(int(p) for p in words[1].split(",") if p.isdigit())
            out.append(Listener(int(words[0]), chain, words[2] if len(words) > 2 else ""))
    if not out and any("LISTEN" in line for line in res.stdout.splitlines()):
        out = [Listener(None)]
    return out


def port_holders(host: Host, port: int) -> list[str]:
    """Who listens on TCP ``port`` on the host, as "pid N (unit)" strings; empty when free."""
    return [x.describe() for x in port_listeners(host, port)]


def foreign_listeners(svc: Services, unit: str, port: int, st: UnitStatus, argv: list[str]) -> list[Listener]:
    """The listeners on ``port`` that are not the running ``unit``'s server: none below the
    backend's server roots, and not in the unit's own cgroup.  Empty when the roots are not known."""
    roots = svc.server_roots(unit, st, argv)
    if not roots:
        return []
    return [x for x in port_listeners(svc.host, port)
            if x.pid is not None and not roots.intersection(x.chain) and x.unit != unit]


def _failed(before: UnitStatus, st: UnitStatus, invocation: str | None) -> str | None:
    """Why the unit's state means the start failed, or None."""
    if st.missing:
        return f"unit {st.load_state}"
    if st.sub_state == "auto-restart":
        step = f", status={st.exit_label}" if st.exec_step else ""
        return f"auto-restart after {st.result or 'failure'}{step}"
    if st.active_state == "failed":
        how = f"killed by signal {st.exit_status}" if st.exit_code == "killed" else f"exit status {st.exit_label}"
        return f"failed ({st.result}, {how})"
    if st.n_restarts > before.n_restarts:
        return f"restarted ({st.n_restarts - before.n_restarts}x)"
    if invocation and st.invocation_id and st.invocation_id != invocation:
        return "invocation changed (restarted)"
    if st.active_state in ("inactive", "deactivating"):
        return f"exited ({st.result or 'dead'})"
    return None


def _foreign(entry: Entry, invocation: str | None) -> bool:
    """A line another start of the unit wrote (the backend stamped it with another invocation)."""
    return bool(entry.invocation and invocation and entry.invocation != invocation)


def unit_port(svc: Services, unit: str, argv: list[str]) -> int:
    """The port on the host that reaches the server: its flags' port, through the backend's
    mapping where it has one (a container's published port)."""
    return svc.host_port(unit, argv)


# systemd failed the start in its own exec step before the command ran: a known race of systemd in
# containers, the unit's cgroup gone while the child joins it (systemd/systemd#20939).  Nothing of the
# server ran, so the start is not the server's verdict: it is asked for once more.
NOT_RUN_STEPS = frozenset({"CGROUP"})


def watch_start(svc: Services, unit: str, *, start: bool = True, **kw: Any) -> Outcome:
    """Start ``unit`` (unless ``start=False``) and follow it until it is ready, failed, or ``timeout``
    (keywords: :func:`_watch_once`'s).  A start that systemd failed before the command ran
    (:data:`NOT_RUN_STEPS`, status ``219/CGROUP``) is started once more, and the reason says so."""
    out = _watch_once(svc, unit, start=start, **kw)
    if start and out.outcome == "failed" and out.status is not None and out.status.exec_step in NOT_RUN_STEPS:
        first = out.status.exit_label
        if out.status.sub_state == "auto-restart":
            # The unit's own Restart= retry is pending: a start now would wait for its timer and be
            # that retry (NRestarts + 1, judged "restarted").  Cancelled, the second start is ours.
            svc.stop(unit)
        out = _watch_once(svc, unit, start=True, **kw)
        out.reason += f" (started a second time: systemd failed the first start {first} before its command ran)"
    return out


def _watch_once(
    svc: Services,
    unit: str,
    *,
    timeout: float = 900.0,
    health_path: str = "/health",
    port: int | None = None,
    poll: float = 0.5,
    start: bool = True,
    on_event: Callable[[PhaseEvent], None] | None = None,
    on_line: Callable[[Entry], None] | None = None,
    unit_text: str | None = None,
    hang_grace: float = HANG_GRACE_S,
    stop: threading.Event | None = None,
) -> Outcome:
    """One start of ``unit`` (or, ``start=False``, one that was asked for), followed to its verdict.
    ``stop``: once set, the watch raises :class:`~workbench.errors.Stopped` within ``poll`` seconds (the
    unit left as it is, for the caller's session to restore, as after a Ctrl-C)."""
    timeout = check_timeout(timeout)
    hang_grace = check_timeout(hang_grace, "hang_grace")
    if health_path not in HEALTH_PATHS and not health_path.startswith("/"):
        raise ServiceError(f"health path must start with '/': {health_path!r}")
    host = svc.host
    argv = exec_argv(unit_text if unit_text is not None else svc.unit_text(unit), unit)
    port = port or unit_port(svc, unit, argv)
    # Three reads before the start, on channels of their own at once (one round trip's wait, not
    # three): the unit's state, who holds the port (judged only if the unit is to be started), and
    # the journal position the watch follows from.
    with ThreadPoolExecutor(2, thread_name_prefix="watch-pre") as pool:  # its exit waits for both
        holders_f = pool.submit(port_holders, host, port) if start else None
        cursor_f = pool.submit(svc.cursor)
        before = svc.status(unit)
    if start and not before.running and holders_f is not None:
        holders = holders_f.result()  # raises what port_holders raised
        if holders:
            raise PortInUse(f"{host.name}: port {port} is already in use by {', '.join(holders)}; "
                            f"not starting {unit}", host=host.name, unit=unit)
    cursor = cursor_f.result()
    tracker = PhaseTracker()
    timeline: list[PhaseEvent] = []
    tail: list[str] = []
    started = time.monotonic()
    stream = svc.follow(unit, cursor)
    exit_usec: int | None = None
    cursor_usec = int(cursor[1:]) if cursor.startswith("@") else 0

    def enter(tr: PhaseTransition) -> None:
        """A phase the log entered: on the timeline and to ``on_event``, live or after the verdict."""
        ev = PhaseEvent(tr.phase, tr.started_at, time.monotonic() - started, tr.line)
        timeline.append(ev)
        if on_event:
            on_event(ev)

    with contextlib.ExitStack() as stack:
        stack.callback(stream.close)
        local_port = stack.enter_context(host.tunnel(port))
        health = _Health(f"http://127.0.0.1:{local_port}", health_path, timeout=max(poll * 4, 2.0))
        stack.callback(health.close)
        # A start gets a new InvocationID; until the unit shows one we judge nothing
        # (right after ``start --no-block`` systemctl may still report the old state).
        invocation: str | None
        if start and not before.running:
            st = svc.start(unit)
            invocation = st.invocation_id if st.invocation_id and st.invocation_id != before.invocation_id else None
        else:
            invocation = before.invocation_id
        http_up = False
        last_check = 0.0
        last_line = time.monotonic()  # when the server last logged a line

        def verdict(outcome: str, reason: str, st: UnitStatus | None, detected: int | None = None) -> Outcome:
            nonlocal exit_usec
            detected = detected or int(time.time() * 1e6)
            seconds = time.monotonic() - started
            if outcome == "failed":
                exit_usec = _drain(stream, svc, unit, invocation, tail, tracker, exit_usec, on_phase=enter,
                                   caught_up_usec=detected)
            phase = "serving" if outcome == "ready" else (tracker.failure.phase if tracker.failure else tracker.phase)
            if outcome == "ready" and (not timeline or timeline[-1].phase != "serving"):
                timeline.append(PhaseEvent("serving", None, seconds, reason))
            return Outcome(unit, outcome, phase, invocation or "", seconds, reason, st, timeline,
                           cursor, exit_usec, detected, tail[-200:])

        while True:
            if stop is not None and stop.is_set():
                raise Stopped(f"{host.name}: the watch of {unit}'s start was stopped")
            if time.monotonic() - started > timeout:
                return verdict("timeout", f"neither ready nor failed within {timeout:.0f} s ({health.last})",
                               svc.status(unit))
            try:
                line = stream.readline(timeout=poll)
            except EOFError:  # the follower ended (journald restarted?): resume from the cursor
                line = None
                stream = svc.follow(unit, cursor)
                stack.callback(stream.close)
            check = time.monotonic() - last_check >= poll
            entry = svc.parse_entry(line, unit) if line is not None else None
            if entry is not None and entry.usec > cursor_usec and not _foreign(entry, invocation):
                if on_line:
                    on_line(entry)
                if entry.manager:
                    if entry.message_id in TERMINAL_MESSAGE_IDS and (entry.invocation == invocation or (
                            invocation and not entry.invocation)):
                        exit_usec = exit_usec or entry.usec
                        check = True
                        command = str((entry.fields or {}).get("COMMAND", "ExecStart"))
                        if invocation and entry.invocation == invocation and entry.message_id in FINAL_MESSAGE_IDS \
                                and command == "ExecStart":  # not an ExecStartPre/ExecStop helper ending
                            # PID 1 says this very invocation's main process is gone: a server that
                            # exits has failed, whatever its status.  Judge now, read the status after.
                            detected = int(time.time() * 1e6)
                            st = svc.status(unit)
                            return verdict("failed", _failed(before, st, invocation)
                                           or f"exited ({entry.message})", st, detected)
                else:
                    last_line = time.monotonic()
                    tail.append(entry.message)
                    tr = tracker.feed(entry.message, entry.time)
                    if tr is not None:
                        enter(tr)
                        if tr.phase in ("warmup", "serving"):
                            http_up = True
                            check = True
            if not check:
                continue
            last_check = time.monotonic()
            st = svc.status(unit)
            if invocation is None:
                if not st.invocation_id or st.invocation_id == before.invocation_id:
                    continue  # the start job has not run yet
                invocation = st.invocation_id
            why = _failed(before, st, invocation)
            if why:
                return verdict("failed", why, st)
            quiet = last_check - last_line
            if tracker.failure is not None and not tracker.ready and quiet >= hang_grace:
                return verdict("failed", f"hung after a failure in {tracker.failure.phase}: nothing logged for "
                               f"{quiet:.0f} s and the server still runs ({st.active_state}/{st.sub_state})", st)
            if st.active_state == "active" and (http_up or last_check - started > 2) and health.ok():
                st2 = svc.status(unit)
                if st2.active_state == "active" and st2.invocation_id == invocation:
                    # The answer must come from this start's server, not another process that took
                    # the port meanwhile (the port was free when the start was asked for).
                    others = foreign_listeners(svc, unit, port, st2, argv)
                    if not others:
                        return verdict("ready", f"{health.last} under invocation {invocation[:8]}", st2)
                    health.last = (f"port {port} answered by {', '.join(x.describe() for x in others)}, "
                                   f"not by {unit}")

        raise AssertionError("unreachable")


CAUGHT_UP_SLACK_US = 500_000  # a line logged this close to the moment the failure was seen: caught up


def _drain(stream: LineStream, svc: Services, unit: str, invocation: str | None, tail: list[str],
           tracker: PhaseTracker, exit_usec: int | None, grace: float = 1.5, cap: float = 15.0,
           on_phase: Callable[[PhaseTransition], None] | None = None,
           caught_up_usec: int | None = None) -> int | None:
    """After a failure: read what the unit still logged (the rest of its traceback) until PID 1's
    verdict about the invocation arrives, or the stream has been quiet for ``grace`` seconds once it
    has delivered lines logged at ``caught_up_usec`` (when the failure was seen; until then it is
    known to be behind), or ``cap`` seconds pass.  A stream behind the unit's state -- a loaded
    host, output relayed by a container runtime in bursts -- keeps delivering lines well after
    the state said "exited", with pauses longer than ``grace``.
    Phases those late lines enter go to ``on_phase`` (the timeline must not lose them: journald can
    deliver a process's last lines after PID 1's exit record)."""
    end = time.monotonic() + cap
    behind = caught_up_usec is not None
    deadline = end if behind else min(end, time.monotonic() + grace)
    while time.monotonic() < deadline:
        try:
            line = stream.readline(timeout=max(0.0, deadline - time.monotonic()))
        except EOFError:
            break
        entry = svc.parse_entry(line, unit) if line is not None else None
        if entry is not None and behind and entry.usec >= int(caught_up_usec or 0) - CAUGHT_UP_SLACK_US:
            behind = False
        if line is not None:
            deadline = end if behind else min(end, time.monotonic() + grace)
        if entry is None:
            continue
        if entry.manager:
            if entry.invocation in (None, "", invocation) and entry.message_id in TERMINAL_MESSAGE_IDS:
                exit_usec = exit_usec or entry.usec
                if entry.message_id != MSG_UNIT_PROCESS_EXIT:
                    break
            continue
        if _foreign(entry, invocation):
            continue
        tail.append(entry.message)
        tr = tracker.feed(entry.message, entry.time)
        if tr is not None and on_phase is not None:
            on_phase(tr)
    return exit_usec
