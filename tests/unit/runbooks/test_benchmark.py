"""The measuring runbooks' pure parts: the server's shape from its command line, the GPU from its
nvidia-smi name, per-point summaries, and the bottleneck verdict in words on the seeds' numbers."""

from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd
import pytest

from workbench.bottleneck import GPUS
from workbench.errors import ConfigError
from workbench.hosts import LocalHost
from workbench.runbooks import measure
from workbench.runbooks.benchmark import BenchmarkParams
from workbench.runbooks.params import validate

CONFIGS = Path(__file__).parents[2] / "fixtures" / "bench" / "configs"  # published config.json values
# The seeds' box, with its model named (the default, "auto", reads config.json on the host).
TARGET = {"host": "gpu-b", "unit": "sglang-k26-ddtree.service", "model_spec": "kimi-k2.6"}
SEEDS_ARGV = shlex.split("/usr/bin/python3 -m sglang.launch_server --model-path /models/Kimi-K2.6 --served-model-name kimi-k2.6 "
              "--host 0.0.0.0 --port 30000 --tp-size 8 --trust-remote-code --speculative-algorithm DDTREE "
              "--speculative-draft-model-path /models/Kimi-K2.6-DFlash --speculative-num-steps 3 "
              "--speculative-eagle-topk 4 --speculative-num-draft-tokens 8 --mem-fraction-static 0.85 "
              "--cuda-graph-max-bs 64 --enable-metrics")
VLLM_ARGV = shlex.split("/root/.cache/workbench/vllm-env/bin/python -m vllm.entrypoints.openai.api_server --model "
             "/models/tiny-llama --port 8000 --max-model-len 512 --dtype float32 --enforce-eager")


def test_server_shape_from_the_command_line():
    assert measure.server_shape(SEEDS_ARGV) == measure.ServerShape(30000, 8, 8)
    assert measure.server_shape(VLLM_ARGV) == measure.ServerShape(8000, None, None)
    assert measure.server_shape(["python", "-m", "x", "--tensor-parallel-size=2", "--port=9000"]) == \
        measure.ServerShape(9000, 2, None)


@pytest.mark.parametrize("name, key", [
    ("NVIDIA B300 SXM6 AC", "B300"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA H100 80GB HBM3", "H100"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000"),
    ("NVIDIA A100-SXM4-80GB", "A100"),
    ("Tesla T4", None),
    (None, None),
])
def test_gpu_key_from_the_nvidia_smi_name(name, key):
    assert measure.gpu_key(name) == key


def seeds_results(util: float = 100.0) -> pd.DataFrame:
    """The seeds' DDTree points (285 tok/s at c=1, 3795 at c=64, 100 % util, 360 W), two repeats each."""
    rows = []
    for c, tok_s in ((1, 285.0), (64, 3795.0)):
        for rep, jitter in enumerate((0.99, 1.01)):
            rows.append({"concurrency": c, "repeat": rep, "output_throughput": tok_s * jitter, "completed": 16,
                         "failed": 0, "client_bound": False, "input_len": 1000, "output_len": 1000,
                         "tokens_per_chunk": 3.0, "gpu_util_pct": util, "gpu_power_w": 360.0, "ttft_p50_ms": 30.0,
                         "spec_accept_length": 3.0, "spec_windowed": True})
    return pd.DataFrame(rows)


def test_points_average_repeats():
    pts = measure.points(seeds_results())
    assert [p["concurrency"] for p in pts] == [1, 64]
    assert pts[0]["output_throughput"] == pytest.approx(285.0) and pts[0]["repeats"] == 2
    assert pts[0]["output_throughput_min"] == pytest.approx(282.15) and pts[1]["spec_windowed"] is True
    assert measure.points(pd.DataFrame()) == []


def test_the_seeds_box_is_hbm_bandwidth_bound_at_decode_and_says_how_far_from_the_roof():
    p = BenchmarkParams(**TARGET)
    roof = measure.roofline(seeds_results(), p, gpu_name="NVIDIA B300 SXM6 AC", gpu_count=8,
                            shape=measure.server_shape(SEEDS_ARGV))
    assert roof.gpu == "B300" and roof.n_gpus == 8 and roof.note == ""
    rows = measure.roofline_rows(roof)
    assert [r["label"] for r in rows] == ["memory-bound", "memory-bound"]
    assert all(0.03 < r["bw_fraction"] < 0.5 and r["headroom"] > 2 for r in rows)
    words = measure.bottleneck_words(rows, measure.points(seeds_results()), gpu=GPUS["B300"], n_gpus=8)
    assert words.startswith("HBM-bandwidth bound at decode on 8 x B300 (HGX) (memory-bound at every concurrency")
    assert "c=64: 3795 tok/s = " in words and "x below the bandwidth roofline (" in words
    assert "GPUs drew 360 W = 33% of 1100 W at 100% utilization at c=64 — consistent with memory-bound" in words


