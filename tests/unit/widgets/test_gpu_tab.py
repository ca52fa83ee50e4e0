"""GPU tab: live charts from nvidia-smi lines (a real H200 capture) — power with its limit as a rule,
utilization, memory with its total, clocks — redrawn as lines arrive; sampling stops on Stop."""

from __future__ import annotations

import threading
from pathlib import Path

from workbench import plots
from workbench.telemetry import GPU_FIELDS, parse_nvidia_smi
from workbench.widgets.gpu_tab import GpuTab

from .fakes import FakeContext

CAPTURE = Path(__file__).resolve().parents[2] / "fixtures" / "bench" / "nvidia-smi" / "h200_copy_gemm_lms250.csv"
LINES = CAPTURE.read_text().splitlines()


class CapturedSampler:
    """The GpuSampler interface fed with captured lines: half at start, the rest when told."""

    def __init__(self, host: object) -> None:
        self.host = host
        self.fields = tuple(GPU_FIELDS)
        self.utc_offset_s = 0.0
        self.lines: list[str] = []
        self.stopped = False
        self.started = threading.Event()

    def start(self) -> CapturedSampler:
        self.lines.extend(LINES[: len(LINES) // 2])
        self.started.set()
        return self

    def more(self) -> None:
        self.lines.extend(LINES[len(LINES) // 2:])

    def stop(self):
        self.stopped = True
        return parse_nvidia_smi(self.lines, self.fields, strict=False)


def _layers(spec: dict) -> list[list[dict]]:
    return [panel["layer"] for panel in spec["vconcat"]]


def test_the_dashboard_draws_power_against_its_limit_and_memory_against_its_total() -> None:
    samples = parse_nvidia_smi(LINES)
    spec = plots.gpu_dashboard(samples).to_dict()
    panels = _layers(spec)
    ys = [layer[0]["encoding"]["y"]["field"] for layer in panels]
    assert ys == ["power_w", "util_gpu_pct", "mem_used_mib", "clock_sm_mhz", "clock_mem_mhz"]
    datasets = spec["datasets"]
    power_rule = panels[0][1]
    assert power_rule["mark"]["type"] == "rule"
    assert datasets[power_rule["data"]["name"]] == [{"value": 700.0, "label": "power limit 700"}]
    assert datasets[panels[2][1]["data"]["name"]][0]["value"] == 143771.0
    last = plots.gpu_dashboard(samples, last_s=2.0).to_dict()
    rows = last["datasets"][_layers(last)[0][0]["data"]["name"]]
    assert 0 < len(rows) < len(samples) and max(r["t"] for r in rows) <= 2.0


def test_live_view_redraws_as_lines_arrive_and_stop_ends_sampling(tmp_path) -> None:
    samplers: list[CapturedSampler] = []
    made = threading.Event()

    def sampler_for(host: object) -> CapturedSampler:
        samplers.append(CapturedSampler(host))
        made.set()
        return samplers[-1]

    tab = GpuTab(FakeContext(tmp_path), sampler_for=sampler_for, refresh_s=3600)
    assert tab.update() is None  # nothing sampled yet
    tab.start_button.click()
    task = tab.bar.task
    assert task is not None
    assert made.wait(30) and samplers[0].started.wait(30), task.error  # the task's thread started it
    first = tab.update()
    assert first is not None and len(tab.samples) == len(LINES) // 2
    assert "GPU 0:" in tab.summary.value and "of 700 W" in tab.summary.value
    assert "<svg" in tab.chart.value and "power limit 700" in tab.chart.value
    samplers[0].more()
    tab.update()
    assert len(tab.samples) == len(LINES)
    tab.stop_button.click()
    assert tab.wait(30).state in ("done", "cancelled")
    assert samplers[0].stopped and len(tab.samples) == len(LINES)
    # the samples are stored with the runs: a ``gpu`` run in the ledger, its telemetry table as sampled
    from workbench.runs import Ledger, read_table

    assert tab.saved is not None
    runs = Ledger(tmp_path).runs()
    assert list(runs["runbook"]) == ["gpu"] and "of a 700 W limit" in (tab.saved.result() or {})["conclusion"]
    assert len(read_table(tab.saved.dir / "telemetry.parquet")) == len(LINES)
