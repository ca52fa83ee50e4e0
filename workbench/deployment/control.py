"""Status, ordered start/stop and the judged start of a deployment; variants on every node.

A start is judged as a whole: ready when the head serves; failed as soon as any node's process
exits, or when a node has not joined the rendezvous within the deployment's ``join_timeout``.
Variants go through one :class:`~workbench.session.HostSession` per node, so each node is
locked, recorded and restored by the same code as a single-host trial.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from workbench.deployment.clock import measure_offsets
from workbench.deployment.flags import check_edits, check_topology, differences
from workbench.deployment.journals import NodeFailure, node_failures, read_nodes
from workbench.deployment.model import Deployment, Node
from workbench.deployment.topology import RENDEZVOUS_BEGIN, RENDEZVOUS_JOINED
from workbench.errors import WorkbenchError
from workbench.hosts import Host
from workbench.journal.read import read as read_journal
from workbench.services import Services, services_for
from workbench.services.base import exec_argv
from workbench.session import HostSession
from workbench.systemd import UnitStatus
from workbench.variants import EditValue
from workbench.watch import NOT_RUN_STEPS, Outcome, PhaseEvent, watch_start

POLL_S = 0.5


@dataclass(frozen=True)
class NodeState:
    node: Node
    status: UnitStatus

    def row(self) -> dict[str, object]:
        st = self.status
        return {"node": self.node.label, "host": self.node.host, "unit": st.unit, "state": st.active_state,
                "sub": st.sub_state, "pid": st.main_pid, "result": st.result, "exit": st.exit_status}


@dataclass(frozen=True)
class DeploymentStatus:
    deployment: Deployment
    nodes: tuple[NodeState, ...]

    @property
    def overall(self) -> str:
        """``running`` (every node), ``stopped`` (none), ``degraded`` (some: not a working server)."""
        running = [n.status.running for n in self.nodes]
        return "running" if all(running) else "stopped" if not any(running) else "degraded"

    def rows(self) -> list[dict[str, object]]:
        return [n.row() for n in self.nodes]


@dataclass
class DeploymentOutcome:
    """How one start of the whole deployment ended."""

    deployment: str
    outcome: str  # "ready" | "failed" | "timeout"
    failed_node: str | None
    reason: str
    seconds: float
    head: Outcome | None = None
    units: dict[str, str] = field(default_factory=dict)  # node label -> unit that ran
    final: dict[str, UnitStatus] = field(default_factory=dict)
    not_joined: tuple[str, ...] = ()
    phase: str = ""  # the last phase the head reached (``serving`` when ready)
    flag_differences: dict[str, dict[str, Any]] = field(default_factory=dict)  # flag -> {node: value}

    @property
    def ok(self) -> bool:
        return self.outcome == "ready"

    def describe(self) -> str:
        where = f" ({self.failed_node})" if self.failed_node else ""
        return f"{self.deployment}: {self.outcome.upper()}{where} after {self.seconds:.1f} s: {self.reason}"


def _svcs(dep: Deployment, hosts: Mapping[str, Host | Services]) -> dict[str, Services]:
    out: dict[str, Services] = {}
    for n in dep.nodes:
        h = hosts[n.host]
        out[n.label] = cast(Services, h) if hasattr(h, "follow") else services_for(cast(Host, h))
    return out


def status(dep: Deployment, hosts: Mapping[str, Host | Services]) -> DeploymentStatus:
    svcs = _svcs(dep, hosts)
    return DeploymentStatus(dep, tuple(NodeState(n, svcs[n.label].status(n.unit)) for n in dep.nodes))


def preflight(dep: Deployment, hosts: Mapping[str, Host | Services], units: Mapping[str, str] | None = None,
              ) -> dict[str, list[str]]:
    """Every node's command line (of its service, or of ``units[label]``), read through the host's
    backend (a unit's ``ExecStart``, a container's command alike); a
    :class:`~workbench.errors.DeploymentMismatch` when a node's own flags (``--nnodes``, ``--node-rank``,
    the head's address, ...: :mod:`~workbench.deployment.topology`) do not fit the deployment.  Reads
    only: run it before any stop or start."""
    return _preflight(dep, _svcs(dep, hosts), units)


def _preflight(dep: Deployment, svcs: Mapping[str, Services], units: Mapping[str, str] | None) -> dict[str, list[str]]:
    names = {n.label: (units or {}).get(n.label, n.unit) for n in dep.nodes}
    argvs = {n.label: exec_argv(svcs[n.label].unit_text(names[n.label]), names[n.label]) for n in dep.nodes}
    check_topology(dep.name, [(n.label, n.host, n.rank) for n in dep.nodes], argvs)
    return argvs


def flag_differences(dep: Deployment, hosts: Mapping[str, Host | Services]) -> dict[str, dict[str, Any]]:
    """Flags that are not the same on every node (``--node-rank`` and friends aside): fix before starting.
    A command line that does not fit the deployment is refused first (:func:`preflight`)."""
    return differences(preflight(dep, hosts))


def stop(dep: Deployment, hosts: Mapping[str, Host | Services], units: Mapping[str, str] | None = None) -> None:
    """Stop every node, the head first."""
    _stop(dep, _svcs(dep, hosts), units)


def _stop(dep: Deployment, svcs: Mapping[str, Services], units: Mapping[str, str] | None) -> None:
    for n in dep.stop_order():
        svcs[n.label].stop((units or {}).get(n.label, n.unit))


def _rendezvous(svc: Services, unit: str) -> str:
    """``joined`` (passed the rendezvous), ``waiting`` (began it, never passed) or ``never`` (did not begin),
    from the unit's last invocation in the journal: what it logged, however late the lines arrived."""
    try:
        frame = read_journal(svc, unit, invocation="last", timeout=60)
    except WorkbenchError:  # no invocation at all: it never ran, so it never joined
        return "never"
    text = frame["message"].fillna("")
    if text.str.contains(RENDEZVOUS_JOINED).any():
        return "joined"
    return "waiting" if text.str.contains(RENDEZVOUS_BEGIN).any() else "never"


