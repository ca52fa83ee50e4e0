"""Runbook trials on a deployment: one trial is one judged start of the whole deployment.

:func:`trial_runner` is where a runbook given hosts and a base unit learns what it runs on:

- **a deployment** when the base unit is a deployment's unit and the hosts are exactly its nodes
  (``-p hosts '["gpu-a","gpu-b"]' -p base_unit sglang-k26-2node.service``): every trial edits every
  node the same way, starts the whole (workers first), is judged as a whole and stopped; each node is
  locked, recorded, guarded and restored by its own :class:`~workbench.session.HostSession`; the
  search runs one trial at a time (the deployment is one server);
- **a fleet** otherwise (``-p hosts`` of equal hosts, each running its own server):
  :class:`workbench.fleet.Fleet`, independent trials at once, one per host.

A base unit that is a deployment's unit with only some of its hosts (or with others) is refused
before any host is touched: started alone, a node waits at the rendezvous until its timeout.

Both runners have the same shape (:class:`TrialRunner`): ``with runner:``, ``run(subsets)`` ->
trial records in order, ``width``, ``reports`` (one per host; for a deployment every node's
report carries the fingerprint of all nodes, so a trial is reused from the ledger only while no
node changed), and ``equal_hosts`` (False for a deployment: its nodes' unit texts differ by
``--node-rank``).  A deployment's trial is recorded under the head's host name.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from workbench.deployment.control import DeploymentSession, DeploymentTrial
from workbench.deployment.journals import first_failure, read_nodes
from workbench.deployment.model import Deployment, default_path, load_deployments
from workbench.errors import ConfigError, DeploymentMismatch, WorkbenchError
from workbench.fleet import Fleet, HostReport, run_many
from workbench.hosts import Host
from workbench.inventory import require_known
from workbench.session import HostSession
from workbench.trials import TrialRecord, failure_phase, host_fingerprint, signature_of, unit_hash
from workbench.variants import EditValue, edits_key

Subset = tuple[tuple[str, EditValue], ...]
Setup = Callable[[HostSession, HostReport, str], None]


class TrialRunner(Protocol):
    reports: list[HostReport]
    spare_errors: list[BaseException]

    @property
    def width(self) -> int: ...

    def set_spares(self, source: Callable[[list[Subset]], Subset | None] | None) -> None:
        """Where an idle host gets a set to start beside a batch (None: nowhere)."""

    def take_spares(self, *, wait: bool = False) -> list[tuple[Subset, TrialRecord]]:
        """The spares finished since the last call (``wait``: and those still running)."""

    def __enter__(self) -> TrialRunner: ...

    def __exit__(self, *exc: object) -> None: ...

    def run(self, subsets: Sequence[Subset]) -> list[TrialRecord]: ...


def deployment_for(hosts: Sequence[str], base_unit: str, *, ssh_config: str | None = None,
                   path: str | None = None) -> Deployment | None:
    """The deployment whose nodes are exactly ``hosts`` running ``base_unit``; None when no deployment
    uses that unit (a fleet, or one host); a :class:`ConfigError` when one does on other hosts."""
    if path is None and default_path(ssh_config) is None:
        return None
    try:
        deps = load_deployments(path, ssh_config=ssh_config)
    except ConfigError:
        if len(hosts) > 1:
            raise
        return None  # a broken deployments file is no business of a one-host run
    unit = base_unit
    using = [d for d in deps.values() if d.uses(unit)]
    exact = [d for d in using if set(d.hosts) == set(hosts)]
    if len(exact) == 1:
        require_known(exact[0].hosts, ssh_config=ssh_config, what=f"deployment {exact[0].name}: ")
        return exact[0]
    if using:
        d = using[0]
        raise ConfigError(f"{unit} is deployment {d.name}'s unit on {', '.join(d.hosts)}: a trial starts the "
                          f"whole deployment, so give hosts {list(d.hosts)} (its nodes), not {list(hosts)}")
    return None


def trial_runner(hosts: Sequence[Host], base: str, *, ssh_config: str | None = None, purpose: str = "",
                 health_path: str = "/health", timeout: float = 900.0, lock_wait: float = 0.0,
                 setup: Setup | None = None) -> Fleet | DeploymentRunner:
    """A :class:`DeploymentRunner` when ``hosts`` + ``base`` are a deployment, else a :class:`Fleet`."""
    dep = deployment_for([h.name for h in hosts], base, ssh_config=ssh_config)
    if dep is None:
        return Fleet(hosts, base, purpose=purpose, health_path=health_path, timeout=timeout, lock_wait=lock_wait,
                     setup=setup)
    return DeploymentRunner(dep, {h.name: h for h in hosts}, purpose=purpose, health_path=health_path,
                            timeout=timeout, lock_wait=lock_wait, setup=setup)


class DeploymentRunner:
    """A whole deployment as the one 'host' of a search: one :class:`DeploymentSession`, one trial at a time."""

    equal_hosts = False

    def __init__(self, dep: Deployment, hosts: Mapping[str, Host], *, purpose: str = "",
                 health_path: str = "/health", timeout: float = 900.0, lock_wait: float = 0.0,
                 setup: Setup | None = None) -> None:
        missing = [h for h in dep.hosts if h not in hosts]
        if missing:
            raise ConfigError(f"deployment {dep.name}: no connection to {', '.join(missing)}")
        self.dep, self.hosts = dep, dict(hosts)
        self.health_path, self.timeout, self.setup = health_path, timeout, setup
        self.session = DeploymentSession(dep, self.hosts, purpose=purpose or "deployment trials",
                                         ready_timeout=timeout, lock_wait=lock_wait)
        self.reports = [HostReport(n.host) for n in dep.nodes]
        self.fingerprint = ""
        self.base_texts: dict[str, str] = {}
        self.offsets: dict[str, float] = {}
        self.spare_errors: list[BaseException] = []

    @property
    def width(self) -> int:
        return 1

    def set_spares(self, source: Callable[[list[Subset]], Subset | None] | None) -> None:
        """A deployment is one 'host' busy with every trial: it never idles beside a batch, so no spares."""

    def take_spares(self, *, wait: bool = False) -> list[tuple[Subset, TrialRecord]]:
        return []

    def __enter__(self) -> DeploymentRunner:
        from workbench.deployment.clock import measure_offsets

        self.session.__enter__()
        try:
            prints = []
            for n, report in zip(self.dep.nodes, self.reports, strict=True):
                s = self.session.sessions[n.label]
                text = s.base_text(n.unit)
                self.base_texts[n.label] = text
                report.fingerprint = host_fingerprint(s.host)
                prints.append(f"{n.label}={report.fingerprint}")
                if self.setup:
                    self.setup(s, report, text)
            self.fingerprint = hashlib.sha256("\n".join(prints).encode()).hexdigest()[:16]
            for report in self.reports:
                report.fingerprint = self.fingerprint  # reuse only while no node changed
            offsets = measure_offsets({n.label: self.hosts[n.host] for n in self.dep.nodes})
            self.offsets = {k: v.correction for k, v in offsets.items()}
        except BaseException as exc:
            self._close(type(exc), exc)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._close(*exc)

    def _close(self, *exc: Any) -> None:
        try:
            self.session.__exit__(*exc)
        except WorkbenchError as err:
            for report in self.reports:
                report.error = report.error or f"{type(err).__name__}: {err}"
            raise
        finally:
            for n, report in zip(self.dep.nodes, self.reports, strict=True):
                report.restored = self.session.sessions[n.label].restored

    def run(self, subsets: Sequence[Subset]) -> list[TrialRecord]:
        out = []
        for subset in subsets:
            out.append(self.trial(subset))
            for report in self.reports:
                report.trials += 1
        return out

    def trial(self, subset: Subset) -> TrialRecord:
        started = time.time()
        trial = self.session.run_variant(list(subset), timeout=self.timeout, health_path=self.health_path)
        return deployment_record(self.dep, self.session, trial, started=started,
                                 base_text=self.base_texts[self.dep.head.label], fingerprint=self.fingerprint,
                                 offsets=self.offsets)


def deployment_record(dep: Deployment, session: DeploymentSession, trial: DeploymentTrial, *, started: float,
                      base_text: str, fingerprint: str, offsets: Mapping[str, float] | None = None) -> TrialRecord:
    """A trial of the whole deployment as the ledger keeps it: the root cause is the first failing node
    and rank across every node's journal (``ranks`` node-qualified, ``node1/TP9``)."""
    out = trial.outcome
    head = out.head
    timeline = [{"phase": e.phase, "seconds": round(e.seconds or 0.0, 3)} for e in (head.timeline if head else [])]
    rec = TrialRecord(
        edits=[[f, list(v) if isinstance(v, tuple) else v] for f, v in trial.edits],
        outcome=out.outcome, phase="serving" if out.ok else out.phase, exception_type=None, signature=None,
        message=None, seconds=round(out.seconds, 3), host=dep.head.host, base_unit=dep.head.unit,
        unit_hash=unit_hash(base_text), fingerprint=fingerprint, edits_key=edits_key(trial.edits),
        variant=trial.variants.get(dep.head.label, ""), invocation=head.invocation_id if head else "",
        started_at=started, detection_latency=head.detection_latency if head else None, reason=out.describe(),
        timeline=timeline)
    if out.ok:
        return rec
    failed = out.failed_node or dep.head.label
    final = out.final.get(failed)
    if final is not None:
        rec.exit_status = final.exit_status
    svcs = {n.label: session.sessions[n.label].svc for n in dep.nodes}
    try:
        frames = read_nodes(dep, svcs, trial.variants)
    except WorkbenchError:
        frames = {}
    cause = first_failure(frames, offsets) if frames else None
    if cause is not None:
        # the head's timeline is evidence for a root cause on the head; a worker's stands on its own
        # unless it names no phase at all (then the head's timeline is all there is)
        phase = failure_phase(out.phase if cause.node == dep.head.label else None, cause.phase)
        if phase == "unknown":
            phase = failure_phase(out.phase, None)
        rec.exception_type, rec.message, rec.phase, rec.ranks = cause.exception_type, cause.message, phase, [cause.rank]
        rec.frames_phase = cause.phase
        rec.root_cause_kind = "exception" if cause.exception_type else "log"
        node_frame = frames[cause.node]
        rec.log_excerpt = "\n".join(node_frame["message"].fillna("").tolist()[-80:])
        rec.signature, rec.signature_id = signature_of(cause.exception_type, cause.message, phase)
    else:
        what = "timeout" if out.outcome == "timeout" else f"{out.outcome} on {failed}"
        rec.message = out.reason
        rec.signature, rec.signature_id = signature_of(None, what, out.phase)
    return rec


