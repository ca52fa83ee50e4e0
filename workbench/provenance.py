"""Provenance of a run: which host, GPUs, driver and software produced it (read-only, one round trip)."""

from __future__ import annotations

import platform
import shlex
from typing import Any

import workbench
from workbench.hosts import Host
from workbench.unitfile import UnitFile, split_command, split_environment

_SECTIONS = ("os", "kernel", "gpu", "python", "server")


def _probe_script(unit_text: str) -> str:
    """A shell script printing one ``@@section`` block per fact; the server's own interpreter
    reports the versions of sglang / vllm / torch it would import."""
    uf = UnitFile.parse(unit_text)
    env: dict[str, str] = {}
    for value in uf.get_all("Service", "Environment"):
        env.update(split_environment(value))
    argv: list[str] = []
    execs = uf.get_all("Service", "ExecStart")
    if execs:
        argv = split_command(execs[0])[1]
    python = argv[0] if argv and "python" in argv[0].rsplit("/", 1)[-1] else "python3"
    envs = " ".join(shlex.quote(f"{k}={v}") for k, v in env.items() if k in ("PYTHONPATH", "LD_LIBRARY_PATH"))
    code = ("import importlib\nfor m in ('sglang', 'vllm', 'torch'):\n"
            "    try:\n        print(m, getattr(importlib.import_module(m), '__version__', '?'))\n"
            "    except Exception:\n        pass\n")
    return (
        "echo @@os; . /etc/os-release 2>/dev/null && echo \"$PRETTY_NAME\"; "
        "echo @@kernel; uname -r; "
        "echo @@gpu; nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv,noheader 2>&1 | head -n 64; "
        "echo @@python; python3 --version 2>&1; "
        f"echo @@server; env {envs} {shlex.quote(python)} -c {shlex.quote(code)} 2>/dev/null; true"
    )


def collect(host: Host, unit_text: str = "") -> dict[str, Any]:
    """Host alias, OS, kernel, GPUs (name, count, driver, memory, power limit), software versions."""
    res = host.run(["sh", "-c", _probe_script(unit_text)], timeout=60)
    sections: dict[str, list[str]] = {}
    current = None
    for line in res.stdout.splitlines():
        if line.startswith("@@") and line[2:] in _SECTIONS:
            current = line[2:]
            sections[current] = []
        elif current:
            sections[current].append(line.strip())
    gpus = [g for g in sections.get("gpu", []) if g and "," in g]
    first = [p.strip() for p in gpus[0].split(",")] if gpus else []
    return {
        "host": host.name,
        "os": " ".join(sections.get("os", [])) or None,
        "kernel": " ".join(sections.get("kernel", [])) or None,
        "gpu": first[0] if first else None,
        "gpu_count": len(gpus),
        "driver": first[1] if len(first) > 1 else None,
        "gpu_memory": first[2] if len(first) > 2 else None,
        "power_limit": first[3] if len(first) > 3 else None,
        "host_python": " ".join(sections.get("python", [])) or None,
        "server_software": dict(line.split(" ", 1) for line in sections.get("server", []) if " " in line),
        "workbench": workbench.__version__,
        "controller_python": platform.python_version(),
    }
