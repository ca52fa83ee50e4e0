"""Run tables in Parquet with real types (list<struct> edits and timelines, UTC timestamps), read back
into the shapes the runbooks use; tables written before (JSON strings) still read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workbench.redact import Redactor
from workbench.runs import Ledger, Run, decode_edits, encode_edits, read_table

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "runbooks" / "bisect_run" / "trials.parquet"
EDITS = [["--ep-size", "8"], ["--enable-nccl-nvls", True], ["--disable-cuda-graph", None],
         ["--json-model-override-args", ["a", "b"]]]


def test_edits_round_trip_through_structs() -> None:
    assert decode_edits(encode_edits(EDITS)) == EDITS
    assert encode_edits({"--ep-size": "8"}) == [{"flag": "--ep-size", "action": "set", "values": ["8"]}]


def test_trials_are_stored_with_real_types_and_read_back(tmp_path: Path) -> None:
    frame = pd.DataFrame({"edits": [EDITS, [["--ep-size", "8"]]],
                          "timeline": [[{"phase": "launch", "seconds": 0.1}, {"phase": "serving", "seconds": 3.7}], []],
                          "started_at": [1_764_585_000.25, 1_764_585_010.5], "outcome": ["failed", "ready"],
                          "note": ["from 10.1.2.3", "-"]})
    run = Run.create("bisect", data_dir=tmp_path, redactor=Redactor([]))
    path = run.table("trials", frame)
    schema = pq.read_schema(path)
    assert schema.field("edits").type == pa.list_(pa.struct([("flag", pa.string()), ("action", pa.string()),
                                                             ("values", pa.list_(pa.string()))]))
    assert schema.field("timeline").type == pa.list_(pa.struct([("phase", pa.string()), ("seconds", pa.float64())]))
    assert schema.field("started_at").type == pa.timestamp("us", tz="UTC")
    raw = pd.read_parquet(path)
    assert str(raw["started_at"].iloc[0]) == "2025-12-01 10:30:00.250000+00:00"
    back = read_table(path)
    assert back["edits"].tolist() == frame["edits"].tolist()
    assert back["timeline"].tolist() == frame["timeline"].tolist()
    assert back["started_at"].tolist() == frame["started_at"].tolist()
    assert back["note"].iloc[0] == "from [ADDRESS]"  # still redacted on the way in
    ledger = Ledger(tmp_path).trials()
    assert ledger["edits"].iloc[1] == [["--ep-size", "8"]]


def test_tables_written_as_json_strings_still_read() -> None:
    assert pa.types.is_large_string(pq.read_schema(FIXTURE).field("edits").type)  # JSON text: the older code
    old = read_table(FIXTURE)
    assert old["edits"].iloc[1] == [["--ep-size", "8"], ["--enable-nccl-nvls", True]]
    assert old["timeline"].iloc[0][0]["phase"] and isinstance(old["started_at"].iloc[0], float)


def test_trial_ranks_are_a_list_of_strings_and_read_back_as_lists(tmp_path: Path) -> None:
    frame = pd.DataFrame({"edits": [[["--ep-size", "8"]], []], "ranks": [["TP0", "TP1"], []],
                          "outcome": ["failed", "ready"]})
    run = Run.create("bisect", data_dir=tmp_path, redactor=Redactor([]))
    path = run.table("trials", frame)
    assert pq.read_schema(path).field("ranks").type == pa.list_(pa.string())
    assert read_table(path)["ranks"].tolist() == [["TP0", "TP1"], []]