def _manager_says(svc: Services, st: UnitStatus) -> str:
    """The service manager's own words when it failed the unit before its command ran (203/EXEC):
    the last "Failed ..." line its exec child wrote (named "(command)" in the journal, as systemd names
    the forked child until it runs the command), else PID 1's, never "Failed with result" nor what it
    ignored.  A child that could not join the unit's cgroup (219/CGROUP) logs outside the unit: then
    nothing is quoted and the status names the step."""
    if not st.exec_step:
        return ""
    said = [e.message.split(": ", 1)[-1] for e in svc.tail_entries(st.unit, lines=50)
            if (e.manager or (e.identifier or "").startswith("(")) and "failed" in e.message.lower()
            and "failed with result" not in e.message.lower() and not e.message.endswith(", ignoring")
            and ", ignoring:" not in e.message]
    return f": {said[-1]}" if said else ""


def _first_real_failure(dep: Deployment, svcs: Mapping[str, Services], names: Mapping[str, str]) -> NodeFailure | None:
    """The earliest failure across the nodes' last invocations that is not a consequence of another's
    (a watchdog, a peer gone); None when there is none or a journal cannot be read."""
    try:
        frames = read_nodes(dep, svcs, names)
        # in each host's own clock: corrected by the offsets measured now (ClockOffset.correction)
        measured = measure_offsets({n.label: svcs[n.label].host for n in dep.nodes}, rounds=3)
        offsets = {label: o.correction for label, o in measured.items()}
    except WorkbenchError:
        return None
    real = [f for f in node_failures(frames, offsets) if not f.consequence]
    return real[0] if real else None


def _joined(svc: Services, unit: str) -> bool:
    return _rendezvous(svc, unit) == "joined"


