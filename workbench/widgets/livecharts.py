"""The panel's live load charts: the Pareto (tok/s per user vs tok/s per GPU) and the TTFT and ITL
CDFs of a benchmark or sweep, redrawn as its points arrive.

The charts are :func:`workbench.bench.charts.load_charts` — the builder the benchmark and sweep
reports use — rendered to SVG (:func:`workbench.widgets.render.chart_svg`) into one HTML widget
each, so a background thread can update them.  The Benchmark tab feeds it the tables it measures;
the Runs tab feeds it the tables a running runbook writes into its run directory
(:meth:`LiveCharts.from_run_dir`: read only when they changed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd

from workbench.bench.charts import LOAD_CHARTS, load_charts
from workbench.runs import read_table
from workbench.widgets.render import chart_svg

TABLES = ("results", "requests", "itl")  # what a run directory holds for them (Parquet)


class LiveCharts:
    """One HTML widget per chart of :data:`LOAD_CHARTS` (CSS class ``wb-{prefix}-{name}``)."""

    def __init__(self, prefix: str) -> None:
        self.views: dict[str, widgets.HTML] = {}
        for name in LOAD_CHARTS:
            view = widgets.HTML(value="")
            view.add_class(f"wb-{prefix}-{name}")
            self.views[name] = view
        self.widget = widgets.VBox([self.views["pareto"], widgets.HBox([self.views["ttft"], self.views["itl"]])])
        self._seen: dict[str, float] = {}

    def clear(self) -> None:
        for view in self.views.values():
            view.value = ""
        self._seen = {}

    def update(self, results: pd.DataFrame, requests: pd.DataFrame | None = None, itl: pd.DataFrame | None = None,
               **kw: Any) -> list[str]:
        """Redraw from the tables so far (``kw``: :func:`load_charts`'s); the names drawn."""
        charts = load_charts(results, requests, itl, **kw)
        for name, chart in charts.items():
            self.views[name].value = chart_svg(chart)
        return sorted(charts)

    def from_run_dir(self, run_dir: Path, **kw: Any) -> list[str]:
        """Redraw from a run directory's ``results``/``requests``/``itl`` tables if any changed since
        the last call (a runbook rewrites them after each configuration); the names drawn."""
        stamps = {n: (run_dir / f"{n}.parquet").stat().st_mtime for n in TABLES if (run_dir / f"{n}.parquet").exists()}
        if "results" not in stamps or stamps == self._seen:
            return []
        try:
            tables = {n: read_table(run_dir / f"{n}.parquet") for n in stamps}
        except (OSError, ValueError):  # caught mid-write: the next poll reads it whole
            return []
        self._seen = stamps
        results = tables["results"]
        point = "rate" if "rate" in results and results["rate"].notna().any() else "concurrency"
        opts: dict[str, Any] = {"point": point, "n_gpus": "gpus" if "gpus" in results else 1, **kw}
        return self.update(results, tables.get("requests"), tables.get("itl"), **opts)