Lookup = Callable[[str, str, str, Subset], TrialRecord | None]


def run_combinations(hosts: Sequence[Host], base: str, subsets: Sequence[Subset], *, ssh_config: str | None = None,
                     lookup: Lookup | None = None, on_trial: Callable[[TrialRecord], None] | None = None,
                     health_path: str = "/health", timeout: float = 900.0, purpose: str = "",
                     before: Setup | None = None, lock_wait: float = 0.0,
                     ) -> tuple[dict[Subset, TrialRecord], list[HostReport]]:
    """:func:`workbench.fleet.run_many` for a fleet; for a deployment (see :func:`trial_runner`) every
    subset is one start of the whole deployment, one after the other, each node restored by its own
    session at the end.  Same answer either way: results by subset, one report per host."""
    dep = deployment_for([h.name for h in hosts], base, ssh_config=ssh_config)
    if dep is None:
        return run_many(hosts, base, subsets, lookup=lookup, on_trial=on_trial, health_path=health_path,
                        timeout=timeout, purpose=purpose, before=before, lock_wait=lock_wait)
    runner = DeploymentRunner(dep, {h.name: h for h in hosts}, purpose=purpose, health_path=health_path,
                              timeout=timeout, lock_wait=lock_wait, setup=before)
    results: dict[Subset, TrialRecord] = {}
    try:
        with runner:
            uhash = unit_hash(runner.base_texts[dep.head.label])
            for subset in subsets:
                rec = lookup(dep.head.host, runner.fingerprint, uhash, subset) if lookup else None
                if rec is None:
                    (rec,) = runner.run([subset])
                results[subset] = rec
                if on_trial:
                    on_trial(rec)
    except DeploymentMismatch:  # bad input, found before the first trial: the run's failure, not a host's
        raise
    except WorkbenchError as exc:  # as run_many: the failure is the reports' (every node's), not raised
        for report in runner.reports:
            report.error = report.error or f"{type(exc).__name__}: {exc}"
    return results, runner.reports
