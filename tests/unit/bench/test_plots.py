"""Charts are values: checked through their Vega-Lite specs, and one offline HTML render."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench import plots
from workbench.bottleneck import GPUS, KIMI_K26, analyze_results
from workbench.telemetry import parse_nvidia_smi

SMI = Path(__file__).parents[2] / "fixtures" / "bench" / "nvidia-smi"


@pytest.fixture
def results() -> pd.DataFrame:
    rows = []
    for variant, per_user in (("ar", 133.0), ("ddtree", 285.0)):
        for c in (1, 4, 16):
            for rep, wobble in enumerate((0.98, 1.0, 1.02)):
                tput = per_user * c * wobble * (1 - 0.02 * c)
                rows.append({"variant": variant, "concurrency": c, "repeat": rep, "output_throughput": tput,
                             "ttft_p50_ms": 40 + 3 * c, "ttft_p99_ms": 60 + 5 * c, "tpot_p50_ms": 1000 / per_user + c,
                             "tpot_p99_ms": 1200 / per_user + c, "tokens_per_chunk": 1.0 if variant == "ar" else 2.4,
                             "input_len": 1000, "output_len": 500})
    return pd.DataFrame(rows)


def layer_marks(spec: dict) -> list[str]:
    return [(m["mark"]["type"] if isinstance(m["mark"], dict) else m["mark"]) for m in spec["layer"]]


def test_throughput_vs_concurrency(results: pd.DataFrame) -> None:
    spec = plots.throughput_vs_concurrency(results).to_dict()
    assert layer_marks(spec) == ["errorbar", "line"]
    data = spec["datasets"][spec["data"]["name"]] if "datasets" in spec else spec["layer"][0]["data"]["values"]
    rows = {(d["variant"], d["concurrency"]): d for d in data}
    assert rows[("ar", 1)]["output_throughput"] == pytest.approx(133 * 0.98)
    assert rows[("ar", 1)]["lo"] < rows[("ar", 1)]["output_throughput"] < rows[("ar", 1)]["hi"]
    assert spec["layer"][1]["encoding"]["x"]["scale"]["type"] == "log"


def test_speedup_table_and_chart(results: pd.DataFrame) -> None:
    table = plots.speedup_table(results, "ar")
    dd = table[(table["variant"] == "ddtree") & (table["concurrency"] == 1)].iloc[0]
    assert dd["speedup"] == pytest.approx(285 / 133)
    assert dd["lo"] < dd["speedup"] < dd["hi"] and dd["repeats"] == 3
    base = table[(table["variant"] == "ar")]
    assert np.allclose(base["speedup"], 1.0)
    one = plots.speedup_table(results[results["repeat"] == 0], "ar")
    assert one["lo"].isna().all()  # one repeat: no interval rather than a fake one
    spec = plots.speedup_chart(results, "ar").to_dict()
    assert layer_marks(spec) == ["bar", "errorbar", "rule"]


def test_latency_knee_is_faceted_by_metric(results: pd.DataFrame) -> None:
    spec = plots.latency_vs_throughput(results).to_dict()
    assert spec["facet"]["column"]["field"] == "metric"
    data = spec["datasets"][spec["data"]["name"]]
    assert {d["metric"] for d in data} == {"TTFT", "TPOT"} and {d["percentile"] for d in data} == {"p50", "p99"}
    assert len(data) == 2 * 3 * 2 * 2  # variants x concurrencies x metrics x percentiles


def test_gpu_timeline_shades_phases() -> None:
    samples = parse_nvidia_smi((SMI / "h200_copy_gemm_lms250.csv").read_text())
    ph = json.loads((SMI / "h200_copy_gemm_phases.json").read_text())
    phases = pd.DataFrame([{"phase": "copy", "start": ph["copy_start"], "end": ph["copy_end"]},
                           {"phase": "gemm", "start": ph["gemm_start"], "end": ph["gemm_end"]}])
    spec = plots.gpu_timeline(samples, phases).to_dict()
    power, util = spec["vconcat"]
    assert layer_marks(power) == ["rect", "line", "line"] and layer_marks(util) == ["rect", "line"]
    assert power["layer"][1]["encoding"]["y"]["field"] == "power_w"


def test_roofline_chart_places_points_under_the_roof(results: pd.DataFrame) -> None:
    analyzed = analyze_results(results, KIMI_K26, GPUS["B300"], 8)
    spec = plots.roofline_chart(analyzed, GPUS["B300"], 8).to_dict()
    roof = spec["datasets"][spec["layer"][0]["data"]["name"]]
    assert max(r["tflops"] for r in roof) == pytest.approx(8 * 2250)
    points = spec["datasets"][spec["layer"][1]["data"]["name"]]
    assert all(p["roof_label"] == "memory-bound" for p in points)
    for p in points:  # under the bandwidth roof
        assert p["tflops"] <= p["intensity"] * 8 * 8.0 + 1e-9


def test_trial_timeline_with_and_without_phases() -> None:
    trials = pd.DataFrame({"trial": ["t1", "t2"], "start": [0.0, 50.0], "end": [40.0, 70.0], "outcome": ["ok", "crashed"]})
    phases = pd.DataFrame({"trial": ["t1", "t1", "t2"], "phase": ["start", "bench", "start"],
                           "start": [0.0, 10.0, 50.0], "end": [10.0, 40.0, 70.0]})
    spec = plots.trial_timeline(trials, phases).to_dict()
    assert layer_marks(spec) == ["bar", "point"] and spec["resolve"]["scale"]["color"] == "independent"
    plain = plots.trial_timeline(trials).to_dict()
    assert plain["mark"]["type"] == "bar" and plain["encoding"]["color"]["field"] == "outcome"


def test_offline_html_embeds_vega_and_loads_nothing_remote(results: pd.DataFrame) -> None:
    html = plots.to_offline_html(plots.throughput_vs_concurrency(results))
    assert "vegaEmbed" in html and len(html) > 200_000  # the libraries are inlined
    plots.check_offline(html)
    with pytest.raises(ValueError, match="remote resource"):
        plots.check_offline('<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>')


def test_trial_timeline_labels_are_not_cut() -> None:
    import vl_convert as vlc

    label = "3. --ep-size 8, --enable-nccl-nvls, --enable-flashinfer-allreduce-fusion"
    trials = pd.DataFrame({"trial": [label, "1. --ep-size 8"], "start": [0.0, 5.0], "end": [4.0, 9.0],
                           "outcome": ["failed", "failed"]})
    phases = pd.DataFrame({"trial": [label], "phase": ["cuda_graph_capture"], "start": [0.0], "end": [4.0]})
    for chart in (plots.trial_timeline(trials, phases), plots.trial_timeline(trials)):
        svg = vlc.vegalite_to_svg(chart.to_dict())
        assert label.replace("--", "&#45;&#45;") in svg or label in svg, "the trial label was cut"
        assert "…" not in svg
