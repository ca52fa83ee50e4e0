"""GPUs tab (live charts from real H200 nvidia-smi samples, saved on Stop) and Fleet tab (every host)."""

from __future__ import annotations

import threading
from pathlib import Path

import pandas as pd

from workbench.errors import ConnectError
from workbench.runs import Ledger
from workbench.telemetry import GPU_FIELDS, parse_nvidia_smi
from workbench.widgets.fleet_tab import FleetTab
from workbench.widgets.gpu_tab import GpuTab

from .fakes import BASE, FakeContext

SMI = Path(__file__).parents[2] / "fixtures" / "bench" / "nvidia-smi" / "h200_copy_gemm_lms250.csv"


class ReplaySampler:
    """GpuSampler's interface over lines captured from a real H200 (tests/fixtures/bench/nvidia-smi)."""

    def __init__(self, host, interval_ms):
        self.host, self.interval_ms, self.fields = host, interval_ms, tuple(GPU_FIELDS)
        self.lines: list[str] = []
        self.utc_offset_s = 0.0
        self.stopped = threading.Event()

    def start(self):
        self.lines.extend(SMI.read_text().splitlines())
        return self

    def wait_for_sample(self, timeout: float = 30.0) -> bool:
        return bool(self.lines)

    def stop(self) -> pd.DataFrame:
        self.stopped.set()
        return parse_nvidia_smi(self.lines, self.fields, strict=False)


def test_gpu_tab_samples_charts_and_saves_on_stop(tmp_path) -> None:
    ctx = FakeContext(tmp_path)
    samplers: list[ReplaySampler] = []
    tab = GpuTab(ctx, sampler_for=lambda h, ms: samplers.append(ReplaySampler(h, ms)) or samplers[-1])
    ctx.select("gpu-b")
    tab.start()
    tab.stop()
    assert tab.wait(30).state == "done"
    assert samplers[0].host.name == "gpu-b" and samplers[0].stopped.is_set()
    assert "<svg" in tab.chart.value and "power (W)" in tab.chart.value and "SM clock" in tab.chart.value
    assert "700" in tab.table.value  # the H200's power limit, from the samples
    assert tab.run_record is not None and "W of 700 W limit" in (tab.run_record.result() or {})["conclusion"]
    runs = Ledger(tmp_path).runs()
    assert list(runs["runbook"]) == ["gpu"] and list(runs["host"]) == ["gpu-b"]


def test_gpu_tab_cancel_keeps_nothing(tmp_path) -> None:
    ctx = FakeContext(tmp_path)
    tab = GpuTab(ctx, sampler_for=ReplaySampler)
    tab.start()
    tab.bar.cancel()
    assert tab.wait(30).state == "cancelled" and tab.run_record is None


def test_fleet_tab_reads_every_host_and_says_which_is_unreachable(tmp_path) -> None:
    ctx = FakeContext(tmp_path, lock="held")
    real_connect = ctx._connect

    def connect(name):
        if name == "gpu-a":
            raise ConnectError("gpu-a: Name or service not known", host="gpu-a")
        return real_connect(name)

    ctx._connect = connect
    tab = FleetTab(ctx)
    tab.refresh()
    assert tab.wait(30).state == "done"
    by_host = {}
    for r in tab.rows:
        by_host.setdefault(r["host"], []).append(r)
    assert by_host["gpu-a"][0]["unit"] == "(unreachable)" and "ConnectError" in by_host["gpu-a"][0]["active"]
    units = {r["unit"]: r for r in by_host["gpu-b"]}
    assert BASE in units and units[BASE]["lock"] == "bisect"
    assert "gpu-a" in tab.table.value and "(unreachable)" in tab.table.value and "updated" in tab.updated.value
