"""The vectorised rank/level/phase columns give what parse_line and a line-by-line PhaseTracker give."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from workbench.journal.annotate import annotate, phase_column
from workbench.logformats import parse_line
from workbench.phases import PhaseTracker

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
TRACEBACKS = Path(__file__).resolve().parents[2] / "fixtures" / "tracebacks"
EXTRA = [
    "(APIServer pid=1) INFO:     127.0.0.1:3 - \"POST /v1/completions HTTP/1.1\" 200 OK",
    "INFO:     Started server process [1]",
    "\x1b[36m(EngineCore_DP0 pid=7)\x1b[0m ERROR 09-18 21:38:02 [core.py:708] EngineCore failed to start.",
    "(VllmWorker rank=2 pid=12) INFO 07-17 23:41:16 [x.py:1] y",
    "(Worker_TP1_EP1 pid=9) WARNING 01-01 00:00:00 [a.py:3] w",
    "(EngineCore_DP0 pid=7) (Worker pid=8) INFO 01-01 00:00:00 [a.py:3] nested prefixes",
    "[2025-08-08 03:34:38] INFO:     Uvicorn running on http://0.0.0.0:30000",
    "[2025-08-08 03:34:38 TP0] [ERROR] boom",
    "[2025-08-08 03:34:38] gpu:1:2 [0] NCCL INFO Bootstrap",
    "progress 10%\rprogress 100%",
    "", "  File \"x.py\", line 1", "\tat frame", "### not a header: (VllmWorker rank=0 pid=5) INFO 01-01 00:00:00 [a:1] x",
]


def _lines() -> list[str]:
    lines = [c["line"] for c in json.loads((LOGS / "lines.json").read_text())]
    for path in sorted((LOGS / "phases").glob("*.log")) + sorted(TRACEBACKS.glob("*.log")):
        lines += path.read_text(errors="replace").split("\n")
    return lines + EXTRA


def test_rank_and_level_agree_with_parse_line():
    lines = _lines()
    got = annotate(pa.array(lines, pa.large_string()))
    ranks, levels = got["rank"].to_pylist(), got["level"].to_pylist()
    wrong = [(line, ranks[i], levels[i]) for i, line in enumerate(lines)
             if (ranks[i], levels[i]) != (parse_line(line).rank, parse_line(line).level)]
    assert not wrong
    assert len(lines) > 1000


def test_ansi_removed_for_parsing_only():
    got = annotate(pa.array(["\x1b[31mred\x1b[0m", "plain"], pa.large_string()))
    assert got["text"].to_pylist() == ["red", "plain"]


@pytest.mark.parametrize("path", sorted((LOGS / "phases").glob("*.log")), ids=lambda p: p.stem)
def test_phase_column_equals_feeding_every_line(path):
    lines = path.read_text().split("\n")
    tracker = PhaseTracker()
    want = []
    for i, line in enumerate(lines):
        tracker.feed(line, None, line_no=i + 1)
        want.append(tracker.phase)
    messages = pa.array(lines, pa.large_string())
    notes = annotate(messages)
    n = len(lines)
    got = phase_column(messages, notes["text"], notes["flavor"], np.zeros(n, np.int64), np.ones(n, bool),
                       np.arange(n, dtype=np.int64) * 1000)
    assert list(got) == want


def test_phase_is_per_group_and_filled_into_other_rows():
    lines = ["[2025-01-01 00:00:00 TP0] Load weight begin", "Started x.", "[2025-01-01 00:00:01] server_args=x",
             "pid1 line"]
    messages = pa.array(lines, pa.large_string())
    notes = annotate(messages)
    got = phase_column(messages, notes["text"], notes["flavor"], np.array([0, 0, 1, 1]),
                       np.array([True, False, True, False]), np.arange(4, dtype=np.int64))
    assert list(got) == ["weight_loading", "weight_loading", "startup_other", "startup_other"]
