"""``workbench journal``: NDJSON rows, and the follow loop (bounded, stoppable) over the real process
backend of a local host."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from workbench.cli.journal import follow, json_lines
from workbench.hosts import LocalHost
from workbench.journal import read as journal_read
from workbench.services import ProcessServices


def test_json_lines_is_one_object_per_entry() -> None:
    frame = pd.DataFrame({"time": pd.to_datetime([1_700_000_000, 1_700_000_001], unit="s", utc=True),
                          "pid": [1, None], "message": ["a", 'b "quoted"'], "cursor": ["c1", "c2"]})
    text = json_lines(frame, "gpu-a")
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["message"] for r in rows] == ["a", 'b "quoted"'] and rows[1]["pid"] is None
    assert rows[0]["time"] == "2023-11-14T22:13:20+00:00" and rows[0]["host"] == "gpu-a"
    assert json_lines(frame.iloc[:0], "h") == ""


def test_follow_stops_at_until_and_passes_the_cursor_on() -> None:
    now = [100.0]
    seen: list[str] = []

    def fetch(cursor: str) -> tuple[pd.DataFrame, str]:
        seen.append(cursor)
        now[0] += 1.0
        n = int(cursor)
        return pd.DataFrame({"message": [f"line {n}"]}), str(n + 1)

    out: list[str] = []
    last = follow(fetch, "0", lambda rows: out.extend(rows["message"]), interval=0.01, until=103.0,
                  clock=lambda: now[0])
    assert seen == ["0", "1", "2"] and last == "3"
    assert out == ["line 0", "line 1", "line 2"]


def test_follow_stops_when_told() -> None:
    stop = threading.Event()
    calls = []

    def fetch(cursor: str) -> tuple[pd.DataFrame, str]:
        calls.append(cursor)
        if len(calls) == 3:
            stop.set()
        return pd.DataFrame({"message": []}), cursor

    follow(fetch, "c", lambda rows: pytest.fail("no rows to emit"), interval=0.01, stop=stop)
    assert len(calls) == 3


def test_follow_reads_new_lines_of_a_real_supervised_process(tmp_path: Path) -> None:
    svc = ProcessServices(LocalHost(), root=str(tmp_path))
    unit = "ftest.service"
    (tmp_path / "units").mkdir()
    script = "import sys, time\nfor i in range(3):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.2)\n"
    (tmp_path / "units" / unit).write_text(f"[Service]\nExecStart={sys.executable} -c {json.dumps(script)}\n")
    cursor = svc.cursor()
    svc.start(unit)
    got: list[str] = []
    stop = threading.Event()

    def fetch(c: str) -> tuple[pd.DataFrame, str]:
        rows, c = journal_read.since_cursor(svc, unit, c)
        return rows[rows["origin"] == "unit"], c

    def emit(rows: pd.DataFrame) -> None:
        got.extend(rows["message"])
        if "tick 2" in got:
            stop.set()

    watchdog = threading.Timer(60, stop.set)  # bounds the test if the lines never come
    watchdog.start()
    try:
        follow(fetch, cursor, emit, interval=0.1, stop=stop)
    finally:
        watchdog.cancel()
    assert got == ["tick 0", "tick 1", "tick 2"]
    svc.stop(unit)
