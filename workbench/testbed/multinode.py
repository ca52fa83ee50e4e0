"""The ``multinode`` provisioner: a 2-node baseline ``sglang-k26-2node.service`` (gpu-a node 0, gpu-b node 1).

The unit is the same on both hosts but for ``--node-rank``; node 0 hosts the rendezvous at
``--dist-init-addr`` (gpu-a's testbed address).  It is installed, not enabled: a start costs 16
rank processes on a two-core machine, and a deployment starts it node by node (workers first).
The simulator tree goes to its own site directory so that a running testbed can take it without
touching the single-node server's tree under other users' feet.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import workbench.sim as _sim_pkg
from workbench.testbed import net, paths
from workbench.testbed.provision import DRAFT_DIR, MODEL_DIR, install_models, write_if_changed
from workbench.testbed.units import render_unit

UNIT = "sglang-k26-2node.service"
DEPLOYMENT = "k26-2node"
SITE = "/root/venv_sglang211_2node/lib/python3.12/site-packages"
INIT_PORT = 20000
HTTP_PORT = 30002
NODES = ("gpu-a", "gpu-b")  # node rank = index
JOIN_TIMEOUT_S = 120
# The 2-node server's own fault file (the single-node servers keep /etc/sglang-sim/faults.toml): the
# simulator's packaged defaults until a test or a user writes 2-node faults (``node = R``) into it.
FAULT_FILE = "/etc/sglang-sim/faults-2node.toml"


def deployment_toml(subnet: str = net.DEFAULT_SUBNET) -> str:
    """The deployment file the workbench reads for this server (see ``workbench.deployment``)."""
    nodes = "".join(f'\n[[deployment.{DEPLOYMENT}.node]]\nhost = "{h}"\nrank = {i}\n' for i, h in enumerate(NODES))
    return (f"# Written by the testbed's multinode provisioner.\n[deployment.{DEPLOYMENT}]\n"
            f'unit = "{UNIT}"\nport = {HTTP_PORT}\njoin_timeout = {JOIN_TIMEOUT_S}\n{nodes}')


@dataclass
class MultinodeProvisioner:
    name: str = "multinode"
    subnet: str = net.DEFAULT_SUBNET

    def binds(self) -> list[tuple[str, str]]:
        return []

    def init_addr(self) -> str:
        return f"{net.host_net(NODES[0], 0, self.subnet).address}:{INIT_PORT}"

    def unit_text(self, node_rank: int) -> str:
        return render_unit(UNIT, sim_site=SITE, model_dir=MODEL_DIR, draft_dir=DRAFT_DIR, port=str(HTTP_PORT),
                           node_rank=str(node_rank), init_addr=self.init_addr(),
                           environment=f"Environment=SGLANG_SIM_FAULT_FILE={FAULT_FILE}\n")

    def install(self, root: Path, host: str) -> None:
        if host not in NODES:
            return
        src = Path(_sim_pkg.__file__).parent
        dst = root / SITE.lstrip("/")
        staging = dst.with_name(dst.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(src, staging, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "tests"))
        shutil.rmtree(dst, ignore_errors=True)
        staging.rename(dst)
        install_models(root / MODEL_DIR.lstrip("/").rsplit("/", 1)[0])
        write_if_changed(root, f"/etc/systemd/system/{UNIT}", self.unit_text(NODES.index(host)))
        write_if_changed(root, FAULT_FILE, (src / "default_faults.toml").read_text())
        if host == NODES[0]:
            target = paths.state_dir() / "deployments.toml"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(deployment_toml(self.subnet))
