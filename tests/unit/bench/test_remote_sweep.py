"""Shipping the host client through the Host seam, and sweeps with their on-disk form."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from workbench.bench.loadcore import RECORD_KEYS, LoadSpec
from workbench.bench.remote import parse_lines, run_on_host
from workbench.bench.sweep import host_runner, local_runner, read_sweep, run_sweep, write_sweep
from workbench.errors import ConfigError, HostError, Stopped

ISOLATED = "/usr/bin/python3 -I"  # no site dirs, no cwd: proves the shipped files need only the stdlib
FIXTURES = Path(__file__).parents[2] / "fixtures" / "bench"


def test_run_on_host_ships_runs_and_cleans_up(server: str, local_host) -> None:
    spec = LoadSpec(url=server, input_len=20, output_len=6, num_requests=4, concurrency=2, warmup=1)
    records, run = run_on_host(local_host, spec, python=ISOLATED, progress=False)
    assert run["client"] == "hostclient" and run["spec"]["model"] == "fixed"
    assert [r["phase"] for r in records] == ["warmup"] + ["measure"] * 4
    assert all(tuple(r) == RECORD_KEYS and r["error"] is None and r["output_tokens"] == 6 for r in records)
    tmp = local_host.commands[0]  # mktemp ... then the client, then rm -rf
    assert local_host.commands[-1][:3] == ["rm", "-rf", "--"]
    assert not Path(local_host.commands[-1][3]).exists() and tmp[0] == "mktemp"


def test_run_on_host_reports_a_client_that_died(local_host) -> None:
    spec = LoadSpec(url="http://127.0.0.1:9", model="m", tokens_per_word=(0, 1))
    with pytest.raises(HostError, match=r"(?s)ended \(exit status 1\) without its run line.*boom"):
        run_on_host(local_host, spec, python="/usr/bin/python3 -I -c 'raise SystemExit(\"boom\")'", progress=False)


def test_parse_lines_reads_captured_host_output() -> None:
    lines = (FIXTURES / "hostclient_output.jsonl").read_text().splitlines()
    seen: list[int] = []
    records, run, other = parse_lines(["Warning: banner from a login shell", *lines], lambda r: seen.append(r["id"]))
    assert other == ["Warning: banner from a login shell"]
    assert run is not None and run["kind"] == "run" and seen == [r["id"] for r in records]
    assert len(records) == len(lines) - 1 and all(tuple(r) == RECORD_KEYS for r in records)


@pytest.mark.parametrize("via", ["local", "host"])
def test_sweep_rows_labels_and_round_trip(server: str, local_host, tmp_path: Path, via: str) -> None:
    runner = local_runner(progress=False) if via == "local" else host_runner(local_host, python=ISOLATED, progress=False)
    base = LoadSpec(url=server, input_len=16, output_len=5, num_requests=2, warmup=1)
    result = run_sweep(base, [1, 3], repeats=2, runner=runner, labels={"variant": "ddtree"}, requests_per_concurrency=2)
    r = result.results
    assert list(zip(r["concurrency"], r["repeat"], strict=True)) == [(1, 0), (1, 1), (3, 0), (3, 1)]
    assert (r["variant"] == "ddtree").all() and (r["failed"] == 0).all()
    assert list(r["completed"]) == [2, 2, 6, 6]  # max(num_requests, 2 x concurrency)
    assert (r["total_output_tokens"] == r["completed"] * 5).all()
    assert (r["end_unix"] > r["start_unix"]).all() and {"client_bound", "loop_lag_p50_ms"} <= set(r.columns)
    assert len(result.requests) == 2 * (3 + 7) and set(result.requests["variant"]) == {"ddtree"}
    paths = write_sweep(result, tmp_path / "out")
    back = read_sweep(tmp_path / "out")
    assert back.results[["concurrency", "completed"]].equals(r[["concurrency", "completed"]])
    lines = [json.loads(x) for x in paths["records"].read_text().splitlines()]
    assert sum(x["kind"] == "run" for x in lines) == 4 and all(x["variant"] == "ddtree" for x in lines)


def test_poisson_rate_sweep_and_bad_arguments(server: str) -> None:
    base = LoadSpec(url=server, input_len=8, output_len=3, num_requests=4, warmup=0, concurrency=None, rate=1.0)
    result = run_sweep(base, rates=[50.0, 100.0], runner=local_runner(progress=False))
    assert list(result.results["rate"]) == [50.0, 100.0] and (result.results["completed"] == 4).all()
    assert result.results["concurrency"].isna().all()
    with pytest.raises(ConfigError, match="one of the two"):
        run_sweep(base, [1], rates=[1.0])
    with pytest.raises(ConfigError):
        run_sweep(base, [0])


def test_server_snapshots_wrap_only_the_measured_requests(server: str) -> None:
    base = LoadSpec(url=server, input_len=8, output_len=3, num_requests=2, warmup=2)
    result = run_sweep(base, [2], runner=local_runner(progress=False), server_url=server)
    row = result.results.iloc[0]
    # the fixed server has no /metrics: the window is there, with no counters and no acceptance
    assert row["server_window_s"] > 0 and row["spec_engine"] is None
    phases = [r["phase"] for r in result.records if r["kind"] == "request"]
    assert phases == ["warmup", "warmup", "measure", "measure"] and row["completed"] == 2


def test_sweep_samples_and_joins_gpu_telemetry(server: str, local_host, tmp_path: Path) -> None:
    # a stand-in nvidia-smi on the host's PATH emitting live samples in nvidia-smi's format
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\nwhile :; do\n"
                    "  printf '%s, 0, 360.00, 361.00, 1100.00, 100, 60, 1000, 275000, 1965, 3996, 0x0, 50, 60, P0\\n' "
                    "\"$(date -u '+%Y/%m/%d %H:%M:%S.%3N')\"\n  sleep 0.05\ndone\n")
    fake.chmod(0o755)

    class PathHost(type(local_host)):
        def stream(self, cmd, **kw):
            return super().stream(["env", f"PATH={tmp_path}:/usr/bin:/bin", *cmd], **kw)

        def run(self, cmd, **kw):
            return super().run(["env", "TZ=UTC", *cmd], **kw)

    base = LoadSpec(url=server, input_len=8, output_len=20, num_requests=2, warmup=1)
    result = run_sweep(base, [1, 2], runner=local_runner(progress=False), gpu_host=PathHost())
    r = result.results
    assert (r["gpu_samples"] > 0).all() and (r["gpu_power_w"] == 360.0).all()
    assert r["gpu_power_frac"].tolist() == pytest.approx([360 / 1100] * 2) and (r["gpu_util_pct"] == 100).all()
    assert (r["gpu_energy_per_token_j"] > 0).all()
    assert result.gpu["time_unix"].min() <= r["start_unix"].min()
    write_sweep(result, tmp_path / "out")
    assert len(read_sweep(tmp_path / "out").gpu) == len(result.gpu)


def test_a_sweep_told_to_stop_runs_no_further_point(server: str) -> None:
    stop = threading.Event()
    runs: list[int | None] = []

    def runner(spec: LoadSpec) -> tuple[list[dict], dict]:  # the real client; the stop comes while it runs
        runs.append(spec.concurrency)
        out = local_runner(progress=False)(spec)
        stop.set()
        return out

    base = LoadSpec(url=server, input_len=8, output_len=3, num_requests=2, warmup=0)
    with pytest.raises(Stopped, match="stopped"):
        run_sweep(base, [1, 2, 4], repeats=2, runner=runner, stop=stop)
    assert runs == [1]  # the run the stop came in is no measurement, and nothing after it starts


def test_a_run_that_fails_once_stopped_is_a_stop_and_one_that_fails_otherwise_is_its_error(server: str) -> None:
    stop = threading.Event()

    def cut(spec: LoadSpec) -> tuple[list[dict], dict]:  # as a run whose connection the stop closed
        stop.set()
        raise HostError("the host client on gpu-a ended (exit status -1) without its run line")

    base = LoadSpec(url=server, input_len=8, output_len=3, num_requests=2, warmup=0)
    with pytest.raises(Stopped) as info:
        run_sweep(base, [1], runner=cut, stop=stop)
    assert isinstance(info.value.__cause__, HostError)
    with pytest.raises(HostError, match="without its run line"):  # no stop: the failure is the failure
        run_sweep(base, [1], runner=cut, stop=None)
    stop.clear()
    assert len(run_sweep(base, [1, 2], runner=local_runner(progress=False), stop=stop).results) == 2
