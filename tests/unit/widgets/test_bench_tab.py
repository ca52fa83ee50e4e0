"""Benchmark tab: points swept one by one (charts updated per point), results saved to the ledger."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from workbench.bench import SweepResult
from workbench.errors import ConfigError
from workbench.runs import Ledger, read_table
from workbench.widgets.bench_tab import BenchTab, parse_concurrencies

from .fakes import BASE, FakeContext


def fake_sweep(calls):
    def sweep(spec, concurrencies, *, repeats, runner, labels):
        calls.append((spec.url, spec.concurrency, list(concurrencies), repeats, labels))
        c = concurrencies[0]
        rows = [{"variant": labels["variant"], "concurrency": c, "repeat": r, "completed": spec.num_requests,
                 "failed": 0, "output_throughput": 100.0 * c + r, "request_throughput": 1.0 * c,
                 "ttft_p50_ms": 20.0, "tpot_p50_ms": 10.0} for r in range(repeats)]
        return SweepResult(pd.DataFrame(rows), pd.DataFrame())
    return sweep


def fake_sweep_with_requests(calls, seen):
    """As the host client answers: per-request rows (TTFT) and raw records (chunk times) too; ``seen``
    gets the live charts' state at each call (what the panel showed before this point)."""
    def sweep(spec, concurrencies, *, repeats, runner, labels):
        seen.append({name: view.value for name, view in seen_tab[0].live.views.items()})
        out = fake_sweep(calls)(spec, concurrencies, repeats=repeats, runner=runner, labels=labels)
        c = concurrencies[0]
        tags = {"variant": labels["variant"], "concurrency": c}
        reqs = [{**tags, "phase": "measure", "ok": True, "ttft_s": 0.02 * c + 0.001 * i} for i in range(6)]
        recs = [{**tags, "phase": "measure", "kind": "request", "error": None,
                 "chunk_s": [0.02, 0.03 + 0.001 * c, 0.04 + 0.002 * c]} for _ in range(6)]
        return SweepResult(out.results, pd.DataFrame(reqs), recs)
    seen_tab: list = []
    return sweep, seen_tab


def running(ctx):
    svc = ctx.services()
    svc.units_[BASE] = dataclasses.replace(svc.units_[BASE], active_state="active", sub_state="running")
    return svc


def test_parse_concurrencies():
    assert parse_concurrencies("1, 4,16") == [1, 4, 16]
    for bad in ("", "0", "a,b"):
        with pytest.raises(ConfigError):
            parse_concurrencies(bad)


def test_sweep_updates_per_point_and_saves_to_the_ledger(tmp_path):
    ctx = FakeContext(tmp_path)
    running(ctx)
    calls: list = []
    tab = BenchTab(ctx, sweep=fake_sweep(calls), runner_for=lambda host: "runner", sampler_for=None, metrics_for=None)
    tab.concurrencies.value, tab.repeats.value = "1,4", 2
    tab.run_button.click()
    task = tab.wait(60)
    assert task.state == "done", tab.bar.error.value
    # one sweep per concurrency, against the port of the unit's command line, on the host
    assert [(c[1], c[2], c[3]) for c in calls] == [(1, [1], 2), (4, [4], 2)]
    assert calls[0][0] == "http://127.0.0.1:30000" and calls[0][4] == {"variant": BASE}
    assert len(tab.results) == 4 and "output_throughput" in tab.table.value
    assert "<svg" in tab.throughput.value
    assert ctx.events == [f"lock panel: benchmark {BASE}", "unlock"]
    runs = Ledger(tmp_path).runs()
    assert list(runs["runbook"]) == ["bench"] and list(runs["status"]) == ["ok"]
    saved = read_table(tmp_path / "runs" / tab.run_record.id / "results.parquet")
    assert len(saved) == 4 and tab.run_record.id in tab.saved.value
    assert "concurrency 4" in tab.run_record.result()["conclusion"]


def test_a_stopped_server_is_a_message(tmp_path):
    ctx = FakeContext(tmp_path)
    tab = BenchTab(ctx, sweep=fake_sweep([]), runner_for=lambda host: None, sampler_for=None, metrics_for=None)
    tab.run()
    assert tab.wait(10).state == "failed"
    assert "not running" in tab.bar.error.value and Ledger(tmp_path).runs().empty


