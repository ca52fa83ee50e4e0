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
    assert rc == 1 and "HTTP 401" in err and "API key" in err


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
    assert main(["bench", "--url", "http://127.0.0.1:9", *argv, "--no-progress"]) == 1
    assert message in capsys.readouterr().err
