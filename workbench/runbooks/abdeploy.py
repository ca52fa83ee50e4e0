"""The ``ab`` runbook's two arms on a deployment: one server over several hosts, measured at its head.

When ``hosts`` + ``base_unit`` are a deployment (:func:`workbench.deployment.runner.deployment_for`),
:func:`workbench.runbooks.ab.run` hands both arms to :func:`deployment_arms` (one ``_HostRun``
under the head's name, every repeat):

1. one :class:`~workbench.deployment.control.DeploymentSession` (a ``HostSession`` per node: locked,
   recorded, guarded, restored per node); ``stop_units`` stopped on every node;
2. **A** = the deployment's own units: measured as found when every node runs and the head answers
   ``health_path``, else started as a whole (workers first, judged) and stopped by the restore;
   with ``a_edits`` the same edits on every node as a variant of the whole (started, measured, stopped);
3. **B** = the base + ``edits`` on every node, a start of the whole deployment; one that does not
   start is the answer, its root cause the first failing node and rank (``node1/TP9``).

The benchmark runs against the head node's port (the deployment's ``port``, else the head's
``--port``), load and GPU samples from the head host.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench.deployment import control
from workbench.deployment.control import DeploymentOutcome, DeploymentSession, DeploymentTrial
from workbench.deployment.model import Deployment
from workbench.deployment.runner import deployment_record
from workbench.hosts import Host
from workbench.provenance import collect as collect_provenance
from workbench.runbooks import measure
from workbench.services import exec_argv
from workbench.unitfile import UnitFile, split_environment
from workbench.variants import EditValue, describe_edits, normalize_edits
from workbench.watch import watch_start

if TYPE_CHECKING:
    from workbench.runbooks.ab import ABParams, _HostRun
    from workbench.runbooks.skeleton import RunbookRun

Edits = list[tuple[str, EditValue]]


def _words(out: DeploymentOutcome) -> dict[str, Any]:
    return {"outcome": out.outcome, "phase": out.phase or None, "seconds": round(out.seconds, 2)}


def deployment_arms(dep: Deployment, p: ABParams, hr: _HostRun, rr: RunbookRun) -> None:
    """Both arms on the whole deployment; ``hr.restored`` is every node's restore."""
    hosts = {h: rr.connect(h) for h in dep.hosts}
    ds = DeploymentSession(dep, hosts, purpose=f"ab {rr.run.id}", ready_timeout=p.start_timeout,
                           make_room=tuple(p.stop_units), lock_wait=p.lock_wait)
    try:
        with ds:
            _arms(dep, ds, hosts[dep.head.host], p, hr, rr)
    finally:
        hr.restored = all(s.restored for s in ds.sessions.values())