def test_idle_gpus_read_as_launch_bound_and_mixed_labels_are_listed():
    p = BenchmarkParams(**TARGET)
    rows = measure.roofline_rows(measure.roofline(seeds_results(util=30.0), p, gpu_name="NVIDIA B300 SXM6 AC",
                                                  gpu_count=8, shape=measure.server_shape(SEEDS_ARGV)))
    assert {r["label"] for r in rows} == {"launch-bound"}
    mixed = [{**rows[0], "label": "launch-bound"}, {**rows[1], "label": "memory-bound"}]
    assert measure.bottleneck_words(mixed, []).startswith("At decode: launch-bound at c=1, memory-bound at c=64:")


def test_no_roofline_without_a_model_or_a_known_gpu():
    shape = measure.server_shape(SEEDS_ARGV)
    none = measure.roofline(seeds_results(), BenchmarkParams(**{**TARGET, "model_spec": ""}), gpu_name="NVIDIA B300", gpu_count=8,
                            shape=shape)
    assert none.analyzed.empty and "no model_spec" in none.note
    unknown = measure.roofline(seeds_results(), BenchmarkParams(**TARGET), gpu_name="Tesla T4", gpu_count=8, shape=shape)
    assert unknown.analyzed.empty and "not in bottleneck.GPUS" in unknown.note
    forced = measure.roofline(seeds_results(), BenchmarkParams(**TARGET, gpu="H200"), gpu_name="Tesla T4", gpu_count=8,
                              shape=shape)
    assert forced.gpu == "H200" and not forced.analyzed.empty
    assert measure.bottleneck_words([], []) == ""


def test_window_phases_shade_each_measured_window():
    res = pd.DataFrame({"concurrency": [1, 4], "arm": ["A", "B"], "start_unix": [10.0, 20.0], "end_unix": [12.0, 25.0]})
    ph = measure.window_phases(res, "arm")
    assert ph.to_dict("records") == [{"phase": "A c=1", "start": 10.0, "end": 12.0},
                                     {"phase": "B c=4", "start": 20.0, "end": 25.0}]


def test_benchmark_parameters_are_checked():
    with pytest.raises(ConfigError, match=r"missing required parameter\(s\) unit"):
        validate(BenchmarkParams, {"host": "gpu-b"})
    p = validate(BenchmarkParams, {"host": "gpu-b", "unit": "u.service", "concurrency": "[1, 4]", "repeats": 2})
    assert p.unit == "u.service" and p.concurrency == [1, 4] and p.model_spec == "auto"


def test_model_spec_auto_reads_the_served_models_config_on_the_host(tmp_path):
    """The default: any model's roofline from its config.json where it is served (a real local shell)."""
    model_dir = tmp_path / "Qwen3-8B"
    model_dir.mkdir()
    (model_dir / "config.json").write_text((CONFIGS / "Qwen3-8B.json").read_text())
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", str(model_dir), "--tp-size", "1"]
    p = BenchmarkParams(host="h", unit="u.service")
    shape = measure.with_model(measure.server_shape(argv), LocalHost("local-test"), argv, p)
    assert shape.model is not None and shape.model.name == "Qwen3-8B"
    roof = measure.roofline(seeds_results(), p, gpu_name="NVIDIA H100 80GB HBM3", gpu_count=1, shape=shape)
    assert roof.model == "Qwen3-8B" and roof.note == "" and not roof.analyzed.empty
    # a model without a config.json on the host: no roofline, and the note says why
    missing = ["python3", "-m", "sglang.launch_server", "--model-path", str(tmp_path / "nope")]
    gone = measure.with_model(measure.server_shape(missing), LocalHost("local-test"), missing, p)
    note = measure.roofline(seeds_results(), p, gpu_name="NVIDIA H100 80GB HBM3", gpu_count=1, shape=gone).note
    assert gone.model is None and note.startswith("no roofline: no config.json for")
    # named models skip the host
    named = BenchmarkParams(**TARGET)
    assert measure.with_model(measure.server_shape(argv), LocalHost("local-test"), argv, named).model is None
