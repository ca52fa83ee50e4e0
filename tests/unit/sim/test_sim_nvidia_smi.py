"""The nvidia-smi shim against real captures (tests/fixtures/captured/nvidia-smi, H200 VM)."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from simhelpers import FIXTURES, REPO

from workbench.sim import nvidia_smi
from workbench.sim.simcore.gpustate import process_start_time

CAPTURED = REPO / "tests" / "fixtures" / "captured" / "nvidia-smi"
H200 = FIXTURES / "hosts" / "h200-capture.toml"
# fields that follow the live load, with the shape each must keep
DYNAMIC = [
    (r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}", "<TS>"),
    (r"\b\d+\.\d\d W\b", "<W>"),
    (r"(?<=, )\d+\.\d\d(?=, )", "<W>"),
    (r"^\w{3} \w{3} \d\d \d\d:\d\d:\d\d \d{4}", "<DATE>"),
    (r"\d+C    P0 +\d+W", "<TEMP/PWR>"),
]


def normalize(text: str, temps: bool = False) -> str:
    for pattern, repl in DYNAMIC:
        text = re.sub(pattern, repl, text, flags=re.M)
    if temps:  # temperature.gpu, temperature.memory, temperature.gpu.tlimit columns
        text = re.sub(r"(?<=, )\d\d(?=, |, \[N/A\]|, 0x)", "<T>", text)
        text = re.sub(r"(?<=, )\d\d(?=, 0x0)", "<T>", text)
    return text


@pytest.fixture(autouse=True)
def h200(monkeypatch, tmp_path):
    monkeypatch.setenv("SGLANG_SIM_HOST_FILE", str(H200))
    monkeypatch.setenv("SIM_GPU_STATE_DIR", str(tmp_path))
    return tmp_path


def run(cmd_file: Path) -> tuple[int, str]:
    cmd = cmd_file.read_text().splitlines()[0]
    out = io.StringIO()
    rc = nvidia_smi.main(shlex.split(cmd)[1:], out)
    return rc, out.getvalue()


IDLE_STEPS = [
    "default",
    "list_L",
    "query_gpu_idle_csv",
    "query_gpu_idle_csv_noheader",
    "query_gpu_idle_csv_nounits",
    "query_gpu_idle_csv_noheader_nounits",
    "query_gpu_extra_idle_csv",
    "query_apps_idle_csv",
    "query_apps_idle_csv_noheader",
    "err_i99",
    "err_i99_query_gpu",
    "err_query_apps_invalid_field",
    "err_query_gpu_invalid_field",
    "err_query_gpu_invalid_format",
    "err_query_gpu_invalid_format_option",
    "err_query_gpu_no_format",
    "err_query_gpu_one_invalid_field",
    "err_unknown_option",
]


@pytest.mark.parametrize("step", IDLE_STEPS)
def test_matches_capture_byte_for_byte_modulo_live_values(step):
    rc, out = run(CAPTURED / f"{step}.cmd")
    assert rc == int((CAPTURED / f"{step}.rc").read_text())
    expected = (CAPTURED / f"{step}.out").read_text()
    assert normalize(out, temps=True) == normalize(expected, temps=True)


def _publish(directory: Path, pid: int, **kw) -> None:
    state = {
        "pid": pid,
        "start_time": process_start_time(pid) or 0,
        "gpu": 0,
        "name": "python3",
        "memory_mib": 21090,
        "util": 0.0,
        "mem_util": 0.0,
        "power_w": 104.89,
        "updated": 0.0,
        **kw,
    }
    (directory / f"{pid}.json").write_text(json.dumps(state))


def test_compute_apps_lists_live_processes_only(h200):
    _publish(h200, os.getpid())
    _publish(h200, 999_999_999)  # dead pid: ignored
    for step in ("query_apps_hold_csv", "query_apps_hold_csv_noheader_nounits"):
        rc, out = run(CAPTURED / f"{step}.cmd")
        expected = (CAPTURED / f"{step}.out").read_text().replace("1506", str(os.getpid()))
        assert (rc, out) == (0, expected)


def test_busy_gpu_reads_full_utilization_and_published_power(h200):
    _publish(h200, os.getpid(), util=100.0, mem_util=62.0, power_w=360.0, memory_mib=5851)
    out = io.StringIO()
    nvidia_smi.main(
        ["--query-gpu=utilization.gpu,power.draw,memory.used", "--format=csv,noheader,nounits"], out
    )
    util, power, mem = out.getvalue().strip().split(", ")
    assert (util, mem) == ("100", "5851") and abs(float(power) - 360) < 2


def test_loop_prints_header_once_and_stops_cleanly_on_sigterm(h200):
    env = {**os.environ, "SGLANG_SIM_HOST_FILE": str(H200), "SIM_GPU_STATE_DIR": str(h200)}
    p = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "workbench/sim/nvidia_smi.py"),
            "--query-gpu=timestamp,index,power.draw,utilization.gpu,memory.used",
            "--format=csv",
            "-lms",
            "50",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert p.stdout is not None
    lines = [p.stdout.readline() for _ in range(4)]
    p.send_signal(signal.SIGTERM)
    rest = p.stdout.read()
    assert p.wait(timeout=10) == 0
    assert lines[0] == "timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB]\n"
    for line in [*lines[1:], *rest.splitlines(keepends=True)]:
        assert re.fullmatch(
            r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}, 0, \d+\.\d\d W, 0 %, 0 MiB\n", line
        )
