"""The local testbed backend: simulated hosts on this machine whose services are plain processes.

For laptops without root or systemd-nspawn.  Each host is a directory under
the testbed state with the simulator, an ``nvidia-smi`` shim on its ``PATH``,
its own GPU state and its units (process backend of
:mod:`workbench.services`); ``hosts.json`` tells
:func:`workbench.hosts.connect` (through :mod:`workbench.inventory`) that ``gpu-a`` is such
a local host.  Ports
differ per host (``30000 + 10*i``) since they share the loopback interface.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from workbench.errors import ConfigError
from workbench.inventory import LEGACY_FILE, write_entries
from workbench.testbed import paths
from workbench.testbed.provision import BASE_UNIT, install_models
from workbench.testbed.units import render_unit

HOST_NAMES = [f"gpu-{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
BASE_PORT = 30000


def inventory_path() -> Path:
    return paths.inventory_file()


def load_inventory() -> dict[str, dict[str, object]]:
    """The testbed's hosts (either backend) as written in its inventory file: name -> entry."""
    try:
        return dict(json.loads(inventory_path().read_text()).get("hosts", {}))
    except (OSError, ValueError):
        return {}


def _is_local() -> bool:
    try:
        return json.loads(inventory_path().read_text()).get("backend") == "local"
    except (OSError, ValueError):
        return False


def _install_host(root: Path, index: int) -> dict[str, object]:
    import workbench.sim as sim_pkg

    site = root / "sim-site"
    if site.exists():
        shutil.rmtree(site)
    shutil.copytree(Path(sim_pkg.__file__).parent, site, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    gpu_state = root / "gpu-state"
    gpu_state.mkdir(parents=True, exist_ok=True)
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\nSIM_GPU_STATE_DIR="{gpu_state}" exec python3 "{site}/nvidia_smi.py" "$@"\n')
    smi.chmod(0o755)
    install_models(root / "models")
    units = root / "services" / "units"
    units.mkdir(parents=True, exist_ok=True)
    env_line = f'Environment="SIM_GPU_STATE_DIR={gpu_state}"\n'
    (units / BASE_UNIT).write_text(render_unit(
        BASE_UNIT, sim_site=str(site), model_dir=str(root / "models/Kimi-K2.6"),
        draft_dir=str(root / "models/Kimi-K2.6-DFlash"), port=str(BASE_PORT + 10 * index), environment=env_line))
    return {"transport": "local", "backend": "local", "backends": ["process"], "root": str(root),
            "services_root": str(root / "services"),
            "env": {"PATH": f"{bin_dir}:$PATH", "SIM_GPU_STATE_DIR": str(gpu_state)}}


def up(n_hosts: int = 2, *, provision: tuple[str, ...] = ("sim",), start_baseline: bool = True,
       progress: Callable[[str], None] = print) -> dict[str, dict[str, object]]:
    if not 1 <= n_hosts <= len(HOST_NAMES):
        raise ConfigError(f"--hosts must be between 1 and {len(HOST_NAMES)}")
    if set(provision) - {"sim"}:
        raise ConfigError(f"the local backend provisions only 'sim', not {sorted(set(provision) - {'sim'})}")
    if _is_local():
        down(progress=progress)
    hosts = {}
    for i in range(n_hosts):
        name = HOST_NAMES[i]
        hosts[name] = _install_host(paths.state_dir() / "local" / name, i)
    write_entries(inventory_path(), hosts=hosts, source="testbed", groups={"testbed": list(hosts)},
                  extra={"backend": "local"})
    # Earlier trees read their local hosts from inventory.json: keep it for them while the testbed runs.
    (inventory_path().parent / LEGACY_FILE).write_text(json.dumps({"backend": "local", "hosts": hosts}, indent=2))
    if start_baseline:
        from workbench.hosts import connect
        from workbench.services import services_for

        for name in hosts:
            services_for(connect(name)).start(BASE_UNIT)
    progress(f"local testbed up: {', '.join(hosts)} (services are plain processes)")
    return hosts


def down(*, progress: Callable[[str], None] = print) -> None:
    hosts = load_inventory() if _is_local() else {}
    if not hosts:
        return
    from workbench.hosts import connect
    from workbench.services import services_for

    for name in hosts:
        svc = services_for(connect(name))
        for unit in svc.units():
            if svc.status(unit).running:
                svc.stop(unit)
    shutil.rmtree(paths.state_dir() / "local", ignore_errors=True)
    inventory_path().unlink(missing_ok=True)
    (inventory_path().parent / LEGACY_FILE).unlink(missing_ok=True)
    progress(f"local testbed down: {', '.join(hosts)}")


def status() -> dict[str, object] | None:
    hosts = load_inventory() if _is_local() else {}
    if not hosts:
        return None
    from workbench.hosts import connect
    from workbench.services import services_for

    rows = []
    for name in hosts:
        svc = services_for(connect(name))
        st = svc.status(BASE_UNIT)
        rows.append({"name": name, "pid": st.main_pid, "alive": True, "baseline": st.describe()})
    return {"running": True, "backend": "local", "hosts": rows, "ssh_config": None}
