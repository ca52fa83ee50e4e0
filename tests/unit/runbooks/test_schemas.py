"""JSON Schemas of result.json (every runbook) and of the traceback JSON: published in docs/schemas,
up to date with the models, and real outputs validate against them (jsonschema, not the models)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from workbench.runbooks import ab as abtest
from workbench.runbooks.ab import ABParams
from workbench.runbooks.execute import runbooks
from workbench.runbooks.measure import ServerShape
from workbench.runbooks.schemas import RESULT_MODELS, SCHEMA_DIR, schemas
from workbench.runs import Run
from workbench.tracebacks import analyze, to_json

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"


def schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


def check(instance: dict, name: str) -> None:
    jsonschema.Draft202012Validator(schema(name)).validate(instance)


def test_every_runbook_has_a_published_schema_and_they_are_up_to_date() -> None:
    assert set(RESULT_MODELS) == set(runbooks())
    published = {p.name for p in SCHEMA_DIR.glob("*.json")}
    fresh = schemas()
    assert published == set(fresh), "run `python -m workbench.runbooks.schemas`"
    for name, body in fresh.items():
        assert schema(name) == json.loads(json.dumps(body)), f"{name} is stale: run python -m workbench.runbooks.schemas"
        jsonschema.Draft202012Validator.check_schema(body)


def test_a_real_bisect_result_validates_and_a_broken_one_does_not() -> None:
    result = json.loads((FIXTURES / "runbooks" / "bisect_run" / "result.json").read_text())
    check(result, "bisect.result.schema.json")
    for broken in ({**result, "status": "maybe"}, {**result, "culprits": [{"signature": "x"}]},
                   {k: v for k, v in result.items() if k != "run_id"}):
        with pytest.raises(jsonschema.ValidationError):
            check(broken, "bisect.result.schema.json")


def test_a_newer_culprit_with_readable_signature_and_frame_validates() -> None:
    result = json.loads((FIXTURES / "runbooks" / "bisect_run" / "result.json").read_text())
    result["culprits"][0].update(signature="RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED", signature_id="RuntimeError@bf5",
                                 innermost_frame={"file": "deepseek_v2.py", "line": 121, "function": "f"}, ranks=["TP0"])
    check(result, "bisect.result.schema.json")
    result["culprits"][0]["innermost_frame"] = {"line": 1}
    with pytest.raises(jsonschema.ValidationError):
        check(result, "bisect.result.schema.json")


def test_the_ab_result_validates(tmp_path: Path) -> None:
    from tests.unit.runbooks.test_ab import _sweep_rows

    p = ABParams(data_dir=str(tmp_path), concurrency=[1, 64], repeats=2, hosts=["gpu-b"], base_unit="base.service",
                 edits={"--enable-nccl-nvls": True}, model_spec="kimi-k2.6")
    hr = abtest._HostRun("gpu-b", 2, 0, restored=True, starts=1, variant="base-wb-0123456789.service",
                         provenance={"host": "gpu-b", "gpu": "NVIDIA B300 SXM6 AC", "gpu_count": 8})
    hr.frames["results"] = [_sweep_rows("A", 1.0), _sweep_rows("B", 1.02)]
    hr.arms = {"A": {"unit": p.base_unit, "started": False, "start": None},
               "B": {"unit": hr.variant, "started": True, "start": {"outcome": "ready", "phase": "serving",
                                                                   "seconds": 4.0}, "failure": None}}
    hr.shapes = {"A": ServerShape(30000, 8, 8), "B": ServerShape(30000, 8, 8)}
    run = Run.create("ab", data_dir=tmp_path)
    run.write_result(abtest._result(p, run, [hr], [("--enable-nccl-nvls", True)], 0.0, 1.0))
    check(json.loads((run.dir / "result.json").read_text()), "ab.result.schema.json")


@pytest.mark.parametrize("log", sorted((FIXTURES / "tracebacks").glob("*.log")), ids=lambda p: p.stem)
def test_the_traceback_json_of_every_captured_log_validates(log: Path) -> None:
    check(to_json(analyze(log.read_text(encoding="utf-8", errors="replace"))), "tracebacks.schema.json")
