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
from typing import TYPE_CHECKING

import workbench.sim as _sim_pkg
from workbench.testbed import net, paths
from workbench.testbed.provision import DRAFT_DIR, MODEL_DIR, install_models, write_if_changed
from workbench.testbed.units import render_unit

if TYPE_CHECKING:
    from workbench.hosts import Host

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


# -- a mixed deployment: node 0 the unit on gpu-a, node 1 a podman container on gpu-c ----------------
# gpu-c is the testbed's one container host (``--provision containers``); nodes are distinct hosts, so
# the container node pairs with gpu-a's unit (a second container host would cost another boot and image
# import: see docs/deployments.md).  The container is created, not started, as the 2-node unit is.
MIXED_DEPLOYMENT = "k26-mixed"
CONTAINER_NODE = "sglang-k26-2node-n1"
CONTAINER_HOST = "gpu-c"
MIXED_NODES = ((NODES[0], UNIT), (CONTAINER_HOST, CONTAINER_NODE))  # node rank = index
FAULT_DIR = FAULT_FILE.rsplit("/", 1)[0]


def mixed_deployment_toml() -> str:
    """The mixed deployment: the deployment's unit on gpu-a, the container by its name on gpu-c."""
    nodes = "".join(f'\n[[deployment.{MIXED_DEPLOYMENT}.node]]\nhost = "{h}"\nrank = {i}\n'
                    + (f'unit = "{u}"\n' if u != UNIT else "") for i, (h, u) in enumerate(MIXED_NODES))
    return (f"# The testbed's mixed deployment (a unit and a container).\n[deployment.{MIXED_DEPLOYMENT}]\n"
            f'unit = "{UNIT}"\nport = {HTTP_PORT}\njoin_timeout = {JOIN_TIMEOUT_S}\n{nodes}')


def container_node_create(init_addr: str, node_rank: int = 1) -> list[str]:
    """``podman create`` of the container node: the 2-node unit's command for ``node_rank`` (same
    flags, same init address: gpu-a's), in the testbed image (whose simulator is the tree that built
    it), on the host network, with the 2-node fault file's directory of its host mounted read-only."""
    from workbench.testbed.containers import IMAGE
    from workbench.testbed.provision import SIM_SITE
    from workbench.unitfile import UnitFile, split_command

    text = render_unit(UNIT, sim_site=SITE, model_dir=MODEL_DIR, draft_dir=DRAFT_DIR, port=str(HTTP_PORT),
                       node_rank=str(node_rank), init_addr=init_addr, environment="")
    (cmd,) = UnitFile.parse(text, source=UNIT).get_all("Service", "ExecStart")
    return ["podman", "create", "--name", CONTAINER_NODE, "--init", "--network", "host", "-w", "/root",
            "-v", f"{FAULT_DIR}:{FAULT_DIR}:ro", "-e", f"PYTHONPATH={SIM_SITE}", "-e", "PYTHONUNBUFFERED=1",
            "-e", f"SGLANG_SIM_FAULT_FILE={FAULT_FILE}", IMAGE, *split_command(cmd)[1]]


def ensure_container_node(host: Host, init_addr: str) -> None:
    """Put the container node on ``host`` (gpu-c) over its SSH seam: the fault file's directory with
    the simulator's default faults, and the container (stopped) unless one with this exact create
    command is there (one that differs is removed and created again)."""
    import json

    default = (Path(_sim_pkg.__file__).parent / "default_faults.toml").read_bytes()
    host.run(["mkdir", "-p", FAULT_DIR], check=True)
    host.put(default, FAULT_FILE)
    want = container_node_create(init_addr)
    res = host.run(["podman", "container", "inspect", "--", CONTAINER_NODE], timeout=60)
    if res.ok:
        (have,) = json.loads(res.stdout)
        if have["Config"]["CreateCommand"] == want:
            return
        host.run(["podman", "rm", "-f", "-t", "5", "--", CONTAINER_NODE], check=True, timeout=120)
    host.run(want, check=True, timeout=180)
    # podman completes a container's definition at its first start (HOME and HOSTNAME join Config.Env):
    # started and stopped once, it is as any container that has run, and a test's "as found" holds
    host.run(["podman", "start", "--", CONTAINER_NODE], check=True, timeout=120)
    host.run(["podman", "stop", "-t", "5", "--", CONTAINER_NODE], check=True, timeout=60)
