"""The ``vllm`` provisioner: what it mounts and installs into a testbed host (no host needed)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from workbench.services import exec_argv
from workbench.testbed import provision as prov
from workbench.testbed.vllm import VllmEnv

ROOT = Path("/root/.cache/workbench/vllm-env")
ENV = VllmEnv(root=ROOT, python=ROOT / "bin/python", version="0.32.0+cpu",
              recipe_hash="0123456789abcdef", bind_paths=(ROOT,))
MODEL = Path("/root/.cache/workbench/models/tiny-llama-s0")


def provisioner() -> prov.VllmProvisioner:
    return prov.VllmProvisioner(env=ENV, model_dir=MODEL)


def test_binds_the_venv_at_its_own_path_and_the_model_at_models_tiny_llama() -> None:
    assert provisioner().binds() == [(str(ROOT), str(ROOT)), (str(MODEL), "/models/tiny-llama")]


def test_a_pyenv_base_interpreter_is_mounted_too() -> None:
    env = VllmEnv(root=ROOT, python=ROOT / "bin/python", version="0.32.0+cpu", recipe_hash="x",
                  bind_paths=(ROOT, Path("/root/.pyenv/versions/3.11.7")))
    p = prov.VllmProvisioner(env=env, model_dir=MODEL)
    assert ("/root/.pyenv/versions/3.11.7", "/root/.pyenv/versions/3.11.7") in p.binds()


def test_install_writes_the_unit_and_does_not_enable_it(tmp_path: Path) -> None:
    provisioner().install(tmp_path, "gpu-a")
    unit = tmp_path / "etc/systemd/system/vllm-tiny.service"
    text = unit.read_text()
    assert exec_argv(text, prov.VLLM_UNIT) == ENV.serve_argv("/models/tiny-llama", 8000)
    assert "@" not in text  # every placeholder filled, the template's header not copied
    assert not (tmp_path / "etc/systemd/system/multi-user.target.wants/vllm-tiny.service").exists()
    assert oct(unit.stat().st_mode & 0o777) == "0o644"


def test_install_leaves_an_unchanged_unit_alone(tmp_path: Path) -> None:
    """A rewrite, even identical, bumps the mtime and systemd then wants a daemon-reload."""
    p = provisioner()
    p.install(tmp_path, "gpu-a")
    unit = tmp_path / "etc/systemd/system/vllm-tiny.service"
    before = unit.stat().st_mtime_ns
    p.install(tmp_path, "gpu-a")
    assert unit.stat().st_mtime_ns == before
    unit.write_text("stale\n")
    p.install(tmp_path, "gpu-a")
    assert unit.read_text() == p.unit_text()


def test_the_env_is_prepared_once_per_up_not_per_host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[str] = []
    monkeypatch.setattr(prov, "ensure_vllm_env", lambda: calls.append("env") or ENV)
    monkeypatch.setattr(prov, "make_tiny_model", lambda dest, env: calls.append("model") or MODEL)
    (p,) = prov.PROVISIONERS.make(["vllm"])
    for host in ("gpu-a", "gpu-b", "gpu-c"):  # what testbed.up does per host
        p.install(tmp_path / host, host)
        p.binds()
    assert calls == ["env", "model"]
    assert isinstance(p, prov.VllmProvisioner) and p.env is ENV and p.model_dir == MODEL


def test_unit_port_and_health_path_hooks() -> None:
    argv = shlex.split(provisioner().unit_text().split("ExecStart=", 1)[1].splitlines()[0])
    assert argv[argv.index("--port") + 1] == str(prov.VLLM_PORT) == "8000"
    assert prov.VLLM_HEALTH_PATH == "/health" and prov.VLLM_UNIT == "vllm-tiny.service"
