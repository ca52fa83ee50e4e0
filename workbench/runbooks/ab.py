"""The ``ab`` runbook: is a base unit plus an edit faster than the base (or one configuration than another)?

Any edit, or a pair of configurations (``a_edits``: arm A is the base plus these, started as a
variant too).  "Test NVLS on TP8" (the seeds' question) is its preset ``test-nvls-on-tp8``
(``presets/ab.toml``; the old name ``test_nvls_on_tp8`` runs it).

Per host, in one :class:`~workbench.session.HostSession` (locked, recorded, restored):

1. ``stop_units`` are stopped for the run (they hold the GPUs or the port; restarted on restore);
2. **A** = the base: measured as it is when it is running and answers ``health_path``, else started
   and watched to ready; with ``a_edits``, the base plus those as a variant (started, measured, removed);
3. **B** = the base + ``edits`` as a variant (:meth:`HostSession.serve_variant`): started, watched to
   ready, measured, stopped and removed.  A variant that does not start is the answer (its failure is
   classified like a bisect trial), not a failed run.

Both arms are swept alike (:func:`workbench.runbooks.measure.sweep_unit`: load from the host by
default, GPU samples and ``/metrics`` deltas per point).  Several hosts of one kind split the
repeats and run in parallel, each restored on its own; every host measures both arms, so a host
never stands in for an arm.  A is always measured before B on a host (drift between the two
would show as a difference: repeats on several hosts or runs on several days tell).

Speedup per concurrency = mean B / mean A output tok/s with a 95% bootstrap interval over the
repeats, and a verdict (better / worse / no significant difference): :mod:`workbench.runbooks.abverdict`.
With 2-3 repeats the interval is narrow by construction (it cannot see variance the repeats did
not show): the conclusion says so; read it with the repeats' own spread (``points``).

``result.json``::

    {"runbook": "ab", "status": "ok"|"failed", "hosts": [str], "base_unit": str,
     "edits": [[flag, value]], "a_edits": [[flag, value]] (empty: A is the base), "variant_unit": str|null, "metric": "output_throughput", "confidence": 0.95,
     "arms": {"A": {"unit": str, "started": bool (false: measured as found), "start": {"outcome", "phase",
                    "seconds"}|null, "points": [<benchmark point>]},
              "B": {"unit": str|null, "started": bool, "start": {...}|null, "points": [...],
                    "failure": {"exception_type", "message", "phase", "signature"}|null}},
     "speedup": [{"concurrency": int (or "rate": float, a request-rate ladder), "speedup": float, "lo": float|null, "hi": float|null,
                  "repeats": int, "verdict": "better"|"worse"|"no significant difference"|"undetermined"}],
     "verdict": "better"|"worse"|"no significant difference"|"mixed"|"undetermined"|"B does not start"|null,
     "bottleneck": {"A": {"gpu", "n_gpus", "model", "note", "points": [...], "verdict": str},
                    "B": {...}}|null,
     "conclusion": str, "server_starts": int, "wall_seconds": float, "host_restored": bool,
     "hosts_report": [{"host", "repeats", "restored", "error"}],
     "failure": {"kind": str, "message": str}|null, "started": float, "finished": float,
     "params": {...}, "provenance": {...}}

Tables: ``results``, ``requests``, ``telemetry``, ``server_metrics`` (columns ``arm``, ``host``), ``speedup``,
``roofline``; each arm's ``server_series`` summary (:func:`workbench.servermetrics.summary`) in ``arms``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import Field, field_validator, model_validator

from workbench import plots, servermetrics, signals
from workbench.deployment.runner import deployment_for
from workbench.errors import ConfigError, DeploymentMismatch, LockHeld, RestoreError, WorkbenchError
from workbench.hosts import Host
from workbench.provenance import collect as collect_provenance
from workbench.redact import Redactor
from workbench.runbooks import measure
from workbench.runbooks.abverdict import (
    CONFIDENCE,
    METRIC,
    conclusion,
    overall_verdict,
    speedups,
    split_repeats,
)
from workbench.runbooks.hostlist import check_deployment, expand_param
from workbench.runbooks.params import EditJSON, Edits, RunbookParams
from workbench.runbooks.schemas import ABResult
from workbench.runbooks.skeleton import RunbookRun
from workbench.runs import Run
from workbench.services import exec_argv
from workbench.session import HostSession
from workbench.trials import judge_failure
from workbench.unitfile import UnitFile, split_environment
from workbench.variants import describe_edits, normalize_edits
from workbench.watch import Outcome, watch_start

RUNBOOK = "ab"


class _Target(RunbookParams):
    hosts: list[str] = Field(description="ssh_config aliases; several hosts of one kind split the repeats, in parallel")
    _hosts = field_validator("hosts", mode="before")(expand_param)
    base_unit: str = Field(min_length=1, description="arm A: the base unit (measured as found if serving)")
    edits: Edits = Field(description="arm B: the base plus these flag edits")
    a_edits: dict[str, EditJSON] = Field(default_factory=dict,
                                    description="arm A: the base plus these flag edits (a variant); empty: the base itself")
    health_path: str = Field("/health", description="readiness endpoint of both arms")
    start_timeout: float = Field(900.0, gt=0, description="seconds to wait for ready, per start")
    stop_units: list[str] = Field(default_factory=list,
                                  description="units to stop for the run (they hold the GPUs or port); restarted after")
    lock_wait: float = Field(0.0, ge=0, description="seconds to wait while another session holds a host")
    secret_env: list[str] = Field(default_factory=list, description="controller env vars whose values must never appear")
    # Slurm (hosts ["slurm:NAME"]: base_unit is a job script, each arm a job; workbench.slurm.ab)
    max_parallel: int = Field(1, ge=1, le=2, description="slurm: 1 runs A then B; 2 both arms' jobs at once")
    partition: str = Field("", description="slurm: sbatch --partition (empty: the cluster's default)")
    account: str = Field("", description="slurm: sbatch --account (empty: none)")
    qos: str = Field("", description="slurm: sbatch --qos (empty: none)")


class ABParams(measure.LoadParams, _Target):
    """Target first, then the load shape (the parameters cell keeps this order)."""

    @model_validator(mode="after")
    def _check(self) -> ABParams:
        if not self.edits:
            raise ValueError("edits: give the flag edit(s) arm B adds to the base")
        for name, edits in (("edits", self.edits), ("a_edits", self.a_edits)):
            try:
                if edits:
                    normalize_edits(edits)
            except ConfigError as exc:
                raise ValueError(f"{name}: {exc}") from None
        if self.a_edits and normalize_edits(self.a_edits) == normalize_edits(self.edits):
            raise ValueError("a_edits and edits are the same configuration: nothing to compare")
        if not self.hosts or len(set(self.hosts)) != len(self.hosts):
            raise ValueError("hosts: give one or more distinct hosts")
        if self.repeats < 2:
            raise ValueError("repeats: an interval needs at least 2 repeats per arm")
        if self.repeats < len(self.hosts):
            raise ValueError(f"repeats ({self.repeats}) must be >= the number of hosts ({len(self.hosts)})")
        check_deployment(self.hosts, self.base_unit, self.ssh_config)
        return self


# -- one host: both arms ------------------------------------------------------------------------


@dataclass
class _HostRun:
    host: str
    repeats: int
    offset: int
    restored: bool = False
    error: str | None = None
    frames: dict[str, list[pd.DataFrame]] = field(
        default_factory=lambda: {"results": [], "requests": [], "telemetry": [], "server_metrics": []})
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)
    starts: int = 0
    variant: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    shapes: dict[str, measure.ServerShape] = field(default_factory=dict)
    diff: str = ""


def _start_words(out: Outcome) -> dict[str, Any]:
    return {"outcome": out.outcome, "phase": out.phase, "seconds": round(out.seconds, 2)}


def _keep(hr: _HostRun, arm: str, sweep: Any, series: Sequence[pd.DataFrame] = ()) -> None:
    """One arm's sweep into the host's frames, tagged with the arm and host (its server /metrics too)."""
    tags = {"arm": arm, "host": hr.host}
    hr.frames["server_metrics"].extend(f.assign(**tags) for f in series)
    res = sweep.results.assign(**tags)
    res["repeat"] = res["repeat"] + hr.offset
    req = sweep.requests.assign(**tags)
    if "repeat" in req:
        req["repeat"] = req["repeat"] + hr.offset
    hr.frames["results"].append(res)
    hr.frames["requests"].append(req)
    if not sweep.gpu.empty:
        hr.frames["telemetry"].append(sweep.gpu.assign(**tags))


class _ArmFailed(WorkbenchError):
    """Arm A could not be measured (the base is not serving)."""


def _both_arms(host: Host, p: ABParams, hr: _HostRun, rr: RunbookRun) -> None:
    s = rr.session(host, ready_timeout=p.start_timeout, lock_wait=p.lock_wait)
    try:
        with s:
            _arms(s, host, p, hr, rr.redactor, rr.tell)
    finally:
        hr.restored = s.restored


def _arms(s: HostSession, host: Host, p: ABParams, hr: _HostRun, redactor: Redactor,
          tell: Callable[[str], None]) -> None:
    edits = list(normalize_edits(p.edits))
    text = s.base_text(p.base_unit)
    for value in UnitFile.parse(text).get_all("Service", "Environment"):
        redactor.add_env(dict(split_environment(value)))
    hr.provenance = collect_provenance(host, text)
    hr.diff = s.variant(p.base_unit, edits).diff()
    for unit in s.make_room(p.stop_units):
        tell(f"{hr.host}: stopped {unit} for the run (restarted at the end)")
    if p.a_edits:
        _variant_a(s, host, p, hr, tell)
    else:
        _base_a(s, host, p, hr, text, tell)
    _arm_b(s, host, p, hr, edits, tell)


def _variant_a(s: HostSession, host: Host, p: ABParams, hr: _HostRun, tell: Callable[[str], None]) -> None:
    """Arm A as the base plus ``a_edits``: started as a variant, measured, removed."""
    a_edits = list(normalize_edits(p.a_edits))
    tell(f"{hr.host}: starting A ({describe_edits(a_edits)})")
    with s.serve_variant(p.base_unit, a_edits, health_path=p.health_path, timeout=p.start_timeout) as trial:
        hr.starts += 1
        hr.arms["A"] = {"unit": trial.variant, "started": True, "start": _start_words(trial.outcome)}
        if not trial.outcome.ok:
            raise _ArmFailed(f"A ({describe_edits(a_edits)}) does not start: {trial.outcome.describe()}")
        shape = _shape(host, p, hr, "A", exec_argv(trial.unit_text, trial.variant))
        _measure(host, p, hr, "A", shape, f"A: {describe_edits(a_edits)}", tell)


def _shape(host: Host, p: ABParams, hr: _HostRun, arm: str, argv: list[str]) -> measure.ServerShape:
    """The arm's server shape from its command line (and the model), kept for the result."""
    shape = hr.shapes[arm] = measure.with_model(measure.server_shape(argv), host, argv, p)
    return shape


