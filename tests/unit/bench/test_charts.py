"""Charts of a real sweep (against the fixed-schedule server) and of captured nvidia-smi samples,
checked through their Vega-Lite specs; the statistics under them against hand values."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench import plots
from workbench.bench import charts
from workbench.bench.loadcore import LoadSpec
from workbench.bench.pareto import pareto_front, pareto_mask, per_gpu_and_user
from workbench.bench.sweep import SweepResult, local_runner, run_sweep
from workbench.telemetry import parse_nvidia_smi

SMI = Path(__file__).parents[2] / "fixtures" / "bench" / "nvidia-smi"


@pytest.fixture(scope="module")
def sweep(server: str) -> SweepResult:
    base = LoadSpec(url=server, input_len=16, output_len=6, num_requests=3, warmup=0)
    return run_sweep(base, [1, 3], repeats=2, runner=local_runner(progress=False), labels={"variant": "fixed"},
                     percentiles=(50, 95, 99))


def layers(spec: dict) -> list[dict]:
    return spec["layer"]


def marks(spec: dict) -> list[str]:
    return [m["mark"]["type"] if isinstance(m["mark"], dict) else m["mark"] for m in layers(spec)]


def values(spec: dict, layer: dict) -> list[dict]:
    return spec["datasets"][layer["data"]["name"]]


def test_t_interval_by_hand() -> None:
    df = pd.DataFrame({"c": [1, 1, 1, 2], "v": [10.0, 12.0, 14.0, 5.0]})
    out = charts.mean_ci(df, ["c"], "v").set_index("c")
    # mean 12, s = 2, n = 3: half = t(0.975, 2) x 2 / sqrt(3) = 4.303 x 1.1547 = 4.969
    assert out.loc[1, "v"] == 12 and out.loc[1, "hi"] - 12 == pytest.approx(4.303 * 2 / math.sqrt(3))
    assert out.loc[1, "repeats"] == 3 and math.isnan(out.loc[2, "lo"])  # one repeat: no interval
    assert charts.t975(30) == 2.042 and charts.t975(60) == pytest.approx(2.000, abs=0.002)


def test_pareto_mask_by_hand() -> None:
    #          a    b    c    d    e (dominated by b)  f (NaN)
    x = np.array([10., 30., 50., 50., 20., np.nan])
    y = np.array([900, 700, 100, 300, 600, 1000.])
    assert list(pareto_mask(x, y)) == [True, True, False, True, False, False]
    df = pd.DataFrame({"tok_s_per_user": x, "tok_s_per_gpu": y, "name": list("abcdef")})
    assert list(pareto_front(df)["name"]) == ["a", "b", "d"]
    # equal points on the front are both on it; an equal x with a lower y is not
    assert list(pareto_mask(np.array([5., 5., 5., 1.]), np.array([7., 7., 6., 1.]))) == [True, True, False, False]
    per = per_gpu_and_user(pd.DataFrame({"output_throughput": [800.0], "tpot_p50_ms": [20.0],
                                         "concurrency_achieved": [16.0]}), 8)
    assert per.loc[0, "tok_s_per_gpu"] == 100 and per.loc[0, "tok_s_per_user"] == 50
    alt_per = per_gpu_and_user(per, 8, per_user="throughput")
    assert alt_per.loc[0, "tok_s_per_user"] == 50  # 800 / 16
    with pytest.raises(ValueError, match="per_user"):
        per_gpu_and_user(per, 8, per_user="p99")


def test_pareto_chart_of_a_sweep(sweep: SweepResult) -> None:
    spec = charts.pareto_chart(sweep.results, n_gpus=2).to_dict()
    assert marks(spec) == ["line", "point", "text"]
    pts = values(spec, layers(spec)[1])
    assert sorted(p["concurrency"] for p in pts) == [1, 3]  # repeats averaged into one point each
    want = sweep.results.groupby("concurrency")["output_throughput"].mean() / 2
    for p in pts:
        assert p["tok_s_per_gpu"] == pytest.approx(want[p["concurrency"]])
    # the fixed server's TPOT is the same at both concurrencies (20 ms): c=3 serves 3x per GPU at
    # ~the same per-user speed, so it is on the front
    assert any(p["front"] and p["concurrency"] == 3 for p in pts)
    assert spec["layer"][0]["encoding"]["x"]["title"].startswith("tok/s per user")


def test_latency_cdfs(sweep: SweepResult) -> None:
    spec = charts.latency_cdf(sweep.requests, "ttft").to_dict()
    assert spec["facet"]["column"]["field"] == "concurrency"
    rows = spec["datasets"][spec["data"]["name"]]
    for c in (1, 3):
        fr = sorted(r["fraction"] for r in rows if r["concurrency"] == c)
        n = 3 * 2  # 3 requests x 2 repeats per point
        assert fr == pytest.approx([(i + 1) / n for i in range(n)])
    assert min(r["ms"] for r in rows) >= 40.0  # the server's TTFT is 40 ms: no chunk can come earlier
    itl = charts.itl_frame(sweep.records)
    assert len(itl) == 2 * (3 + 3) * 5 and (itl["itl_s"] > 0).all()  # 5 gaps per 6-token request
    assert itl["itl_s"].median() == pytest.approx(0.020, abs=0.008)  # the server's 20 ms, loaded-box tolerance
    ispec = charts.latency_cdf(itl, "itl", facet=None).to_dict()
    assert ispec["mark"]["type"] == "line" and ispec["encoding"]["x"]["title"] == "ITL (ms)"
    with pytest.raises(ValueError, match="itl_frame"):
        charts.latency_cdf(sweep.requests, "itl")


def test_ecdf_downsamples_but_keeps_the_ends() -> None:
    df = pd.DataFrame({"g": "a", "v": np.arange(10_000.0)})
    out = charts.ecdf(df, "v", ["g"], points=100)
    assert len(out) == 100 and out["v"].iloc[0] == 0 and out["fraction"].iloc[-1] == 1.0


def test_vs_concurrency_panels_with_intervals(sweep: SweepResult) -> None:
    chart = charts.vs_concurrency(sweep.results, ["output_throughput", "ttft_p95_ms", "total_token_throughput"])
    spec = chart.to_dict()
    assert len(spec["hconcat"]) == 3
    first = spec["hconcat"][0]
    assert marks(first) == ["errorbar", "line"] and first["title"] == "output tok/s"
    assert spec["hconcat"][1]["title"] == "TTFT p95 (ms)"
    data = spec["datasets"][first["data"]["name"]] if "data" in first else spec["datasets"][first["layer"][0]["data"]["name"]]
    agg = {d["concurrency"]: d for d in data}
    r = sweep.results[sweep.results["concurrency"] == 3]["output_throughput"]
    half = charts.t975(1) * r.std() / math.sqrt(2)
    assert agg[3]["output_throughput"] == pytest.approx(r.mean()) and agg[3]["hi"] == pytest.approx(r.mean() + half)
    with pytest.raises(ValueError, match="lack"):
        charts.vs_concurrency(sweep.results, ["ttft_p99.9_ms"])


def test_gpu_power_chart_draws_the_limit_and_the_memory_bound_rule() -> None:
    samples = parse_nvidia_smi((SMI / "h200_copy_gemm_lms250.csv").read_text())
    spec = charts.gpu_power_chart(samples).to_dict()
    power = spec["vconcat"][0]
    assert marks(power) == ["line", "rule", "rule", "text"]
    limit = values(spec, power["layer"][1])
    assert [x["limit_w"] for x in limit] == [700.0]  # the captured H200's power.limit
    low = values(spec, power["layer"][2])
    assert low[0]["limit_w"] == pytest.approx(420.0) and "memory-bound" in low[0]["label"]
    assert len(spec["vconcat"]) == 3  # utilisation and memory panels from the same samples
    given = charts.gpu_power_chart(samples, power_limit_w=1100,
                                   windows=pd.DataFrame({"label": ["c=64"], "start": [samples["time_unix"].min()],
                                                         "end": [samples["time_unix"].max()]})).to_dict()
    assert marks(given["vconcat"][0])[0] == "rect" and values(given, given["vconcat"][0]["layer"][2])[0]["limit_w"] == 1100
    with pytest.raises(ValueError, match="no GPU power samples"):
        charts.gpu_power_chart(pd.DataFrame())


def test_charts_render_offline(sweep: SweepResult) -> None:
    html = plots.to_offline_html(charts.pareto_chart(sweep.results, n_gpus=1))
    assert "<html" in html.lower() and "tok_s_per_gpu" in html


def test_load_charts_of_a_sweep_are_the_pareto_and_both_cdfs(sweep: SweepResult) -> None:
    got = charts.load_charts(sweep.results, sweep.requests, charts.itl_frame(sweep.records), n_gpus=2)
    assert list(got) == ["pareto", "ttft", "itl"]
    assert got["pareto"].to_dict() == charts.pareto_chart(sweep.results, 2).to_dict()  # the same builder
    ttft = got["ttft"].to_dict()
    assert {v["variant"] for v in ttft["datasets"][ttft["data"]["name"]]} == {"c=1", "c=3"}  # one variant: named by the point alone
    faceted = charts.load_charts(sweep.results, sweep.requests, None, facet="concurrency")
    assert list(faceted) == ["pareto", "ttft"] and "facet" in faceted["ttft"].to_dict()
    # what the tables do not hold is left out, not drawn empty
    assert charts.load_charts(sweep.results.drop(columns="tpot_p50_ms")) == {}
    assert list(charts.load_charts(pd.DataFrame(), sweep.requests)) == ["ttft"]
    per_row = charts.load_charts(sweep.results.assign(gpus=4), n_gpus="gpus")["pareto"].to_dict()
    dots = per_row["layer"][1]
    want = sweep.results.groupby("concurrency")["output_throughput"].mean() / 4
    for p in per_row["datasets"][dots["data"]["name"]]:
        assert p["tok_s_per_gpu"] == pytest.approx(want[p["concurrency"]])  # each row's own GPUs
    assert dots["encoding"]["y"]["title"] == "output tok/s per GPU"