def start(
    dep: Deployment,
    hosts: Mapping[str, Host | Services],
    units: Mapping[str, str] | None = None,
    *,
    timeout: float = 900.0,
    health_path: str = "/health",
    on_event: Callable[[PhaseEvent], None] | None = None,
) -> DeploymentOutcome:
    """Start every node (workers first, then the head) and judge the whole; a failed start is stopped.
    Command lines that cannot form the deployment are refused before any node starts (:func:`preflight`)."""
    svcs = _svcs(dep, hosts)
    names = {n.label: (units or {}).get(n.label, n.unit) for n in dep.nodes}
    diffs = differences(_preflight(dep, svcs, names))
    started = time.monotonic()
    for n in dep.workers:
        svcs[n.label].start(names[n.label])
    head = dep.head
    result: dict[str, Any] = {}
    phases: list[str] = []

    def on_head_event(ev: PhaseEvent) -> None:
        phases.append(ev.phase)
        if on_event is not None:
            on_event(ev)

    def watch_head() -> None:
        try:
            result["outcome"] = watch_start(svcs[head.label], names[head.label], timeout=timeout, port=dep.port,
                                            health_path=health_path, on_event=on_head_event)
        except BaseException as e:  # handed to the caller's thread below
            result["error"] = e

    thread = threading.Thread(target=watch_head, daemon=True, name=f"watch-{dep.name}")
    thread.start()
    verdict: tuple[str, str | None, str] | None = None
    not_joined: tuple[str, ...] = ()
    again: list[str] = []  # workers started a second time after systemd's own 219/CGROUP
    while thread.is_alive() and verdict is None:
        thread.join(POLL_S)
        for n in dep.workers:
            st = svcs[n.label].status(names[n.label])
            if not st.running and st.exec_step in NOT_RUN_STEPS and n.label not in again:
                # systemd failed to put the process in the unit's cgroup before the command ran, a known
                # race of systemd in containers (systemd/systemd#20939): nothing ran, so one more start
                again.append(n.label)
                svcs[n.label].start(names[n.label])
                continue
            if not st.running:
                verdict = ("failed", n.label, f"{n.host}: {names[n.label]} exited ({st.result}, "
                                              f"status={st.exit_label}){_manager_says(svcs[n.label], st)}")
                break
        joined_phase = any(p not in ("starting", "boot", "nccl_init") for p in phases)
        if verdict is None and not joined_phase and time.monotonic() - started > dep.join_timeout:
            not_joined = tuple(n.label for n in dep.workers if not _joined(svcs[n.label], names[n.label]))
            verdict = ("failed", not_joined[0] if not_joined else head.label,
                       f"not every node joined within {dep.join_timeout:.0f} s"
                       + (f": {', '.join(not_joined)} did not" if not_joined else ""))
    if verdict is not None:
        _stop(dep, svcs, names)
    thread.join(timeout + 60)
    if "error" in result:
        _stop(dep, svcs, names)
        raise result["error"]
    head_out: Outcome | None = result.get("outcome")
    if verdict is None:
        assert head_out is not None
        if head_out.ok:
            verdict = ("ready", None, head_out.reason)
        else:
            verdict = (head_out.outcome, head.label, head_out.describe())
            _stop(dep, svcs, names)
    phase = head_out.phase if head_out is not None else (phases[-1] if phases else "starting")
    outcome, failed, reason = verdict
    if outcome != "ready" and phase in ("startup_other", "unknown", "failed", "") and \
            _rendezvous(svcs[head.label], names[head.label]) == "waiting":
        # the live tracker can miss the rendezvous lines under load (they reach the journal after the
        # exit record); the head's whole journal says it never passed the rendezvous
        phase = "nccl_init"
    if outcome != "ready" and failed == head.label and not_joined == () and phase in ("starting", "boot", "nccl_init"):
        # the head gave up waiting at the rendezvous: the node to look at is the one that never joined
        not_joined = tuple(n.label for n in dep.workers if not _joined(svcs[n.label], names[n.label]))
        if not_joined:
            failed, reason = not_joined[0], f"{', '.join(not_joined)} did not join the rendezvous ({reason})"
    if outcome != "ready" and failed == head.label:
        # the head's process ended, but its engine may only have relayed another node's failure (vLLM's
        # executor fails the head as soon as a worker on node 1 raises): the first real failure across
        # the nodes' journals names the node
        first = _first_real_failure(dep, svcs, names)
        if first is not None and first.node != head.label:
            failed, reason = first.node, f"{first.node} failed first ({first.describe()}); {reason}"
    if outcome != "ready" and diffs:
        # nodes that disagree on a flag meet in different collectives: the node to fix is one that
        # differs from the head, whatever rank happened to time out first
        odd = next((n.label for n in dep.workers
                    if any(repr(v.get(n.label)) != repr(v.get(head.label)) for v in diffs.values())), failed)
        failed, reason = odd, f"flags differ between nodes ({describe_differences(diffs)}); {reason}"
    if again:
        reason += f" ({', '.join(again)} started a second time: systemd failed it 219/CGROUP before it ran)"
    final = {n.label: svcs[n.label].status(names[n.label]) for n in dep.nodes}
    return DeploymentOutcome(dep.name, outcome, failed, reason, time.monotonic() - started, head_out,
                             names, final, not_joined, phase, diffs)


