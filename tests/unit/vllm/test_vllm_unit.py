"""Rendering the vllm-tiny.service template."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.testbed import vllm as v

ROOT = Path("/root/.cache/workbench/vllm-env")
ENV = v.VllmEnv(
    root=ROOT,
    python=ROOT / "bin/python",
    version="0.32.0+cpu",
    recipe_hash="0123456789abcdef",
    bind_paths=(ROOT,),
)


def directives(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            out.setdefault(key, []).append(value)
    return out


def test_render_defaults() -> None:
    d = directives(v.render_vllm_unit(ENV))
    assert d["Type"] == ["exec"]
    envs = dict(e.split("=", 1) for e in d["Environment"])
    assert envs["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert envs["HF_HUB_OFFLINE"] == "1"
    assert envs["VLLM_CPU_OMP_THREADS_BIND"] == "auto"
    assert envs["LD_LIBRARY_PATH"] == str(ROOT / "lib/workbench-native")
    assert "0123456789abcdef" in d["Description"][0]


@pytest.mark.parametrize(
    "extra", [[], ["--tensor-parallel-size", "4"], ["--served-model-name", "a b"]]
)
def test_exec_start_matches_serve_argv(extra: list[str]) -> None:
    text = v.render_vllm_unit(ENV, model_dir="/models/m", port=8001, extra_flags=extra)
    (exec_start,) = directives(text)["ExecStart"]
    assert shlex.split(exec_start) == ENV.serve_argv("/models/m", 8001, extra)


def test_every_placeholder_is_filled() -> None:
    text = v.render_vllm_unit(ENV, omp_threads_bind="nobind", kvcache_gib=2)
    assert "@" not in "\n".join(ln for ln in text.splitlines() if not ln.startswith("#"))
    assert "Environment=VLLM_CPU_OMP_THREADS_BIND=nobind" in text
    assert "Environment=VLLM_CPU_KVCACHE_SPACE=2" in text


def test_render_unit_rejects_missing_and_unknown() -> None:
    with pytest.raises(ConfigError, match=r"missing \['B'\], unknown \['C'\]"):
        v.render_unit("x=@A@ y=@B@", {"A": "1", "C": "3"})
    assert v.render_unit("x=@A@ @A@", {"A": "1"}) == "x=1 1"


@pytest.mark.parametrize(
    ("arg", "quoted"),
    [
        ("/models/tiny-llama", "/models/tiny-llama"),
        ("a b", '"a b"'),
        ("100%", "100%%"),
        ("$HOME", '"$$HOME"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("", '""'),
        ('{"k": 1}', '"{\\"k\\": 1}"'),
    ],
)
def test_systemd_quote(arg: str, quoted: str) -> None:
    assert v.systemd_quote(arg) == quoted


@pytest.mark.parametrize("bad", ["", "a b", 'x"y', "a\\b"])
def test_environment_values_that_need_quoting_are_refused(bad: str) -> None:
    with pytest.raises(ConfigError):
        v.systemd_env_value(bad)


def test_bad_port_is_refused_before_rendering() -> None:
    with pytest.raises(ConfigError):
        v.render_vllm_unit(ENV, port=70000)