def _measure(host: Host, p: ABParams, hr: _HostRun, arm: str, shape: measure.ServerShape, label: str,
             tell: Callable[[str], None]) -> None:
    """Sweep one serving arm and keep what it measured."""
    tell(f"{hr.host}: sweeping {arm}, {p.points_words()} x {hr.repeats}")
    series: list[pd.DataFrame] = []
    _keep(hr, arm, measure.sweep_unit(host, shape.port, p, {"variant": label}, repeats=hr.repeats, series=series),
          series)


def _base_a(s: HostSession, host: Host, p: ABParams, hr: _HostRun, text: str, tell: Callable[[str], None]) -> None:
    """Arm A as the base itself: measured as found when serving, else started."""
    shape = _shape(host, p, hr, "A", exec_argv(text, p.base_unit))
    st = s.svc.status(p.base_unit)
    if st.running:
        out = watch_start(s.svc, p.base_unit, start=False, health_path=p.health_path, timeout=min(p.start_timeout, 120))
        started = False
    else:
        s.protect(p.base_unit)
        s.check_gpus(allow_units=(p.base_unit,))
        tell(f"{hr.host}: starting A ({p.base_unit})")
        out = watch_start(s.svc, p.base_unit, health_path=p.health_path, timeout=p.start_timeout)
        started = True
        hr.starts += 1
    hr.arms["A"] = {"unit": p.base_unit, "started": started, "start": _start_words(out) if started else None}
    if not out.ok:
        raise _ArmFailed(f"A ({p.base_unit}) is not serving: {out.describe()}")
    _measure(host, p, hr, "A", shape, "A: base", tell)


