"""RunbookRun: the one skeleton (redactor, run dir, failure kinds, typed result written once)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from pydantic import Field, ValidationError

from workbench.errors import HostError, LockHeld
from workbench.runbooks.params import RunbookParams
from workbench.runbooks.schemas import RunResult, TriageResult
from workbench.runbooks.skeleton import RunbookRun

TOKEN = "sk-CANARY0123456789abcdef"


class ToyParams(RunbookParams):
    host: str = Field(min_length=1)
    api_key: str = ""


def written(rr: RunbookRun) -> dict:
    return json.loads((rr.run.dir / "result.json").read_text())


def test_a_run_that_concludes_writes_its_typed_result(tmp_path):
    lines: list[str] = []
    with RunbookRun("triage", ToyParams(host="gpu-b", api_key=TOKEN, data_dir=str(tmp_path)), TriageResult,
                    progress=lines.append, host_restored=True) as rr:
        rr.tell(f"using {TOKEN}")
        rr.table("empty", pd.DataFrame())
        rr.table("rows", pd.DataFrame([{"key": TOKEN, "n": 1}]))
        rr.set(host="gpu-b", server_starts=0)
        rr.conclude("all good", likely_cause="none")
    res = written(rr)
    assert rr.result == res and res["runbook"] == "triage" and res["run_id"] == rr.run.id
    assert res["status"] == "ok" and res["failure"] is None and res["conclusion"] == "all good"
    assert res["host_restored"] is True and res["likely_cause"] == "none" and res["wall_seconds"] >= 0
    assert TOKEN not in (rr.run.dir / "result.json").read_text() and TOKEN not in lines[0]
    assert sorted(p.name for p in rr.run.dir.glob("*.parquet")) == ["rows.parquet"]


@pytest.mark.parametrize("error, kind", [(LockHeld("gpu-b is held (test)", host="gpu-b"), "host_locked"),
                                         (HostError("ssh went away", host="gpu-b"), "ssh_lost")])
def test_a_workbench_error_is_the_runs_failure_not_raised(tmp_path, error, kind):
    with RunbookRun("triage", ToyParams(host="gpu-b", data_dir=str(tmp_path)), TriageResult,
                    kinds=((LockHeld, "host_locked"), (HostError, "ssh_lost"))) as rr:
        rr.set(host="gpu-b")
        raise error
    res = written(rr)
    assert res["status"] == "failed" and res["failure"]["kind"] == kind
    assert res["conclusion"] == f"Run failed: {error}" and res["host"] == "gpu-b"


def test_ctrl_c_is_recorded_then_raised_and_a_partial_conclusion_kept(tmp_path):
    with pytest.raises(KeyboardInterrupt), \
            RunbookRun("triage", ToyParams(host="h", data_dir=str(tmp_path)), TriageResult) as rr:
        rr.conclude("half of it")
        raise KeyboardInterrupt
    res = written(rr)
    assert res["failure"]["kind"] == "interrupted" and res["conclusion"].endswith("(partial: half of it)")


def test_a_failure_found_without_an_exception(tmp_path):
    with RunbookRun("triage", ToyParams(host="h", data_dir=str(tmp_path)), TriageResult) as rr:
        rr.fail("incomplete", "not every combination ran")
    assert written(rr)["status"] == "failed" and written(rr)["conclusion"] == "Run failed: not every combination ran"


def test_a_result_that_does_not_fit_its_model_is_a_bug_raised(tmp_path):
    class Strict(RunResult):
        points: list[int] = Field(default_factory=list)

    with pytest.raises(ValidationError), \
            RunbookRun("strict", ToyParams(host="h", data_dir=str(tmp_path)), Strict) as rr:
        rr.conclude("x", points=["not a number"])
    assert not (rr.run.dir / "result.json").exists()


def test_a_bug_in_the_block_is_raised_and_writes_nothing(tmp_path):
    with pytest.raises(ZeroDivisionError), \
            RunbookRun("triage", ToyParams(host="h", data_dir=str(tmp_path)), TriageResult) as rr:
        _ = 1 / 0
    assert not (rr.run.dir / "result.json").exists()  # execute() completes it as a cell_error