def describe_differences(diffs: Mapping[str, Mapping[str, Any]]) -> str:
    """``--enable-nccl-nvls: node0=absent node1=True``, one flag after the other."""
    return "; ".join(f"{flag}: " + " ".join(f"{node}={'absent' if v is None else v}" for node, v in values.items())
                     for flag, values in diffs.items())


@dataclass
class DeploymentTrial:
    outcome: DeploymentOutcome
    variants: dict[str, str]  # node label -> variant unit
    edits: tuple[tuple[str, EditValue], ...]


class DeploymentSession:
    """One :class:`HostSession` per node: locked, recorded, restored per node whatever happens."""

    def __init__(self, dep: Deployment, hosts: Mapping[str, Host], *, purpose: str = "deployment",
                 ready_timeout: float = 900.0, make_room: Sequence[str] = (), lock_wait: float = 0.0) -> None:
        self.dep = dep
        # locks are taken in node order (head first) by every deployment session: no deadlock between two
        self.sessions = {n.label: HostSession(hosts[n.host], purpose=f"{purpose} {dep.name}",
                                              ready_timeout=ready_timeout, lock_wait=lock_wait) for n in dep.nodes}
        self.make_room = tuple(make_room)
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> DeploymentSession:
        # every node's command line read and checked before any node is locked, recorded or changed
        _preflight(self.dep, {label: s.svc for label, s in self.sessions.items()}, None)
        with contextlib.ExitStack() as stack:
            for label in (n.label for n in self.dep.nodes):
                stack.enter_context(self.sessions[label])
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()  # restores every node, the last-entered first; errors surface after all ran

    def _place(self, edits: tuple[tuple[str, EditValue], ...], env: dict[str, str | None] | None) -> dict[str, str]:
        """Record, place and verify the variant on every node, and stop the bases: nothing started yet."""
        names = {}
        for n in self.dep.nodes:
            s = self.sessions[n.label]
            s.make_room(self.make_room)
            snap = s.protect(n.unit)
            variant = s.variant(n.unit, list(edits), env)
            s.check_gpus(allow_units=(snap.unit, *s.record.created, variant.name))
            if variant.name not in s.record.created:
                s.record.created.append(variant.name)
                s._save()  # hook wanted in session.py: a public place_variant() doing these three steps
            s.svc.install_variant(variant)
            s.svc.stop_if_running(n.unit)
            names[n.label] = variant.name
        return names

    def start_base(self, *, timeout: float | None = None) -> DeploymentOutcome:
        """Start the deployment's own units (judged); the restore stops them again if they were stopped."""
        for n in self.dep.nodes:
            s = self.sessions[n.label]
            s.make_room(self.make_room)
            s.protect(n.unit)
        return start(self.dep, self.services_by_host(), timeout=timeout or 900.0)

    def services_by_host(self) -> dict[str, Host | Services]:
        return {n.host: self.sessions[n.label].svc for n in self.dep.nodes}

    def run_variant(self, edits: Mapping[str, EditValue] | Sequence[tuple[str, EditValue]],
                    env: dict[str, str | None] | None = None, *, timeout: float | None = None,
                    keep_serving: bool = False, health_path: str = "/health") -> DeploymentTrial:
        """The same edits on every node (node-specific flags refused), a judged start, then a stop."""
        norm = check_edits(edits)
        names = self._place(norm, env)
        svcs = {label: s.svc for label, s in self.sessions.items()}
        by_host = {n.host: svcs[n.label] for n in self.dep.nodes}
        out = start(self.dep, by_host, names, timeout=timeout or 900.0, health_path=health_path)
        if out.ok and not keep_serving:
            stop(self.dep, by_host, names)
        return DeploymentTrial(out, names, norm)

    @contextlib.contextmanager
    def serving(self, edits: Mapping[str, EditValue] | Sequence[tuple[str, EditValue]],
                env: dict[str, str | None] | None = None, *, timeout: float | None = None) -> Iterator[DeploymentTrial]:
        trial = self.run_variant(edits, env, timeout=timeout, keep_serving=True)
        try:
            yield trial
        finally:
            by_host = {n.host: self.sessions[n.label].svc for n in self.dep.nodes}
            stop(self.dep, by_host, trial.variants)