def _arm_b(s: HostSession, host: Host, p: ABParams, hr: _HostRun, edits: list[tuple[str, Any]],
           tell: Callable[[str], None]) -> None:
    """Arm B: the base plus ``edits`` as a variant; one that does not start is the answer."""
    tell(f"{hr.host}: starting B ({describe_edits(edits)})")
    with s.serve_variant(p.base_unit, edits, health_path=p.health_path, timeout=p.start_timeout) as trial:
        hr.starts += 1
        hr.variant = trial.variant
        arm: dict[str, Any] = {"unit": trial.variant, "started": True, "start": _start_words(trial.outcome),
                               "failure": None}
        hr.arms["B"] = arm
        if not trial.outcome.ok:
            info, _ = judge_failure(s.svc, trial)
            arm["failure"] = {"exception_type": info["exception_type"], "message": info["message"] or trial.outcome.reason,
                              "phase": info["phase"], "signature": info["signature"],
                              "signature_id": info["signature_id"]}
            tell(f"{hr.host}: B did not start: {trial.outcome.describe()}")
        else:
            shape = _shape(host, p, hr, "B", exec_argv(trial.unit_text, trial.variant))
            _measure(host, p, hr, "B", shape, f"B: {describe_edits(edits)}", tell)


# -- the run ------------------------------------------------------------------------------------


