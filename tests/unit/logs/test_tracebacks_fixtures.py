"""Every ``tests/fixtures/tracebacks/<case>.log`` must analyse to its ``<case>.json``.

A new case is a new pair of files. To write the JSON of a new log, run
``WORKBENCH_WRITE_MISSING=1 .venv/bin/pytest tests/unit/logs/test_tracebacks_fixtures.py``:
it writes only the missing ``.json`` files and fails those cases, so each new
expectation is read and checked by a person before it counts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workbench.tracebacks import analyze, to_json

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tracebacks"
CASES = sorted(p.stem for p in FIXTURES.glob("*.log"))


def test_there_are_enough_real_cases() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES)
def test_case(case: str) -> None:
    text = (FIXTURES / f"{case}.log").read_bytes().decode("utf-8", "replace")
    got = to_json(analyze(text))
    expected_path = FIXTURES / f"{case}.json"
    if not expected_path.exists():
        if os.environ.get("WORKBENCH_WRITE_MISSING"):
            expected_path.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
            pytest.fail(f"wrote {expected_path.name}: review it, then rerun")
        pytest.fail(f"{expected_path.name} is missing (see this module's docstring)")
    expected = json.loads(expected_path.read_text())
    # compare the summary parts first so a failure says what changed, then everything
    assert got["root_cause"] == expected["root_cause"]
    assert got["final"] == expected["final"]
    assert [(f["signature"], f["phase"], f["ranks"], f["occurrences"]) for f in got["failures"]] == [
        (f["signature"], f["phase"], f["ranks"], f["occurrences"]) for f in expected["failures"]
    ]
    assert got == expected
