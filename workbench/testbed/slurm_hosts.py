"""The ``slurm`` provisioner: a Slurm cluster ``testbed`` on nspawn hosts of its own (gpu-d, gpu-e).

Both hosts boot Debian's ``slurm-wlm`` 22.05 and ``munge`` (a cached
:class:`~workbench.testbed.rootfs.Layer` stacked over the base tree) with the distribution's own
units: ``munge`` and ``slurmd`` on both, ``slurmctld`` on gpu-d, which is also the submit host
(reached by SSH like every testbed host).  What it takes inside systemd-nspawn (cgroups are
read-only there): ``proctrack/linuxproc`` and ``task/none``, no accounting daemon, one munge key
written into both trees (owned by the hosts' ``munge`` user), GRES ``gpu:8`` from eight character
devices (``c 1 3``) that stand in for /dev/nvidia0-7 (nspawn's /dev is its own tmpfs, so they live
under /var/lib/workbench-gpus), and a directory shared by both hosts (``/shared``: job scripts and
job output, as a cluster's shared file system) bound read-write.  The simulated server runs in the
jobs from the same tree as the units on the other hosts; the hosts' own baseline unit is not
enabled (the node's GPUs belong to its jobs).

The cluster is registered in the testbed's ``slurm.json`` (:mod:`workbench.slurm.clusters`).
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
from dataclasses import dataclass
from pathlib import Path

from workbench.testbed import net, paths, rootfs
from workbench.testbed.provision import BASE_UNIT, DRAFT_DIR, MODEL_DIR, SIM_SITE, _write
from workbench.testbed.slurm import CLUSTER, job_scripts

SLURM_HOSTS = ("gpu-d", "gpu-e")  # gpu-d: controller, submit host and node; gpu-e: node
CONTROLLER = SLURM_HOSTS[0]
SHARED = "/shared"
GPU_DIR = "/var/lib/workbench-gpus"
INIT_PORT = 20000
HTTP_PORT = 30000
LAYER = rootfs.Layer("slurm", ("slurm-wlm", "munge"))
HOST_INDEX = {f"gpu-{c}": i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}


def shared_dir() -> Path:
    """The directory both Slurm hosts see as ``/shared`` (removed with the hosts by ``testbed down``)."""
    return paths.state_dir() / "hosts" / "slurm-shared"


def registry_file() -> Path:
    return paths.state_dir() / "slurm.json"  # what workbench.slurm.clusters reads as the testbed's file


def slurm_conf(subnet: str, cpus: int) -> str:
    addr = {h: net.host_net(h, HOST_INDEX[h], subnet).address for h in SLURM_HOSTS}
    return "\n".join([
        "# Written by the workbench testbed (slurm provisioner).",
        f"ClusterName={CLUSTER}", f"SlurmctldHost={CONTROLLER}({addr[CONTROLLER]})",
        "AuthType=auth/munge", "CryptoType=crypto/munge",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",  # cgroups are read-only in nspawn
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "GresTypes=gpu",
        "SlurmUser=root", "SlurmdUser=root",
        "StateSaveLocation=/var/spool/slurmctld", "SlurmdSpoolDir=/var/spool/slurmd",
        "SlurmctldPidFile=/run/slurmctld.pid", "SlurmdPidFile=/run/slurmd.pid",
        "SlurmctldLogFile=/var/log/slurm/slurmctld.log", "SlurmdLogFile=/var/log/slurm/slurmd.log",
        "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
        "MpiDefault=none", "ReturnToService=2", "MinJobAge=600", "KillWait=5",
        "SchedulerParameters=sched_interval=1", "SlurmdTimeout=60",
        *[f"NodeName={h} NodeAddr={addr[h]} CPUs={cpus} RealMemory=1000 Gres=gpu:8 State=UNKNOWN"
          for h in SLURM_HOSTS],
        f"PartitionName=gpu Nodes={','.join(SLURM_HOSTS)} Default=YES MaxTime=INFINITE State=UP", ""])


def _uid_gid(root: Path, user: str) -> tuple[int, int]:
    for line in (root / "etc/passwd").read_text().splitlines():
        bits = line.split(":")
        if bits[0] == user:
            return int(bits[2]), int(bits[3])
    raise LookupError(f"no user {user} in {root}/etc/passwd")


@dataclass
class SlurmProvisioner:
    layer: Path
    name: str = "slurm"
    hosts: tuple[str, ...] = SLURM_HOSTS
    subnet: str = net.DEFAULT_SUBNET

    @classmethod
    def prepare(cls) -> SlurmProvisioner:
        return cls(layer=rootfs.build_layer(rootfs.build(), LAYER))

    @staticmethod
    def munge_key() -> bytes:
        """The cluster's munge key: made once for the hosts' life, the same in both trees."""
        key_file = shared_dir().parent / "slurm-munge.key"
        if not key_file.exists():
            key_file.parent.mkdir(parents=True, exist_ok=True)
            key_file.write_bytes(secrets.token_bytes(1024))
            key_file.chmod(0o400)
        return key_file.read_bytes()

    def binds(self) -> list[tuple[str, str]]:
        return []

    def lower(self, host: str) -> str | None:
        return str(self.layer) if host in self.hosts else None

    def nspawn_args(self, host: str) -> list[str]:
        return [f"--bind={shared_dir()}:{SHARED}"] if host in self.hosts else []

    def after_boot(self, host: str) -> list[str] | None:
        """On the controller: wait (bounded) until slurmctld answers."""
        if host != CONTROLLER:
            return None
        wait = ("for i in $(seq 200); do scontrol ping 2>/dev/null | grep -q UP && exit 0; sleep 0.3; done; "
                "scontrol ping; exit 1")
        return ["sh", "-c", shlex.quote(wait)]  # ssh joins its arguments with spaces: one quoted word

    def install(self, root: Path, host: str) -> None:
        if host not in self.hosts:
            return
        shared = shared_dir()
        for d in ("scripts", "logs"):
            (shared / d).mkdir(parents=True, exist_ok=True)
        # the node's GPUs belong to its jobs: no baseline unit of its own
        (root / f"etc/systemd/system/multi-user.target.wants/{BASE_UNIT}").unlink(missing_ok=True)
        if host != CONTROLLER:
            (root / "etc/systemd/system/multi-user.target.wants/slurmctld.service").unlink(missing_ok=True)
        _write(root, "/etc/slurm/slurm.conf", slurm_conf(self.subnet, os.cpu_count() or 2))
        _write(root, "/etc/slurm/gres.conf", f"Name=gpu File={GPU_DIR}/nvidia[0-7]\n")
        gpus = root / GPU_DIR.lstrip("/")
        gpus.mkdir(parents=True, exist_ok=True)
        for i in range(8):
            dev = gpus / f"nvidia{i}"
            if not dev.exists():
                os.mknod(dev, 0o600 | 0o020000, os.makedev(1, 3))
        key = root / "etc/munge/munge.key"
        key.parent.mkdir(parents=True, exist_ok=True)
        key.unlink(missing_ok=True)
        key.write_bytes(self.munge_key())
        uid, gid = _uid_gid(root, "munge")
        os.chown(key.parent, uid, gid)
        os.chown(key, uid, gid)
        key.chmod(0o400)
        for d in ("var/log/slurm", "var/spool/slurmctld", "var/spool/slurmd"):
            (root / d).mkdir(parents=True, exist_ok=True)
        if host == CONTROLLER:
            for name, text in job_scripts(logs=f"{SHARED}/logs", sim_site=SIM_SITE, model_dir=MODEL_DIR,
                                          draft_dir=DRAFT_DIR, port=HTTP_PORT, init_port=INIT_PORT).items():
                (shared / "scripts" / name).write_text(text)
            register()


def register() -> None:
    """The cluster in the testbed's ``slurm.json``: submit host gpu-d, scripts in /shared/scripts."""
    path = registry_file()
    doc = json.loads(path.read_text()) if path.is_file() else {"clusters": {}}
    doc.setdefault("clusters", {})[CLUSTER] = {"submit_host": CONTROLLER, "script_dir": f"{SHARED}/scripts",
                                               "partition": "gpu"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