def _frames(hrs: list[_HostRun], name: str) -> pd.DataFrame:
    parts = [f for hr in hrs for f in hr.frames[name] if not f.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def run(params: ABParams, *, progress: Callable[[str], None] = print) -> tuple[Run, dict[str, Any]]:
    """A/B ``params.edits`` against ``params.base_unit`` on ``params.hosts``; returns the run and its result."""
    if any(h.startswith("slurm:") for h in params.hosts):  # each arm a job on a Slurm cluster
        if len(params.hosts) > 1:
            raise ConfigError("hosts: a Slurm cluster (slurm:NAME) is the only host of its run")
        from workbench.slurm.ab import ab_run

        return ab_run(params, progress=progress)
    edits = list(normalize_edits(params.edits))
    with RunbookRun(RUNBOOK, params, ABResult, progress=progress) as rr:
        hrs = [_HostRun(h, k, off) for h, (k, off) in zip(params.hosts, split_repeats(params.repeats, len(params.hosts)),
                                                            strict=True)]
        dep = deployment_for(params.hosts, params.base_unit, ssh_config=params.ssh_config or None)
        if dep is not None:  # one server over the hosts: both arms on the whole deployment, measured at its head
            hrs = [_HostRun(dep.head.host, params.repeats, 0)]

        def worker(hr: _HostRun) -> None:
            try:
                if dep is not None:
                    from workbench.runbooks.abdeploy import deployment_arms

                    deployment_arms(dep, params, hr, rr)
                else:
                    _both_arms(rr.connect(hr.host), params, hr, rr)
            except LockHeld as exc:
                hr.error = f"host_locked: {exc}"
            except RestoreError as exc:
                hr.error = f"restore_failed: {exc}"
            except _ArmFailed as exc:
                hr.error = f"base_failed: {exc}"
            except DeploymentMismatch:  # bad input before the first arm (a deployment's, run in this thread)
                raise
            except WorkbenchError as exc:
                hr.error = f"error: {type(exc).__name__}: {exc}"

        interrupted = False
        try:
            if len(hrs) == 1:
                worker(hrs[0])  # here, so Ctrl-C reaches the session (which restores on the way out)
            else:  # interrupted, it waits for every host to finish its arm and restore, then raises
                signals.run_all([(f"ab-{hr.host}", functools.partial(worker, hr)) for hr in hrs],
                                on_interrupt=lambda: rr.tell("interrupted: waiting for every host to finish its "
                                                             "arm and restore"))
        except KeyboardInterrupt:
            interrupted = True
        fields, failure, words = _outcome(params, rr.run, hrs, edits)
        rr.set(**fields)
        if interrupted:
            raise KeyboardInterrupt  # recorded by the skeleton, with what was measured
        if failure is not None:
            rr.fail(failure["kind"], failure["message"])
        if failure is None or fields["speedup"]:
            rr.conclude(words)
    return rr.run, rr.result


def _result(params: ABParams, run_: Run, hrs: list[_HostRun], edits: list[tuple[str, Any]],
            started: float, finished: float) -> dict[str, Any]:
    """The whole result as :class:`RunbookRun` writes it from :func:`_outcome` (without the run's keys)."""
    fields, failure, words = _outcome(params, run_, hrs, edits)
    if failure is not None:
        words = f"Run failed: {failure['message']}" + (f" (partial: {words})" if fields["speedup"] else "")
    return {"status": "ok" if failure is None else "failed", **fields, "conclusion": words, "failure": failure,
            "wall_seconds": round(finished - started, 2), "started": started, "finished": finished,
            "params": params.model_dump()}


def _outcome(params: ABParams, run_: Run, hrs: list[_HostRun], edits: list[tuple[str, Any]],
             ) -> tuple[dict[str, Any], dict[str, str] | None, str]:
    """(the runbook's own result keys, the failure or None, the conclusion); the tables saved in ``run_``."""
    results, requests, telemetry = _frames(hrs, "results"), _frames(hrs, "requests"), _frames(hrs, "telemetry")
    series = _frames(hrs, "server_metrics")
    for name, frame in (("results", results), ("requests", requests), ("telemetry", telemetry),
                        ("server_metrics", series)):
        if not frame.empty:
            run_.table(name, frame)
    rows = speedups(results)
    if rows:
        run_.table("speedup", pd.DataFrame(rows))
    first = next((hr for hr in hrs if hr.provenance), None)
    provenance = dict(first.provenance) if first else {}
    if first:
        provenance["unit_diff"] = first.diff
    b_failure = next((hr.arms["B"]["failure"] for hr in hrs if hr.arms.get("B", {}).get("failure")), None)
    arms: dict[str, Any] = {}
    bottleneck: dict[str, Any] = {}
    analyzed = []
    for arm in ("A", "B"):
        info = next((hr.arms[arm] for hr in hrs if arm in hr.arms), None)
        part = results[results["arm"] == arm] if not results.empty else results
        pts = measure.points(part, by=(params.ladder,))
        arms[arm] = {**(info or {"unit": None, "started": False, "start": None}), "points": pts}
        if not series.empty and arm in set(series["arm"]):
            arms[arm]["server_series"] = servermetrics.summary(series[series["arm"] == arm])
        shape = next((hr.shapes[arm] for hr in hrs if arm in hr.shapes), None)
        if shape is not None and not part.empty:
            roof = measure.roofline(part, params, gpu_name=provenance.get("gpu"),
                                    gpu_count=int(provenance.get("gpu_count") or 0), shape=shape)
            rrows = measure.roofline_rows(roof)
            bottleneck[arm] = {"gpu": roof.gpu, "n_gpus": roof.n_gpus, "model": roof.model, "compute_dtype": roof.dtype, "note": roof.note,
                               "points": rrows, "verdict": measure.bottleneck_words(rrows, pts, gpu=roof.spec,
                                                                                     n_gpus=roof.n_gpus)}
            if not roof.analyzed.empty:
                analyzed.append(roof.analyzed)
    if analyzed:
        run_.table("roofline", pd.concat(analyzed, ignore_index=True))
    errors = [hr for hr in hrs if hr.error]
    failure = None
    if errors:
        kind = errors[0].error.split(":", 1)[0] if len(errors) == len(hrs) else "host_failed"  # type: ignore[union-attr]
        failure = {"kind": kind, "message": "; ".join(f"{hr.host}: {hr.error}" for hr in errors)}
    verdict: str | None = None
    if b_failure is not None:
        verdict = "B does not start"
    elif rows:
        verdict = overall_verdict([r["verdict"] for r in rows])
    words = conclusion(params.base_unit, edits, rows, verdict, b_failure=b_failure)
    if params.a_edits:
        words = f"A is {params.base_unit} + {describe_edits(list(normalize_edits(params.a_edits)))}. " + words
    return {
        "hosts": params.hosts, "base_unit": params.base_unit, "edits": [[f, v] for f, v in edits],
        "a_edits": [[f, v] for f, v in normalize_edits(params.a_edits)] if params.a_edits else [],
        "variant_unit": next((hr.variant for hr in hrs if hr.variant), None),
        "metric": METRIC, "confidence": CONFIDENCE,
        "arms": arms, "speedup": rows, "verdict": verdict, "bottleneck": bottleneck or None,
        "server_starts": sum(hr.starts for hr in hrs),
        "host_restored": all(hr.restored for hr in hrs),
        "hosts_report": [{"host": hr.host, "repeats": hr.repeats, "restored": hr.restored, "error": hr.error}
                         for hr in hrs],
        "provenance": provenance,
    }, failure, words


# -- what the notebook shows ----------------------------------------------------


def tables(run: Run) -> dict[str, pd.DataFrame]:
    return measure.tables(run.dir)


def speedup_frame(result: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(result.get("speedup") or [])


def arms_frame(result: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for arm, info in (result.get("arms") or {}).items():
        for pt in info.get("points") or []:
            rows.append({"arm": arm, "unit": info.get("unit"), **pt})
    return pd.DataFrame(rows)


def bottleneck_words(result: dict[str, Any]) -> Any:
    from IPython.display import Markdown

    lines = [f"- **{arm}**: {b.get('verdict') or b.get('note')}" for arm, b in (result.get("bottleneck") or {}).items()]
    return Markdown("\n".join(lines) or "No roofline (no model spec, or the GPU is not known).")


def charts(result: dict[str, Any], t: dict[str, pd.DataFrame]) -> list[Any]:
    """Speedup with intervals, throughput vs concurrency per arm, latency vs throughput, GPU timeline, roofline,
    each arm's server /metrics over its sweep."""
    res = t.get("results", pd.DataFrame())
    if res.empty:
        return []
    out: list[Any] = []
    if {"A", "B"} <= set(res["arm"]):
        out.append(plots.speedup_chart(res, "A", color="arm", by=measure.ladder_of(res)))
    tel = t.get("telemetry", pd.DataFrame())
    first = result["hosts"][0]
    if not tel.empty:  # one host's timeline: several hosts' clocks and GPUs do not share an axis
        tel = tel[tel["host"] == first]
    bn = (result.get("bottleneck") or {}).get("A") or {}
    out += measure.sweep_charts(res, tel, bn, t.get("roofline", pd.DataFrame()), color="arm",
                                load_from=result.get("params", {}).get("load_from", "host"),
                                timeline_results=res[res["host"] == first])
    series = t.get("server_metrics", pd.DataFrame())
    if not series.empty:  # each arm's series from its own first poll, the first host's
        series = series[series["host"] == first]
        series = series.assign(time_unix=series["time_unix"] - series.groupby("arm")["time_unix"].transform("min"))
        chart = plots.server_series_chart(series, color="arm")
        out += [chart] if chart is not None else []
    return out


def show_charts(run: Run, result: dict[str, Any]) -> None:
    from IPython.display import display

    for chart in charts(result, tables(run)):
        display(chart)


def notebook() -> Any:
    from workbench.runbooks.notebooks import runbook

    return runbook(
        'ab',
        "A/B: is the base plus an edit faster (or one configuration than another)?",
        "Measure the base unit (as found if it is serving, else started; or the base plus `a_edits` as a variant), "
        "then the base plus the edit as a "
        "variant (started, watched to ready, measured, removed), with the same concurrency sweep, repeats, "
        "GPU telemetry and server counters. The speedup per concurrency comes with a 95% bootstrap interval "
        "over the repeats, and a verdict: better, worse, or no significant difference. Several hosts of one "
        "kind split the repeats in parallel. Every host is left as it was found.",
        ABParams,
        ['rb.speedup_frame(result)'],
        [
            ('md', '## What bounds each arm', []),
            ('code', 'rb.bottleneck_words(result)', []),
            ('code', 'rb.arms_frame(result)', []),
            ('md', '## Charts\n\nSpeedup B/A with intervals, throughput per arm, latency vs throughput, GPU power and utilization (first host; each measured window shaded), achieved vs roofline.', []),
            ('code', 'rb.show_charts(run, result)', []),
        ],
    )
