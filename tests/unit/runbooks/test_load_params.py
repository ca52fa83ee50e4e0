"""The measuring runbooks' workloads (LoadParams): refused at validation with a clear message (so
``workbench run`` exits 2 before a host is touched), turned into the same LoadSpec ``workbench bench``
builds, handed to the sweep, and the API key's value in no parameter, result or redacted text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from workbench.bench.sweep import SweepResult
from workbench.configsweep import Slo
from workbench.errors import ConfigError
from workbench.hosts import LocalHost
from workbench.redact import Redactor
from workbench.runbooks import measure
from workbench.runbooks.ab import ABParams
from workbench.runbooks.abverdict import conclusion, speedups
from workbench.runbooks.benchmark import BenchmarkParams
from workbench.runbooks.params import validate
from workbench.runbooks.sweep import SweepParams
from workbench.runbooks.sweeppoints import points as sweep_points

DATA = Path(__file__).parents[2] / "fixtures" / "bench" / "datasets"
TARGET = {"host": "gpu-b", "unit": "u.service"}
KEY = "kcanary-" + "9f3e1b7a" * 4  # a value that looks like no known token format


@pytest.fixture(autouse=True)
def no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("WORKBENCH_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize(("given", "message"), [
    ({"concurrency": [1, 2], "request_rate": [1.0]}, "give concurrency or request_rate, not both"),
    ({"concurrency": []}, "at least one concurrency"),
    ({"request_rate": [0]}, "request rate must be > 0"),
    ({"max_concurrency": 8}, "max_concurrency caps a request_rate ladder"),
    ({"request_rate": [1.0], "burstiness": 0}, "burstiness"),
    ({"range_ratio": 1.0}, "range_ratio"),
    ({"prefix_len": 64}, "need both prefix_len >= 1 and prefix_groups >= 1"),
    ({"api_key_env": "WB_UNSET_KEY_VAR"}, "api_key_env WB_UNSET_KEY_VAR: that environment variable is not set"),
    ({"headers": ["X-Team: x"]}, "headers takes NAME=ENVVAR"),
    ({"headers": ["X-Team=WB_UNSET_TEAM_VAR"]}, "environment variable WB_UNSET_TEAM_VAR is not set"),
    ({"dataset": "/nonexistent/share.json"}, "no such file on this machine"),
    ({"dataset": str(DATA / "chat.jsonl")}, "run it with the chat API"),
    ({"dataset": str(DATA / "custom.jsonl"), "dataset_format": "csv"}, "dataset_format must be one of"),
    ({"percentiles": [50, 101]}, r"percentiles must be numbers in \[0, 100\]"),
    ({"goodput": {"itl": 5}}, "goodput takes ttft, tpot or e2el"),
    ({"goodput": {"ttft": -1}}, "must be > 0 ms"),
])
def test_bad_workloads_are_refused_at_validation(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate(BenchmarkParams, {**TARGET, **given})


def test_workbench_run_exits_2_before_any_host_is_touched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main
    from workbench.runbooks.execute import EXIT_BAD_PARAMETERS

    for extra in (["-p", "api_key_env", "WB_UNSET_KEY_VAR"], ["-p", "request_rate", "[1,2]", "-p", "concurrency", "[8]"]):
        rc = main(["run", "benchmark", "--host", "no-such-host.invalid", "-p", "unit", "u.service", *extra,
                   "--data-dir", str(tmp_path)])
        assert rc == EXIT_BAD_PARAMETERS
        assert "invalid parameters for BenchmarkParams" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_the_rate_ladder_wins_over_the_default_concurrency_and_drives_the_points() -> None:
    p = validate(SweepParams, {"host": "h", "base_unit": "u.service", "grid": {"--x": ["1"]},
                               "request_rate": "[2, 4.5]", "max_concurrency": 16})
    assert p.ladder == "rate" and p.points_words() == "rate=[2.0, 4.5]/s"
    assert validate(BenchmarkParams, {**TARGET, "request_rate": [1], "concurrency": []}).ladder == "rate"
    assert BenchmarkParams(**TARGET).ladder == "concurrency"


def test_params_become_the_load_spec_workbench_bench_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", KEY)
    monkeypatch.setenv("TEAM_TOKEN", "team-7")
    p = validate(ABParams, {"hosts": ["gpu-a"], "base_unit": "u.service", "edits": {"--x": "1"},
                            "request_rate": [3.0], "max_concurrency": 32, "burstiness": 0.5, "duration_s": 20,
                            "dataset": str(DATA / "sharegpt_sample.json"), "dataset_output_len": 64,
                            "api": "chat", "api_key_env": "MY_KEY", "headers": ["X-Team=TEAM_TOKEN"],
                            "flush_cache": True, "ignore_eos": False, "warmup": 1})
    spec = p.spec("http://127.0.0.1:30000")
    assert (spec.rate, spec.concurrency, spec.burstiness, spec.duration_s) == (3.0, 32, 0.5, 20.0)
    assert spec.num_requests == 1_000_000  # a duration-bounded point: the count is only a cap
    assert spec.headers == {"Authorization": f"Bearer {KEY}", "X-Team": "team-7"}
    assert spec.flush_cache and not spec.ignore_eos and spec.api == "chat"
    assert spec.dataset and all(it["output_len"] == 64 for it in spec.dataset)
    assert p.workload().per_concurrency(p.request_rate) is None
    # the key's value is in no parameter: only the variable's name is
    assert KEY not in repr(p.model_dump()) and p.model_dump()["api_key_env"] == "MY_KEY"
    # synthetic prompts with ranges and shared prefixes, a concurrency ladder
    q = BenchmarkParams(**TARGET, range_ratio=0.5, prefix_len=32, prefix_groups=4, percentiles=[95])
    spec = q.spec("http://h:1")
    assert (spec.range_ratio, spec.prefix_len, spec.prefix_groups, spec.rate, spec.headers) == (0.5, 32, 4, None, {})
    assert q.percentiles_measured() == (50.0, 95.0, 99.0)


def test_a_relative_dataset_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "d.jsonl").write_text('{"prompt": "hi", "output_len": 4}\n')
    monkeypatch.chdir(tmp_path)
    p = BenchmarkParams(**TARGET, dataset="d.jsonl")
    assert p.dataset == str(tmp_path / "d.jsonl")  # the kernel may run in another directory


def test_sweep_unit_hands_the_workload_to_the_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_sweep(base: Any, concurrencies: Any, **kw: Any) -> SweepResult:
        seen.update(base=base, concurrencies=concurrencies, **kw)
        return SweepResult(pd.DataFrame(), pd.DataFrame())

    monkeypatch.setattr(measure, "run_sweep", fake_sweep)
    monkeypatch.setenv("WORKBENCH_API_KEY", KEY)  # the default variable, as workbench bench reads it
    p = BenchmarkParams(**TARGET, request_rate=[1.0, 2.0], goodput={"ttft": 2000, "tpot": 50}, percentiles=[95],
                        telemetry=False, server_metrics=False, duration_s=5)
    measure.sweep_unit(LocalHost("local"), 30000, p, {"variant": "u"})
    assert seen["concurrencies"] == [] and seen["rates"] == [1.0, 2.0] and seen["requests_per_concurrency"] is None
    assert (seen["slo"].ttft_ms, seen["slo"].tpot_ms, seen["slo"].e2e_ms) == (2000.0, 50.0, None)
    assert seen["percentiles"] == (50.0, 95.0, 99.0)
    assert seen["base"].headers == {"Authorization": f"Bearer {KEY}"} and seen["base"].duration_s == 5.0
    seen.clear()
    monkeypatch.delenv("WORKBENCH_API_KEY")
    measure.sweep_unit(LocalHost("local"), 30000, BenchmarkParams(**TARGET, telemetry=False), {"variant": "u"})
    assert seen["concurrencies"] == [1, 4, 16, 64] and seen["rates"] == [] and seen["requests_per_concurrency"] == 4
    assert seen["slo"] is None and seen["base"].headers == {}


@pytest.mark.parametrize("api_key_env", ["MY_KEY", ""])
def test_the_redactor_learns_the_key_and_header_values_by_reference(api_key_env: str) -> None:
    env = {"MY_KEY": KEY, "WORKBENCH_API_KEY": KEY, "TEAM_TOKEN": "team-canary-55"}
    params = BenchmarkParams(**TARGET).model_dump() | {"api_key_env": api_key_env, "headers": ["X-Team=TEAM_TOKEN"]}
    r = Redactor.for_params(params, environ=env)
    text = r.text(f"401 from server: got Authorization: Bearer {KEY}; X-Team team-canary-55; {KEY[:30]}...")
    assert KEY not in text and KEY[:30] not in text and "team-canary-55" not in text
    assert r.obj(params)["api_key_env"] == api_key_env  # the variable's name stays readable


def rate_results() -> pd.DataFrame:
    rows = []
    for arm, scale in (("A", 1.0), ("B", 1.2)):
        for rate in (1.0, 4.0):
            for rep, jitter in enumerate((0.99, 1.01)):
                rows.append({"arm": arm, "rate": rate, "concurrency": None, "repeat": rep, "completed": 8,
                             "output_throughput": 100 * rate * scale * jitter, "ttft_p50_ms": 30.0,
                             "ttft_p99_ms": 60.0, "tpot_p50_ms": 10.0, "tpot_p99_ms": 20.0, "ttft_p95_ms": 50.0,
                             "input_throughput": 50.0 * rate, "total_token_throughput": 150.0 * rate,
                             "goodput_rps": rate * 0.9, "failed": 0, "client_bound": False})
    return pd.DataFrame(rows)


def test_rate_points_in_every_result() -> None:
    res = rate_results()
    pts = measure.points(res[res["arm"] == "A"], by=("rate",))
    assert [(p["rate"], p["concurrency"]) for p in pts] == [(1.0, None), (4.0, None)]
    assert pts[1]["ttft_p95_ms"] == 50.0 and pts[1]["goodput_rps"] == pytest.approx(3.6)
    assert pts[1]["total_token_throughput"] == 600.0
    sweep_pts = sweep_points(res[res["arm"] == "A"], 8, Slo(None, None), "rate")
    assert [(p["rate"], p["concurrency"]) for p in sweep_pts] == [(1.0, None), (4.0, None)]
    assert sweep_pts[0]["goodput_rps"] == pytest.approx(0.9)
    rows = speedups(res)
    assert [r["rate"] for r in rows] == [1.0, 4.0] and "concurrency" not in rows[0]
    assert rows[0]["speedup"] == pytest.approx(1.2)
    assert re.search(r"rate=1/s: 1\.200x", conclusion("u.service", [("--x", "1")], rows, "better"))
    charts = measure.sweep_charts(res, pd.DataFrame(), {}, pd.DataFrame(), load_from="host", color="arm")
    assert "rate" in str(charts[0].to_dict())


def test_the_dataset_is_parsed_once_per_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.bench import options

    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "one", "output_len": 4}\n{"prompt": "two"}\n')
    calls: list[str] = []
    real = options.load_workload
    monkeypatch.setattr(options, "load_workload", lambda *a, **k: calls.append("parse") or real(*a, **k))
    p = BenchmarkParams(**TARGET, dataset=str(path))  # validation reads it
    assert len(p.spec("http://h:1").dataset) == 2 and len(p.spec("http://h:2").dataset) == 2
    assert calls == ["parse"]
    path.write_text('{"prompt": "three"}\n')  # a changed file is read again
    assert [it["prompt"] for it in p.spec("http://h:1").dataset] == ["three"] and len(calls) == 2
