"""Real torch.distributed failures captured on an H200 (issue 21, tests/fixtures/captured/run3/):
each file's label says what an engineer reads off it; the analysis must say the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.tracebacks import analyze, to_json

RUN3 = Path(__file__).resolve().parents[2] / "fixtures" / "captured" / "run3"
LABELS = json.loads((RUN3 / "labels.json").read_text())


@pytest.mark.parametrize("name", sorted(LABELS))
def test_capture_diagnosis(name: str) -> None:
    label = LABELS[name]
    doc = to_json(analyze((RUN3 / name).read_text(errors="replace")))
    root = doc["root_cause"]
    if not label["failure"]:
        assert doc["failures"] == [] and root is None
        return
    assert root is not None, name
    assert root["exception_type"] == label["root_cause_type"]
    if "root_cause_message" in label:
        assert label["root_cause_message"] in (root["message"] or "")
    if "phase" in label:
        assert root["phase"] == label["phase"]
    if "ranks" in label:
        assert root["ranks"] == label["ranks"]
    if "wrapper_type" in label:
        assert doc["final"]["exception_type"] == label["wrapper_type"]