def test_cancel_between_points(tmp_path):
    ctx = FakeContext(tmp_path)
    running(ctx)
    tab = BenchTab(ctx, sampler_for=None, runner_for=lambda host: None, metrics_for=None,
                   sweep=lambda spec, cs, **kw: (tab.bar.cancel(), fake_sweep([])(spec, cs, **kw))[1])
    tab.concurrencies.value = "1,4,16"
    tab.run()
    assert tab.wait(10).state == "cancelled"
    assert len(tab.results) == 1 and Ledger(tmp_path).runs().empty


def test_pareto_and_latency_cdfs_are_drawn_live_per_point_and_saved(tmp_path):
    ctx = FakeContext(tmp_path)
    running(ctx)
    seen: list = []
    sweep, holder = fake_sweep_with_requests([], seen)
    tab = BenchTab(ctx, sweep=sweep, runner_for=lambda host: "runner", sampler_for=None, metrics_for=None)
    holder.append(tab)
    tab.concurrencies.value = "1,4"
    tab.run()
    assert tab.wait(60).state == "done", tab.bar.error.value
    # before the first point nothing was drawn; before the second, point 1's charts were already there
    assert all(v == "" for v in seen[0].values())
    assert all("<svg" in seen[1][name] for name in ("pareto", "ttft", "itl"))
    views = tab.live.views
    assert all("<svg" in views[name].value for name in ("pareto", "ttft", "itl"))
    assert "c=4" in views["ttft"].value and "c=1" in views["itl"].value  # one line per point
    assert "per GPU (8 GPUs)" in views["pareto"].value  # --tp-size 8 of the unit's command line
    assert len(tab.per_request) == 12 and len(tab.gaps) == 24
    tab.run()  # a second run reads its fields again and starts its charts afresh
    assert tab.wait(60).state == "done", tab.bar.error.value
    assert len(tab.per_request) == 12 and int(tab.requests.value) == 16
    saved = tmp_path / "runs" / tab.run_record.id
    assert len(read_table(saved / "requests.parquet")) == 12 and len(read_table(saved / "itl.parquet")) == 24


class FakeMetrics:
    """The server's /metrics as the sampler keeps it: a row per poll (here: one per sweep point)."""

    def __init__(self, url: str) -> None:
        self.url, self.rows, self.frame, self.stopped = url, [], pd.DataFrame(), False

    def start(self) -> FakeMetrics:
        return self

    def poll(self, running: float) -> None:
        self.rows.append({"time_unix": 1000.0 + len(self.rows), "running": running, "queued": 0.0,
                          "kv_cache_usage": 0.01 * running, "generation_tok_s": 50.0 * running})

    def stop(self) -> pd.DataFrame:
        from workbench.servermetrics import series_frame

        self.stopped, self.frame = True, series_frame(self.rows)
        return self.frame


def test_the_servers_own_metrics_are_drawn_live_through_the_tunnel_and_saved(tmp_path):
    """/metrics is polled through the host's tunnel to the unit's port while the sweep runs; the
    reports' server chart is redrawn per point and the series saved with the run."""
    ctx = FakeContext(tmp_path)
    running(ctx)
    made: list[FakeMetrics] = []
    seen: list[str] = []

    def metrics_for(url: str) -> FakeMetrics:
        made.append(FakeMetrics(url))
        return made[-1]

    def sweep(spec, concurrencies, **kw):
        seen.append(tab.server.value)
        made[0].poll(float(concurrencies[0]))
        return fake_sweep([])(spec, concurrencies, **kw)

    tab = BenchTab(ctx, sweep=sweep, runner_for=lambda host: "runner", sampler_for=None, metrics_for=metrics_for)
    tab.concurrencies.value = "1,4"
    tab.run()
    assert tab.wait(60).state == "done", tab.bar.error.value
    assert [m.url for m in made] == ["http://127.0.0.1:30000"] and made[0].stopped
    assert "tunnel 30000" in ctx.services().host.commands
    assert seen[0] == "" and "<svg" in seen[1]  # point 1's series drawn before point 2 ran
    assert "running requests" in tab.server.value and "KV cache used" in tab.server.value
    saved = read_table(tmp_path / "runs" / tab.run_record.id / "server_metrics.parquet")
    assert list(saved["running"]) == [1.0, 4.0]
