"""The bisect runbook's result.json as issue 16 names it, on two hosts: the runbook with its host seams faked.

The fakes stand where the testbed stands in tests/integration/test_runbooks.py: a session per host that
gives the base unit and is restored on exit, and trials decided by a fault model (a blocker, a bug in two
phases) with the records ``run_trial`` writes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import ClassVar

import jsonschema
import pytest

from workbench import fleet as fleet_mod
from workbench.runbooks import bisect as bisect_rb
from workbench.runbooks import skeleton
from workbench.runbooks.schemas import SCHEMA_DIR
from workbench.trials import TrialRecord, unit_hash
from workbench.variants import edits_key

FAULTS = [  # (present, absent, exception, message, phase)
    ({"--ep-size"}, {"--disable-custom-all-reduce"}, "RuntimeError", "CUBLAS_STATUS_EXECUTION_FAILED",
     "cuda_graph_capture"),
    ({"--enable-nccl-nvls"}, {"--disable-cuda-graph"}, "AttributeError", "'NoneType' object has no attribute 'x'",
     "cuda_graph_capture"),
    ({"--enable-nccl-nvls"}, set(), "AttributeError", "'NoneType' object has no attribute 'x'", "warmup"),
]
ORDER = ["nccl_init", "weight_loading", "kv_cache_alloc", "cuda_graph_capture", "warmup"]


class FakeHost:
    closed: ClassVar[list[str]] = []

    def __init__(self, name: str) -> None:
        self.name = name

    def close(self) -> None:
        FakeHost.closed.append(self.name)


class FakeSession:
    restored: ClassVar[list[str]] = []

    def __init__(self, host: FakeHost, **kw: object) -> None:
        self.host = host

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        FakeSession.restored.append(self.host.name)

    def base_text(self, base: str) -> str:
        return "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --tp-size 8\n"

    def make_room(self, units: list[str]) -> list[str]:
        return []


def fake_trial(session: FakeSession, base: str, subset: list[tuple[str, object]], **kw: object) -> TrialRecord:
    flags = {f for f, _ in subset}
    hits = [f for f in FAULTS if f[0] <= flags and not f[1] & flags]
    edits = [[f, v] for f, v in subset]
    keys = {"host": session.host.name, "fingerprint": str(kw.get("fingerprint", "")), "started_at": time.time(),
            "unit_hash": unit_hash(session.base_text(base)), "edits_key": edits_key(subset)}  # what the ledger keys on
    if not hits:
        return TrialRecord(edits=edits, outcome="ready", phase="serving", exception_type=None, signature=None,
                           message=None, seconds=2.0, **keys)
    _, _, exc, msg, phase = min(hits, key=lambda f: ORDER.index(f[4]))
    sig_id = f"{exc}@{abs(hash((exc, msg, phase))) % 10 ** 10:010d}"
    return TrialRecord(edits=edits, outcome="failed", phase=phase, exception_type=exc, message=msg,
                       signature=f"{exc}: {msg} in {phase}", signature_id=sig_id, seconds=1.0, **keys)


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeSession.restored = []
    monkeypatch.setattr(fleet_mod, "HostSession", FakeSession)
    monkeypatch.setattr(fleet_mod, "host_fingerprint", lambda host: f"fp-{host.name}")
    monkeypatch.setattr(fleet_mod, "run_trial", fake_trial)
    FakeHost.closed = []
    monkeypatch.setattr(skeleton, "connect", lambda name, **kw: FakeHost(name))
    monkeypatch.setattr(bisect_rb, "collect_provenance", lambda host, text: {"host": host.name})


def test_result_json_names_culprits_guarantee_and_trials_per_host(fakes: None, tmp_path: Path) -> None:
    params = bisect_rb.BisectParams(data_dir=str(tmp_path), hosts="gpu-[a-b]", base_unit="u.service", edits={
        "--ep-size": "8", "--enable-nccl-nvls": True, "--disable-custom-all-reduce": True,
        "--disable-cuda-graph": True})
    run, _ = bisect_rb.run(params, progress=lambda line: None)
    result = json.loads((run.dir / "result.json").read_text())
    jsonschema.validate(result, json.loads((SCHEMA_DIR / "bisect.result.schema.json").read_text()))
    assert result["host"] == "gpu-a" and result["hosts"] == ["gpu-a", "gpu-b"]
    assert sorted(FakeSession.restored) == ["gpu-a", "gpu-b"] == sorted(FakeHost.closed)  # restored, closed
    assert result["status"] == "ok" and result["host_restored"] is True and result["failure"] is None
    got = {(tuple(e[0] for e in c["edits"]), c["phase"]) for c in result["culprits"]}
    assert got == {(("--ep-size",), "cuda_graph_capture"), (("--enable-nccl-nvls",), "cuda_graph_capture"),
                   (("--enable-nccl-nvls", "--disable-cuda-graph"), "warmup")}
    for c in result["culprits"]:
        assert set(c) >= {"edits", "exception_type", "phase", "signature", "signature_id"}
        assert c["signature"] == f"{c['exception_type']}: {c['message']} in {c['phase']}"  # readable, with phase
        assert c["signature_id"].startswith(c["exception_type"] + "@")
    ep = next(c for c in result["culprits"] if c["edits"][0][0] == "--ep-size")
    assert ep["blockers"] == [["--disable-custom-all-reduce", True]]
    nvls = [c for c in result["culprits"] if c["edits"][0][0] == "--enable-nccl-nvls"]
    assert all(c["related"] == [o["signature_id"] for o in nvls if o is not c] for c in nvls)  # same bug, 2 phases
    g = result["guarantee"]
    assert g["complete"] is True and g["sets_total"] == 15 and 0 < g["sets_tested"] <= 15
    assert g["untested"] == [] and g["unexplained"] == [] and "Complete" in g["statement"]
    assert len(result["trials"]) == result["server_starts"] == g["sets_tested"]
    for t in result["trials"]:
        assert set(t) >= {"edits", "phase", "outcome", "seconds", "reused", "host"}
        assert t["host"] in ("gpu-a", "gpu-b") and t["reused"] is False
        assert t["phase"] != "serving" or t["outcome"] == "ready"


def test_a_start_budget_leaves_the_guarantee_incomplete_with_the_sets_untested(fakes: None, tmp_path: Path) -> None:
    params = bisect_rb.BisectParams(data_dir=str(tmp_path), host="gpu-a", base_unit="u.service", max_starts=3, edits={
        "--ep-size": "8", "--enable-nccl-nvls": True, "--disable-custom-all-reduce": True,
        "--disable-cuda-graph": True})
    run, _ = bisect_rb.run(params, progress=lambda line: None)
    result = json.loads((run.dir / "result.json").read_text())
    jsonschema.validate(result, json.loads((SCHEMA_DIR / "bisect.result.schema.json").read_text()))
    g = result["guarantee"]
    assert result["server_starts"] == 3 and g["complete"] is False and g["untested"]
    assert "budget" in g["statement"] and "Not complete" in result["conclusion"]
    assert all(isinstance(s, list) and all(len(e) == 2 for e in s) for s in g["untested"])


def test_a_refusal_inside_the_run_is_a_failed_result_with_the_hosts_restored(fakes: None, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FakeSession, "base_text", lambda self, base: f"[Service]\nExecStart=/bin/{self.host.name}\n")
    params = bisect_rb.BisectParams(data_dir=str(tmp_path), hosts=["gpu-a", "gpu-b"], base_unit="u.service",
                                    edits={"--ep-size": "8"})
    run, returned = bisect_rb.run(params, progress=lambda line: None)
    result = json.loads((run.dir / "result.json").read_text())
    jsonschema.validate(result, json.loads((SCHEMA_DIR / "bisect.result.schema.json").read_text()))
    assert returned == result and result["status"] == "failed" and result["failure"]["kind"] == "error"
    assert "different u.service unit texts" in result["conclusion"] and result["conclusion"].startswith("Run failed")
    assert result["trials"] == [] and result["server_starts"] == 0 and result["culprits"] == []
    assert result["guarantee"]["complete"] is False and result["edits"] == [["--ep-size", "8"]]
    assert result["host_restored"] is True and sorted(FakeSession.restored) == ["gpu-a", "gpu-b"]
    assert not (run.dir / "trials.parquet").exists()


def test_a_second_run_reuses_the_ledger_and_its_missing_values_stay_null(fakes: None, tmp_path: Path) -> None:
    params = bisect_rb.BisectParams(data_dir=str(tmp_path), host="gpu-a", base_unit="u.service",
                                    edits={"--ep-size": "8", "--disable-custom-all-reduce": True})
    # a run of only ready trials: its exception_type column is all missing (NaN when the ledger reads it)
    bisect_rb.run(params.model_copy(update={"edits": {"--disable-custom-all-reduce": True}}),
                  progress=lambda line: None)
    first, _ = bisect_rb.run(params, progress=lambda line: None)
    second, _ = bisect_rb.run(params, progress=lambda line: None)
    text = (second.dir / "result.json").read_text()
    result = json.loads(text)
    jsonschema.validate(result, json.loads((SCHEMA_DIR / "bisect.result.schema.json").read_text()))
    assert result["status"] == "ok" and result["server_starts"] == 0 and "NaN" not in text
    assert result["trials"] and all(t["reused"] for t in result["trials"])
    ready = [t for t in result["trials"] if t["outcome"] == "ready"]
    assert ready and all(t["exception_type"] is None and t["signature"] is None for t in ready)
    assert [c["edits"] for c in result["culprits"]] == [
        c["edits"] for c in json.loads((first.dir / "result.json").read_text())["culprits"]]


def test_spares_on_idle_hosts_are_trials_with_their_host_and_no_set_starts_twice(
        fakes: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a start that becomes ready lasts longer than one that fails early: the host beside it would idle
    def timed_trial(session: FakeSession, base: str, subset: list[tuple[str, object]], **kw: object) -> TrialRecord:
        rec = fake_trial(session, base, subset, **kw)
        time.sleep(0.06 if rec.outcome == "ready" else 0.01)
        return rec

    monkeypatch.setattr(fleet_mod, "run_trial", timed_trial)
    given: list[tuple[tuple[str, object], ...]] = []
    real = bisect_rb.Search.spare

    def spy(self: bisect_rb.Search, running: object = ()) -> object:  # type: ignore[type-arg]
        got = real(self, running)  # type: ignore[arg-type]
        if got is not None:
            given.append(got)
        return got

    monkeypatch.setattr(bisect_rb.Search, "spare", spy)
    lines: list[str] = []
    params = bisect_rb.BisectParams(data_dir=str(tmp_path), hosts="gpu-[a-b]", base_unit="u.service", edits={
        "--ep-size": "8", "--enable-nccl-nvls": True, "--disable-custom-all-reduce": True,
        "--disable-cuda-graph": True, "--enable-metrics": None})
    run, _ = bisect_rb.run(params, progress=lines.append)
    result = json.loads((run.dir / "result.json").read_text())
    jsonschema.validate(result, json.loads((SCHEMA_DIR / "bisect.result.schema.json").read_text()))
    assert given and any(line.startswith("  spare:") for line in lines)  # spares ran
    keys = [edits_key(tuple((f, v) for f, v in t["edits"])) for t in result["trials"]]
    assert len(keys) == len(set(keys))  # no set started twice, spares included
    assert {edits_key(s) for s in given} <= set(keys)  # every spare is in the trial list...
    assert all(t["host"] in ("gpu-a", "gpu-b") for t in result["trials"])  # ... with its host
    assert len(result["trials"]) == result["server_starts"] == result["guarantee"]["sets_tested"]
    got = {(tuple(e[0] for e in c["edits"]), c["phase"]) for c in result["culprits"]}
    assert got == {(("--ep-size",), "cuda_graph_capture"), (("--enable-nccl-nvls",), "cuda_graph_capture"),
                   (("--enable-nccl-nvls", "--disable-cuda-graph"), "warmup")}
    assert result["guarantee"]["complete"] is True and result["host_restored"] is True
