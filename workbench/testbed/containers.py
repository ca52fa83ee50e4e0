"""The ``containers`` provisioner: host ``gpu-c``, where the seeds' baseline runs as a podman container.

gpu-c boots a root filesystem with podman and crun stacked over the base tree (a cached
:class:`~workbench.testbed.rootfs.Layer`), with what podman needs inside systemd-nspawn:
catatonit as the containers' init (a server that kills its own process tree, as SGLang does
when a child dies, cannot end itself as PID 1 of a PID namespace: ``--init`` runs it under one),
every capability and the keyring system calls (``--capability=all``,
``--system-call-filter=add_key keyctl request_key``), ``crun``, cgroups disabled (they are
read-only in the nspawn host on a cgroup v1 machine), ``overlay`` storage on a tmpfs and file-based
events and logs.  The store lives under ``/run`` (a tmpfs): the kernel's overlayfs takes no upper
directory on the overlay root gpu-c boots from, and ``vfs`` copies the whole 160 MB image for every
``podman create`` (1-11 s a variant on two cores, against 40 ms); the setup unit imports the image
again at each boot (3 s).  No registry is reachable: the image is built here from the base tree plus the simulator
(a tar, ``podman import``ed at boot), and the container ``sglang-k26-ddtree`` is created from
it with the baseline's exact command and started; gpu-c has no systemd unit of that name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

import workbench.sim as _sim_pkg
from workbench.testbed import paths, rootfs
from workbench.testbed.provision import (
    BASE_UNIT,
    DRAFT_DIR,
    MODEL_DIR,
    MODELS_SRC,
    SIM_SITE,
    _write,
    enable_unit,
)
from workbench.testbed.units import render_unit
from workbench.unitfile import UnitFile, join_command, split_command

CONTAINER_HOSTS = ("gpu-c",)
IMAGE = "localhost/sglang-sim:latest"
CONTAINER = BASE_UNIT.removesuffix(".service")
IMAGE_DIR = "/var/lib/workbench-image"
SETUP_UNIT = "workbench-containers.service"
NSPAWN_ARGS = ("--capability=all", "--system-call-filter=add_key keyctl request_key")
NSPAWN_ENV = {"SYSTEMD_NSPAWN_API_VFS_WRITABLE": "network"}  # systemd's docs/ENVIRONMENT.md
PORT = "30000"
# The same baseline as a systemd unit whose ExecStart is `podman run` (a common deployment): on its
# own port, not enabled (the baseline container holds the GPUs); the container has its own name.
PODMAN_UNIT = "sglang-k26-podman.service"
PODMAN_CONTAINER = "sglang-k26-podman-ctr"
PODMAN_PORT = "30001"

_CONTAINERS_CONF = """\
# workbench testbed: podman inside systemd-nspawn
[containers]
cgroups = "disabled"
log_driver = "k8s-file"

[engine]
runtime = "crun"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""

_STORAGE_CONF = """\
[storage]
driver = "overlay"
runroot = "/run/containers/storage"
graphroot = "/run/containers/graph"
"""

LAYER = rootfs.Layer("containers", ("podman", "crun", "catatonit"), files=(
    ("/etc/containers/containers.conf", _CONTAINERS_CONF),
    ("/etc/containers/storage.conf", _STORAGE_CONF),
))

_NVIDIA_SMI = f"#!/bin/sh\nexec /usr/bin/python3 {SIM_SITE}/nvidia_smi.py \"$@\"\n"
_EXCLUDE = ("./usr/share/doc", "./usr/share/man", "./usr/share/locale", "./var/cache/apt", "./var/lib/apt/lists",
            "./etc/ssh/sshd_config.d", "./root/.ssh", "./.workbench-complete")


def baseline_argv() -> list[str]:
    """The seeds' baseline command (the same the systemd hosts' unit runs)."""
    text = render_unit(BASE_UNIT, sim_site=SIM_SITE, model_dir=MODEL_DIR, draft_dir=DRAFT_DIR, port=PORT,
                       environment="")
    (cmd,) = UnitFile.parse(text, source=BASE_UNIT).get_all("Service", "ExecStart")
    return split_command(cmd)[1]


def setup_script(digest: str) -> str:
    """Import the image when it is missing or stale and create the baseline container if absent.

    Started after boot over SSH (:meth:`ContainersProvisioner.after_boot`), as the workbench starts
    it later: a container started from a boot-time oneshot would live in (and die with) its cgroup."""
    import shlex

    create = ["podman", "create", "--name", CONTAINER, "--init", "--network", "host", "--restart", "on-failure",
              "-w", "/root", "-e", f"PYTHONPATH={SIM_SITE}", "-e", "PYTHONUNBUFFERED=1", IMAGE, *baseline_argv()]
    q = shlex.quote
    return f"""#!/bin/sh
# Written by the workbench testbed (containers provisioner).
set -e
want={q(digest)}
have=$(podman image inspect --format '{{{{index .Labels "workbench.sim-digest"}}}}' {IMAGE} 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  podman rm -f -t 5 {CONTAINER} >/dev/null 2>&1 || true
  podman rmi -f {IMAGE} >/dev/null 2>&1 || true
  podman import --change "LABEL workbench.sim-digest=$want" \\
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \\
    {IMAGE_DIR}/sim.tar {IMAGE} >/dev/null
fi
podman container exists {CONTAINER} || {shlex.join(create)} >/dev/null
"""


