"""Runs and the ledger: every runbook run is a directory, and the ledger is all of them.

``data/runs/<run-id>/`` holds ``result.json`` (the machine-readable conclusion),
the executed notebook, ``report.html`` and Parquet tables (``trials``,
``journal``, ``tracebacks``, ``requests``, ``telemetry``, ...).  The
:class:`Ledger` reads them back into pandas to compare runs across days and to
reuse trials already made on the same host, unit text and edits.
Parquet columns have real types: ``edits`` is ``list<struct<flag, action, values>>``,
``timeline`` ``list<struct<phase, seconds>>``, ``started_at`` a UTC timestamp, so DuckDB,
Polars or ``pd.read_parquet`` see lists, structs and times.  :func:`read_table` turns them
back into the shapes the runbooks use (``[[flag, value], ...]``, timelines as dicts, epoch
seconds), and still reads older tables that held JSON strings.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import ConfigError
from workbench.redact import Redactor

JSON_COLUMNS = ("edits", "timeline")  # nested columns (JSON strings in tables written before 2026-12)
TIME_COLUMNS = ("started_at",)  # epoch seconds in memory, UTC timestamps in Parquet
DEFAULT_DATA_DIR = "data"


def encode_edits(edits: Any) -> list[dict[str, Any]] | None:
    """``[[flag, value], ...]`` as Arrow-typed structs: ``action`` is ``set`` (one value), ``switch``
    (a boolean flag, True), ``unset`` (None) or ``repeat`` (a list of values)."""
    if edits is None or (isinstance(edits, float) and edits != edits):
        return None
    out = []
    for flag, value in (edits.items() if isinstance(edits, dict) else edits):
        if value is True:
            out.append({"flag": str(flag), "action": "switch", "values": []})
        elif value is None or value is False:
            out.append({"flag": str(flag), "action": "unset", "values": []})
        elif isinstance(value, list | tuple):
            out.append({"flag": str(flag), "action": "repeat", "values": [str(v) for v in value]})
        else:
            out.append({"flag": str(flag), "action": "set", "values": [str(value)]})
    return out


def decode_edits(value: Any) -> list[list[Any]] | None:
    """The inverse of :func:`encode_edits` (and of the JSON strings of older tables)."""
    if isinstance(value, str):
        return list(json.loads(value))
    if value is None:
        return None
    out: list[list[Any]] = []
    for e in value:
        if isinstance(e, dict):
            raw = e.get("values")  # a numpy array when read by pandas
            values = [] if raw is None else list(raw)
            action = e.get("action")
            out.append([e["flag"], True if action == "switch" else None if action == "unset"
                        else values if action == "repeat" else (values[0] if values else "")])
        else:
            out.append(list(e))
    return out


def _timeline(value: Any) -> list[dict[str, Any]] | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return [{"phase": str(ev.get("phase")), "seconds": None if ev.get("seconds") is None else float(ev["seconds"])}
            for ev in value]


def _decode_timeline(value: Any) -> Any:
    if isinstance(value, str):
        return json.loads(value)
    return None if value is None else [dict(ev) for ev in value]


def default_data_dir(start: str | Path | None = None) -> Path:
    """Where runs are: ``$WORKBENCH_DATA_DIR``, else the nearest ``data/`` holding ``runs/`` in the
    current directory or above it (as git finds ``.git``: a notebook in ``notebooks/`` sees the runs
    ``workbench run`` made from the checkout's root), else ``./data``."""
    env = os.environ.get("WORKBENCH_DATA_DIR")
    if env:
        return Path(env)
    here = Path(start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "data" / "runs").is_dir():
            return d / "data"
    return here / "data"


def new_run_id(runbook: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{runbook}-{secrets.token_hex(2)}"


@dataclass
class Run:
    """One run's directory; everything written through it passes the redactor."""

    runbook: str
    id: str
    dir: Path
    redactor: Redactor
    started: float

    @classmethod
    def create(cls, runbook: str, *, data_dir: str | Path = DEFAULT_DATA_DIR, run_id: str = "",
               redactor: Redactor | None = None) -> Run:
        run_id = run_id or new_run_id(runbook)
        if "/" in run_id or run_id.startswith("."):
            raise ConfigError(f"not a valid run id: {run_id!r}")
        path = Path(data_dir) / "runs" / run_id
        path.mkdir(parents=True, exist_ok=True)
        return cls(runbook, run_id, path, redactor or Redactor(), time.time())

    def table(self, name: str, frame: pd.DataFrame) -> Path:
        out = self.redactor.frame(frame.copy())
        if "edits" in out.columns:
            out["edits"] = out["edits"].map(encode_edits)
        if "timeline" in out.columns:
            out["timeline"] = out["timeline"].map(_timeline)
        for col in TIME_COLUMNS:
            if col in out.columns and pd.api.types.is_numeric_dtype(out[col]):
                out[col] = pd.to_datetime(out[col], unit="s", utc=True).astype("datetime64[us, UTC]")
        path = self.dir / f"{name}.parquet"
        tmp = path.with_suffix(".parquet.tmp")  # a run killed mid-write must not leave a torn table
        out.to_parquet(tmp, index=False)
        tmp.replace(path)
        return path

    def write_result(self, result: dict[str, Any]) -> Path:
        data = {"run_id": self.id, "runbook": self.runbook, **result}
        path = self.dir / "result.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.redactor.obj(data), indent=2, default=str))
        tmp.replace(path)
        return path

    def result(self) -> dict[str, Any] | None:
        try:
            return dict(json.loads((self.dir / "result.json").read_text()))
        except (OSError, ValueError):
            return None


def read_table(path: Path) -> pd.DataFrame:
    """A run's table in the shapes the runbooks use (see the module docstring)."""
    frame = pd.read_parquet(path)
    if "edits" in frame.columns:
        frame["edits"] = frame["edits"].map(decode_edits).astype(object)
    if "timeline" in frame.columns:
        frame["timeline"] = frame["timeline"].map(_decode_timeline).astype(object)
    if "ranks" in frame.columns:  # list<string> -> list of str (numpy arrays come back from Parquet)
        frame["ranks"] = frame["ranks"].map(lambda v: [] if v is None else [str(x) for x in v]).astype(object)
    for col in TIME_COLUMNS:
        if col in frame.columns and isinstance(frame[col].dtype, pd.DatetimeTZDtype):
            frame[col] = frame[col].map(lambda t: t.timestamp() if pd.notna(t) else float("nan")).astype(float)
    return frame


class Ledger:
    """All runs under ``data_dir``, queryable with pandas."""

    def __init__(self, data_dir: str | Path = DEFAULT_DATA_DIR) -> None:
        self.root = Path(data_dir) / "runs"

    def run_dirs(self) -> list[Path]:
        return sorted(p for p in self.root.glob("*") if p.is_dir()) if self.root.exists() else []

    def runs(self) -> pd.DataFrame:
        rows = []
        for d in self.run_dirs():
            try:
                r = json.loads((d / "result.json").read_text())
            except (OSError, ValueError):
                r = {"run_id": d.name, "status": "incomplete"}
            rows.append({"run_id": r.get("run_id", d.name), "runbook": r.get("runbook"), "status": r.get("status"),
                         "host": r.get("host"), "started": r.get("started"), "wall_seconds": r.get("wall_seconds"),
                         "server_starts": r.get("server_starts"), "dir": str(d),
                         "report": str(d / "report.html") if (d / "report.html").exists() else None})
        return pd.DataFrame(rows)

    def table(self, name: str) -> pd.DataFrame:
        frames = []
        for d in self.run_dirs():
            path = d / f"{name}.parquet"
            if path.exists():
                f = read_table(path)
                f.insert(0, "run_id", d.name)
                frames.append(f)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def trials(self) -> pd.DataFrame:
        return self.table("trials")

    def find_trial(self, *, host: str, fingerprint: str, unit_hash: str, edits_key: str) -> dict[str, Any] | None:
        """The latest trial made on this host (same fingerprint) with this unit text and these edits."""
        trials = self.trials()
        if trials.empty or "edits_key" not in trials.columns:
            return None
        hit = trials[(trials["host"] == host) & (trials["fingerprint"] == fingerprint)
                     & (trials["unit_hash"] == unit_hash) & (trials["edits_key"] == edits_key)
                     & (~trials["reused"].astype(bool))]
        if hit.empty:
            return None
        return {str(k): v for k, v in hit.sort_values("started_at").iloc[-1].to_dict().items()}
