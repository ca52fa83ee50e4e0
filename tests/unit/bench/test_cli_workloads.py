"""``workbench bench`` workloads against the simulated SGLang server started with ``--api-key``:
the key from the environment only, ``--json`` alone on stdout, chosen percentiles, goodput,
token throughputs, datasets, /flush_cache, and the key in no output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.unit.bench.conftest import SIM_API_KEY
from workbench.cli import main
from workbench.cli.bench import parse_goodput, parse_percentiles, request_headers
from workbench.errors import ConfigError

DATA = Path(__file__).parents[2] / "fixtures" / "bench" / "datasets"


@pytest.fixture(autouse=True)
def no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("WORKBENCH_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def test_json_run_with_the_key_from_the_environment(keyed_sim_url: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("WORKBENCH_API_KEY", SIM_API_KEY)
    rc = main(["bench", "--url", keyed_sim_url, "--concurrency", "1,2", "--num-requests", "2",
               "--requests-per-concurrency", "1", "--input-len", "200", "--output-len", "40", "--warmup", "1",
               "--percentiles", "50,95,99.9", "--goodput", "ttft:60000", "tpot:1", "--flush-cache",
               "--json", "--out", str(tmp_path)])
    out = capsys.readouterr()
    assert rc == 0
    doc = json.loads(out.out)  # stdout is one JSON document and nothing else
    assert out.out.strip().count("\n") == 0 and doc["percentiles"] == [50, 95, 99.9]
    assert doc["slo"] == {"ttft_ms": 60000.0, "tpot_ms": 1.0, "e2e_ms": None}
    rows = doc["results"]
    assert [r["concurrency"] for r in rows] == [1, 2] and all(r["failed"] == 0 for r in rows)
    for r in rows:
        assert {"ttft_p95_ms", "ttft_p99.9_ms", "itl_p95_ms", "tpot_p50_ms"} <= set(r)
        assert "ttft_p99_ms" not in r  # only the percentiles asked for
        assert r["total_token_throughput"] == pytest.approx(r["input_throughput"] + r["output_throughput"])
        assert r["input_throughput"] == pytest.approx(r["total_input_tokens"] / r["duration_s"])
        assert r["total_input_tokens"] >= 200 * r["completed"] * 0.9  # the server's own prompt counts
        # a 1 ms TPOT bound is out of reach of the simulated K2.6: no request is good
        assert r["goodput_rps"] == 0 and r["good_fraction"] == 0
    # the key is in no output and no saved file; the run records name the header, redacted
    saved = "".join(p.read_text(errors="replace") for p in tmp_path.iterdir() if p.suffix == ".jsonl")
    saved += "".join(p.read_bytes().decode("latin-1") for p in tmp_path.iterdir() if p.suffix == ".parquet")
    assert SIM_API_KEY not in out.out + out.err + saved
    assert '"Authorization": "<redacted>"' in saved


def test_without_the_key_the_server_refuses_and_says_so(keyed_sim_url: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "--url", keyed_sim_url, "--concurrency", "1", "--num-requests", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 3 and "HTTP 401" in err and "API key" in err  # exit table: the server refused us (host problem)


def test_dataset_on_the_host_client_with_a_named_key_variable(keyed_sim_url: str, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MY_SIM_KEY", SIM_API_KEY)
    rc = main(["bench", "local", keyed_sim_url, "--api-key-env", "MY_SIM_KEY", "--dataset",
               str(DATA / "custom.jsonl"), "--rates", "20", "--burstiness", "0.5", "--num-requests", "3",
               "--warmup", "0", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    (row,) = json.loads(out.out)["results"]
    assert row["completed"] == 3 and row["dataset_items"] == 3 and row["burstiness"] == 0.5
    # the items' output_len (7 and 3) and the default (128) for the one without
    assert row["total_output_tokens"] == 7 + 3 + 128
    assert SIM_API_KEY not in out.out + out.err


def test_duration_form(keyed_sim_url: str, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SIM_API_KEY)  # the second default variable
    rc = main(["bench", "--url", keyed_sim_url, "--concurrency", "2", "--duration", "1.5", "--warmup", "0",
               "--output-len", "16", "--input-len", "64", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    (row,) = json.loads(out.out)["results"]
    assert row["duration_limit_s"] == 1.5 and row["completed"] >= 2 and row["failed"] == 0
    assert row["duration_s"] < 1.5 + 5  # ended by itself, not after a million requests


def test_option_parsers() -> None:
    assert parse_percentiles("50, 95,99.9") == (50.0, 95.0, 99.9)
    with pytest.raises(ConfigError, match="in \\[0, 100\\]"):
        parse_percentiles("50,101")
    slo = parse_goodput(["ttft:2000", "TPOT:50", "e2el:30000"])
    assert (slo.ttft_ms, slo.tpot_ms, slo.e2e_ms) == (2000.0, 50.0, 30000.0) if slo else False
    for bad in (["itl:5"], ["ttft:x"], ["ttft:-1"]):
        with pytest.raises(ConfigError, match="--goodput"):
            parse_goodput(bad)
    env = {"K": "abc", "T": "team-1", "OPENAI_API_KEY": "o"}
    assert request_headers(None, [], env) == {"Authorization": "Bearer o"}
    assert request_headers("K", ["X-Team=T"], env) == {"Authorization": "Bearer abc", "X-Team": "team-1"}
    assert request_headers(None, [], {}) == {}
    with pytest.raises(ConfigError, match="not set"):
        request_headers("NOPE", [], env)
    with pytest.raises(ConfigError, match="NAME=ENVVAR"):
        request_headers(None, ["X-Team: team-1"], env)
    with pytest.raises(ConfigError, match="line break"):
        request_headers(None, ["X-Bad=B"], {"B": "a\r\nInjected: 1"})
    assert os.environ.get("WORKBENCH_API_KEY") is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--percentiles", "abc"], "--percentiles"),
        (["--goodput", "ttft"], "--goodput"),
        (["--dataset", str(DATA / "chat.jsonl")], "run it with the chat API"),
        (["--burstiness", "0", "--rates", "1"], "burstiness must be > 0"),
        (["--range-ratio", "1.5"], "range_ratio"),
        (["--api-key-env", "WB_UNSET_VAR_X"], "not set"),
    ],
)
def test_bad_workload_options_fail_before_any_request(argv: list[str], message: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--url", "http://127.0.0.1:9", *argv, "--no-progress"]) == 2  # usage error
    assert message in capsys.readouterr().err


CONFIGS = Path(__file__).parents[2] / "fixtures" / "bench" / "configs"


def test_roofline_of_each_point(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "--url", server, "--concurrency", "1,2", "--num-requests", "2", "--requests-per-concurrency", "1",
            "--output-len", "8", "--input-len", "32", "--warmup", "0", "--roofline",
            "--model-config", str(CONFIGS / "Llama-3.1-8B-Instruct.json"), "--gpu", "NVIDIA H100 80GB HBM3", "--tp", "2"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    roof = doc["roofline"]
    assert roof["gpu"] == "H100 SXM" and roof["tp"] == 2 and len(roof["points"]) == 2
    for pt, row in zip(roof["points"], doc["results"], strict=True):
        assert pt["bound"] == "HBM-bound" and pt["batch"] == row["concurrency"]
        assert pt["fraction_of_roof"] == pytest.approx(row["output_throughput"] / pt["roofline_tok_s"])
        assert pt["words"].startswith("measured ")
    # batch 1 at TP2: 15.0 GB of bf16 weights over 2 x 3.35 TB/s, plus the KV of ~36 tokens: ~446 tok/s
    assert roof["points"][0]["roofline_tok_s"] == pytest.approx(2 * 3.35e12 / (7_504_658_432 * 2), rel=0.01)
    assert main(argv) == 0
    assert capsys.readouterr().out.count("roofline c=") == 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--roofline", "--gpu", "H100"], "needs the model"),
        (["--roofline", "--model-config", str(CONFIGS / "Qwen3-8B.json")], "needs the GPU"),
        (["--roofline", "--model-config", str(CONFIGS / "Qwen3-8B.json"), "--gpu", "Tesla T4"], "not in the GPU table"),
        (["--roofline", "--model-config", "/nonexistent/config.json", "--gpu", "H100"], "cannot read"),
    ],
)
def test_roofline_needs_a_model_and_a_gpu(server: str, extra: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--url", server, "--concurrency", "1", "--num-requests", "1", "--no-progress", *extra]) == 2
    assert message in capsys.readouterr().err


def test_roofline_inputs_from_the_host_and_the_units_command_line(tmp_path: Path) -> None:
    import argparse

    from workbench.cli.bench import Target, roofline_inputs
    from workbench.hosts import LocalHost

    model = tmp_path / "Kimi-K2.6"
    model.mkdir()
    (model / "config.json").write_text((CONFIGS / "Kimi-K2.6.json").read_text())
    argv = ["/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", str(model), "--tp-size", "8",
            "--speculative-algorithm", "DDTREE", "--speculative-num-draft-tokens", "16"]
    target = Target("http://127.0.0.1:30000", lambda s: ([], {}), LocalHost("local-test"), argv)
    args = argparse.Namespace(roofline=True, model_config=None, gpu="B300", tp=None)
    got = roofline_inputs(args, target)
    assert got is not None and got.arch.n_experts == 384 and got.tp == 8 and got.draft_tokens == 16
    assert got.gpu.power_limit_w == 1100
    assert roofline_inputs(argparse.Namespace(roofline=False), target) is None


def test_the_seeds_verdict_by_itself_on_the_simulator(keyed_sim_url: str, sim_nvidia_smi: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Host client + the simulator's GPUs (its nvidia-smi) + K2.6's config: the bound and the power, in words."""
    monkeypatch.setenv("WORKBENCH_API_KEY", SIM_API_KEY)
    rc = main(["bench", "local", keyed_sim_url, "--concurrency", "8", "--num-requests", "8", "--warmup", "1",
               "--input-len", "500", "--output-len", "200", "--sample-gpus", "--roofline",
               "--model-config", str(CONFIGS / "Kimi-K2.6.json"), "--tp", "8", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    doc = json.loads(out.out)
    (row,) = doc["results"]
    (pt,) = doc["roofline"]["points"]
    assert doc["roofline"]["gpu"] == "B300 (HGX)"  # named by the shim's nvidia-smi, not by a flag
    assert row["gpu_power_w"] > 0 and row["gpu_count"] == 8
    assert pt["bound"] == "HBM-bound" and f"{row['gpu_power_w']:.0f} W" in pt["words"]
    # the simulated B300s draw ~360 W of 1,100 under decode, as the seeds' GPUs did
    assert row["gpu_power_w"] < 0.6 * 1100 and f"HBM-bound at {row['gpu_power_w']:.0f} W" in pt["words"]