def podman_unit_text() -> str:
    """``sglang-k26-podman.service``: the baseline's command inside ``podman run --rm --replace``."""
    argv = baseline_argv()
    if "--port" in argv:
        argv[argv.index("--port") + 1] = PODMAN_PORT
    run = ["/usr/bin/podman", "run", "--rm", "--replace", "--name", PODMAN_CONTAINER, "--init", "--network", "host",
           "-w", "/root", "-e", f"PYTHONPATH={SIM_SITE}", "-e", "PYTHONUNBUFFERED=1", IMAGE, *argv]
    return f"""[Unit]
Description=SGLang K2.6 (simulated) in a podman container
After=network.target {SETUP_UNIT}
Wants={SETUP_UNIT}

[Service]
Type=exec
ExecStart={join_command(run)}
TimeoutStopSec=30
"""


_SETUP_UNIT_TEXT = """[Unit]
Description=workbench testbed: the image and the baseline container (created, not started)
After=network.target

[Service]
Type=oneshot
ExecStart=/bin/sh /usr/local/lib/workbench/containers-setup.sh
TimeoutStartSec=300

[Install]
WantedBy=multi-user.target
"""


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build_image_tar(base: Path) -> Path:
    """``<cache>/image-<digest>/sim.tar``: the base tree with the simulator, its nvidia-smi and models."""
    sim_src = Path(_sim_pkg.__file__).parent
    digest = hashlib.sha256(f"{base.name}:{_tree_digest(sim_src)}:{_tree_digest(MODELS_SRC)}".encode()).hexdigest()[:16]
    out = paths.rootfs_cache() / f"image-{digest}"
    if (out / "digest").is_file():
        return out
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if any(info.name == e or info.name.startswith(e + "/") for e in _EXCLUDE) else info

    with tarfile.open(tmp / "sim.tar", "w") as tar:
        tar.add(str(base), arcname=".", filter=keep)
        tar.add(str(sim_src), arcname="." + SIM_SITE,
                filter=lambda i: None if "__pycache__" in i.name or i.name.endswith(".pyc") or "/tests" in i.name
                else i)
        for model in sorted(p for p in MODELS_SRC.iterdir() if p.is_dir()):
            tar.add(str(model), arcname=f"./models/{model.name}")
        smi = tmp / "nvidia-smi"
        smi.write_text(_NVIDIA_SMI)
        smi.chmod(0o755)
        tar.add(str(smi), arcname="./usr/bin/nvidia-smi")
        smi.unlink()
    (tmp / "digest").write_text(digest + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


@dataclass
class ContainersProvisioner:
    """podman on ``gpu-c`` with the baseline as container ``sglang-k26-ddtree``; nothing on other hosts."""

    layer: Path
    image_dir: Path
    name: str = "containers"
    hosts: tuple[str, ...] = CONTAINER_HOSTS

    @classmethod
    def prepare(cls) -> ContainersProvisioner:
        base = rootfs.build()
        return cls(layer=rootfs.build_layer(base, LAYER), image_dir=build_image_tar(base))

    def binds(self) -> list[tuple[str, str]]:
        return [(str(self.image_dir), IMAGE_DIR)]

    def lower(self, host: str) -> str | None:
        """The layer stacked over the base tree for ``host`` (None: the base alone)."""
        return str(self.layer) if host in self.hosts else None

    def nspawn_args(self, host: str) -> list[str]:
        return list(NSPAWN_ARGS) if host in self.hosts else []

    def nspawn_env(self, host: str) -> dict[str, str]:
        """``/proc/sys/net`` writable (the host's own network namespace only): podman's bridge
        network needs ``ip_forward`` and its port mapping ``route_localnet``, so ``-p`` publishes."""
        return dict(NSPAWN_ENV) if host in self.hosts else {}

    def backends(self, host: str) -> list[str]:
        return ["container"] if host in self.hosts else []

    def after_boot(self, host: str) -> list[str] | None:
        """The command that starts the baseline once ``host`` answers over SSH (None: nothing to do)."""
        return ["podman", "start", CONTAINER] if host in self.hosts else None

    def install(self, root: Path, host: str) -> None:
        if host not in self.hosts:
            return
        # The baseline is the container here: no systemd unit of the same name beside it.
        (root / f"etc/systemd/system/{BASE_UNIT}").unlink(missing_ok=True)
        (root / f"etc/systemd/system/multi-user.target.wants/{BASE_UNIT}").unlink(missing_ok=True)
        digest = (self.image_dir / "digest").read_text().strip()
        _write(root, "/usr/local/lib/workbench/containers-setup.sh", setup_script(digest), 0o755)
        _write(root, f"/etc/systemd/system/{SETUP_UNIT}", _SETUP_UNIT_TEXT)
        enable_unit(root, SETUP_UNIT)
        _write(root, f"/etc/systemd/system/{PODMAN_UNIT}", podman_unit_text())
