"""Provisioning: what goes into a testbed host besides the base system.

A provisioner writes files into a host's tree (before boot, or into a running
host: the tree is shared) and may ask for read-only bind mounts.  Register new
ones in :data:`PROVISIONERS`; ``workbench testbed up --provision sim,vllm``
picks them by name.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import workbench.sim as _sim_pkg
from workbench.testbed.units import render_unit

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

_MODEL_CONFIG = """{
  "architectures": ["KimiK25ForConditionalGeneration"],
  "model_type": "kimi_k25",
  "torch_dtype": "bfloat16",
  "text_config": {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_hidden_layers": 61,
    "n_routed_experts": 384,
    "num_experts_per_tok": 8,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "vocab_size": 163840,
    "max_position_embeddings": 262144
  },
  "quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized", "bits": 4}
}
"""


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
        _write(root, f"{MODEL_DIR}/config.json", _MODEL_CONFIG)
        _write(root, f"{DRAFT_DIR}/config.json", _MODEL_CONFIG.replace("KimiK25ForConditionalGeneration", "DFlashDraftModel"))
        _write(root, f"/etc/systemd/system/{BASE_UNIT}", render_unit("sglang-k26-ddtree.service", sim_site=SIM_SITE,
                                                                     model_dir=MODEL_DIR, draft_dir=DRAFT_DIR,
                                                                     port="30000", environment=""))
        if self.start_baseline:
            enable_unit(root, BASE_UNIT)


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
