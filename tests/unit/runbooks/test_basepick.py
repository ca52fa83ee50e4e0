"""A runbook with no base named takes the one inference server running on its host, and says so."""

from __future__ import annotations

import shlex

import pytest

from workbench.errors import ConfigError
from workbench.runbooks import basepick
from workbench.runbooks import execute as ex
from workbench.runbooks.bisect import BisectParams
from workbench.runbooks.sweep import SweepParams
from workbench.services.base import server_engine

# command lines as the engines' docs and the testbed's units write them
LINES = {
    "sglang": ["/usr/bin/python3 -m sglang.launch_server --model-path /models/K2.6 --tp-size 8 --port 30000",
               "/usr/bin/podman run --rm --name s lmsysorg/sglang:latest python3 -m sglang.launch_server --tp 8",
               "sglang serve --model-path Qwen/Qwen3-8B"],
    "vllm": ["vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 8",
             "/opt/venv/bin/python -m vllm.entrypoints.openai.api_server --model /m --port 8000",
             "/opt/venv/bin/vllm serve /models/tiny --port 8000"],
    "trtllm": ["trtllm-serve /models/llama --backend pytorch --tp_size 8"],
    "lmdeploy": ["lmdeploy serve api_server internlm/internlm2_5-7b-chat --server-port 23333"],
    "": ["/usr/sbin/sshd -D", "/usr/bin/python3 /opt/toy/toy_server.py --port 31000",
         "/usr/bin/python3 -m http.server 8000"],
}


@pytest.mark.parametrize("engine, line", [(e, x) for e, xs in LINES.items() for x in xs])
def test_the_engine_a_command_line_serves(engine: str, line: str) -> None:
    assert server_engine(shlex.split(line)) == engine


def test_the_base_parameter_that_is_missing_and_the_one_host() -> None:
    fields = BisectParams.model_fields
    assert basepick.missing_base({"host": "gpu-a"}, fields) == "base_unit"
    assert basepick.missing_base({"host": "gpu-a", "base_unit": "x.service"}, fields) == ""
    assert basepick.the_host({"host": "gpu-a"}) == "gpu-a"
    assert basepick.the_host({"hosts": ["gpu-a"]}) == "gpu-a"
    assert basepick.the_host({"hosts": ["gpu-a", "gpu-b"]}) == ""  # a fleet: name the base
    assert basepick.the_host({"host": "slurm:testbed"}) == ""  # a cluster has no running servers to read


def test_what_the_pick_says() -> None:
    one = basepick.BasePick("base_unit", "gpu-a", ("sglang-k26-ddtree.service",))
    assert one.value == "sglang-k26-ddtree.service" and "the one inference server running on gpu-a" in one.words()
    two = basepick.BasePick("unit", "gpu-a", ("a.service", "b"))
    assert two.value is None and "several run on gpu-a: a.service, b" in two.words()
    none = basepick.BasePick("unit", "gpu-a", ())
    assert none.value is None and "no inference server runs on gpu-a" in none.words()


def _cli(monkeypatch: pytest.MonkeyPatch, tmp_path, servers: tuple[str, ...], *argv: str):
    from workbench.cli import main

    seen: dict[str, object] = {}
    reads: list[str] = []

    def fake_pick(field, host, **kw):
        reads.append(host)
        return basepick.BasePick(field, host, servers)

    def fake_execute(runbook, params, **kw):  # the seam: nothing runs
        seen.update(params)
        raise ConfigError("stopped at the seam")

    monkeypatch.setattr(basepick, "pick", fake_pick)
    monkeypatch.setattr(ex, "execute", fake_execute)
    code = main(["run", *argv, "--data-dir", str(tmp_path)])
    return code, seen, reads


def test_the_sweep_contract_line_takes_the_running_server(monkeypatch, tmp_path, capsys) -> None:
    code, seen, reads = _cli(monkeypatch, tmp_path, ("sglang-k26-ddtree.service",), "sweep", "-p", "host", "gpu-a",
                             "-p", "grid", '{"--cuda-graph-max-bs": ["64","128"], "--ep-size": ["1","8"]}',
                             "-p", "concurrency", "[1,16]")
    assert code == ex.EXIT_BAD_PARAMETERS  # the seam's stop
    assert reads == ["gpu-a"] and seen["base_unit"] == "sglang-k26-ddtree.service"
    assert "base_unit sglang-k26-ddtree.service: the one inference server running on gpu-a" in capsys.readouterr().err
    assert SweepParams.model_fields["base_unit"].is_required()


def test_a_container_base_then_takes_its_default_preset(monkeypatch, tmp_path, capsys) -> None:
    _, seen, reads = _cli(monkeypatch, tmp_path, ("sglang-k26-ddtree",), "bisect", "-p", "host", "gpu-c")
    err = capsys.readouterr().err
    assert reads == ["gpu-c"]
    assert seen["base_unit"] == "sglang-k26-ddtree" and "edits from the preset 'seeds-k26'" in err


def test_a_fleet_names_its_base_and_no_host_is_read(monkeypatch, tmp_path) -> None:
    _, seen, reads = _cli(monkeypatch, tmp_path, ("x.service",), "bisect", "-p", "hosts", '["gpu-a", "gpu-b"]',
                          "-p", "edits", '{"--ep-size": "8"}')
    assert reads == [] and "base_unit" not in seen  # left to the runbook's own missing-parameter error


def test_other_bad_parameters_are_refused_before_the_host_is_read(monkeypatch, tmp_path, capsys) -> None:
    code, _, reads = _cli(monkeypatch, tmp_path, ("x.service",), "sweep", "-p", "host", "gpu-a", "-p", "grid",
                          '{"--ep-size": ["1"]}', "-p", "repeats", "0")
    assert code == ex.EXIT_BAD_PARAMETERS and reads == []
    assert "repeats" in capsys.readouterr().err
    code, _, reads = _cli(monkeypatch, tmp_path, ("a.service", "b.service"), "benchmark", "--host", "gpu-b")
    assert code == ex.EXIT_BAD_PARAMETERS and reads == ["gpu-b"]
    assert "several run on gpu-b: a.service, b.service" in capsys.readouterr().err