def _arms(dep: Deployment, ds: DeploymentSession, head: Host, p: ABParams, hr: _HostRun, rr: RunbookRun) -> None:
    from workbench.runbooks.ab import _ArmFailed

    edits = list(normalize_edits(p.edits))
    texts = {n.label: ds.sessions[n.label].base_text(n.unit) for n in dep.nodes}
    for text in texts.values():
        for value in UnitFile.parse(text).get_all("Service", "Environment"):
            rr.redactor.add_env(dict(split_environment(value)))
    hs = ds.sessions[dep.head.label]
    hr.provenance = collect_provenance(head, texts[dep.head.label])
    hr.provenance["deployment"] = dep.name
    hr.provenance["hosts"] = list(dep.hosts)
    hr.diff = hs.variant(dep.head.unit, edits).diff()
    for n in dep.nodes:
        for unit in ds.sessions[n.label].make_room(p.stop_units):
            rr.tell(f"{n.host}: stopped {unit} for the run (restarted at the end)")
    if p.a_edits:
        a_edits = list(normalize_edits(p.a_edits))
        rr.tell(f"{dep.name}: starting A on every node ({describe_edits(a_edits)})")
        with _serving(ds, a_edits, p) as trial:
            hr.starts += 1
            hr.arms["A"] = {"unit": trial.variants[dep.head.label], "started": True, "start": _words(trial.outcome)}
            if not trial.outcome.ok:
                raise _ArmFailed(f"A ({describe_edits(a_edits)}) does not start: {trial.outcome.describe()}")
            _sweep(dep, ds, head, p, hr, rr, "A", trial.variants[dep.head.label], f"A: {describe_edits(a_edits)}")
    else:
        _base_a(dep, ds, head, p, hr, rr)
    rr.tell(f"{dep.name}: starting B on every node ({describe_edits(edits)})")
    started = time.time()
    with _serving(ds, edits, p) as trial:
        hr.starts += 1
        hr.variant = trial.variants[dep.head.label]
        arm: dict[str, Any] = {"unit": hr.variant, "started": True, "start": _words(trial.outcome), "failure": None}
        hr.arms["B"] = arm
        if not trial.outcome.ok:
            rec = deployment_record(dep, ds, trial, started=started, base_text=texts[dep.head.label],
                                    fingerprint="", offsets=None)
            arm["failure"] = {"exception_type": rec.exception_type, "message": rec.message or trial.outcome.reason,
                              "phase": rec.phase, "signature": rec.signature,
                              "node": trial.outcome.failed_node, "ranks": list(rec.ranks or [])}
            rr.tell(f"{dep.name}: B did not start: {trial.outcome.describe()}")
        else:
            _sweep(dep, ds, head, p, hr, rr, "B", hr.variant, f"B: {describe_edits(edits)}")


def _base_a(dep: Deployment, ds: DeploymentSession, head: Host, p: ABParams, hr: _HostRun, rr: RunbookRun) -> None:
    """Arm A as the deployment's own units: measured as found when serving, else started as a whole."""
    from workbench.runbooks.ab import _ArmFailed

    svcs = ds.services_by_host()
    if control.status(dep, svcs).overall == "running":
        o = watch_start(ds.sessions[dep.head.label].svc, dep.head.unit, start=False, health_path=p.health_path,
                        timeout=min(p.start_timeout, 120))
        ok, started, words, why = o.ok, False, None, o.describe()
    else:
        rr.tell(f"{dep.name}: starting A ({dep.head.unit} on {', '.join(dep.hosts)})")
        out = ds.start_base(timeout=p.start_timeout)  # the restore stops it again
        hr.starts += 1
        ok, started, words, why = out.ok, True, _words(out), out.describe()
    hr.arms["A"] = {"unit": dep.head.unit, "started": started, "start": words}
    if not ok:
        raise _ArmFailed(f"A ({dep.name}) is not serving: {why}")
    _sweep(dep, ds, head, p, hr, rr, "A", dep.head.unit, "A: base")


@contextlib.contextmanager
def _serving(ds: DeploymentSession, edits: Edits, p: ABParams) -> Iterator[DeploymentTrial]:
    """The same edits on every node, started as a whole and kept serving inside the block; stopped after
    (a failed start is already stopped on every node)."""
    trial = ds.run_variant(edits, timeout=p.start_timeout, keep_serving=True, health_path=p.health_path)
    try:
        yield trial
    finally:
        if trial.outcome.ok:
            control.stop(ds.dep, ds.services_by_host(), trial.variants)


def _sweep(dep: Deployment, ds: DeploymentSession, head: Host, p: ABParams, hr: _HostRun, rr: RunbookRun,
           arm: str, unit: str, label: str) -> None:
    from workbench.runbooks.ab import _keep

    argv = exec_argv(ds.sessions[dep.head.label].svc.unit_text(unit), unit)
    shape = hr.shapes[arm] = measure.with_model(measure.server_shape(argv), head, argv, p)
    port = dep.port or shape.port  # the deployment's port, else the head's own --port
    rr.tell(f"{dep.name}: sweeping {arm} at the head ({dep.head.host}:{port}), {p.points_words()} x {hr.repeats}")
    series: list[pd.DataFrame] = []
    _keep(hr, arm, measure.sweep_unit(head, port, p, {"variant": label}, repeats=hr.repeats, series=series), series)
