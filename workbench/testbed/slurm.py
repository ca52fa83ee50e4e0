"""A real Slurm cluster on this machine for the tests: munged, slurmctld and one slurmd.

Debian's ``slurm-wlm`` 22.05 and ``munge``, started from a state directory of their own
(own munge socket and key, own ports on loopback), so nothing of the machine's own
configuration is read or changed.  What works here (found on this machine, 2026-12):

* ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``: cgroups are not
  delegated to the container the tests run in;
* GRES ``gpu:8`` needs ``File=`` entries that are character devices (plain files are
  refused, ``Count=`` alone reports 0 GPUs and the node goes ``INVAL``): eight ``c 1 3``
  nodes (the same device numbers as /dev/null) stand in for /dev/nvidia0-7, and Slurm sets
  ``CUDA_VISIBLE_DEVICES`` from them as on a real GPU node;
* one ``slurmd`` per machine: Debian's build has no ``--enable-multiple-slurmd``
  (a second node on the same address is a fatal ``Duplicated NodeHostName``), so parallel
  trials need nodes in their own network namespaces (the nspawn testbed's hosts);
* no accounting daemon: ``sacct`` answers "Slurm accounting storage is disabled"; job
  states come from ``scontrol show job`` (kept ``MinJobAge`` seconds after the end).

The seeds' baseline is written as the job script ``sglang-k26-ddtree.sbatch`` in the
cluster's script directory, running the simulated server from this repository.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import workbench.sim as _sim_pkg
from workbench.errors import ConfigError
from workbench.hosts import LocalHost
from workbench.slurm.cluster import SlurmCluster

CLUSTER = "testbed"
NODE = "localhost"
BASE_SCRIPT = "sglang-k26-ddtree.sbatch"
MODELS = Path(__file__).with_name("models")  # config.json only, as the nspawn hosts get them
START_TIMEOUT = 30.0

_BASELINE = """#!/bin/bash
# The seeds' working baseline as a Slurm job: Kimi K2.6, TP8 + DDTree on one 8-GPU node.
#SBATCH --nodes=1
#SBATCH --gres=gpu:8
#SBATCH --output={logs}/%x-%j.log
export PYTHONPATH={sim_site}
export PYTHONUNBUFFERED=1
export SIM_GPU_STATE_DIR={gpu_state}
# workbench: server
exec python3 -m sglang.launch_server --model-path {model_dir} --served-model-name kimi-k2.6 \\
    --host 127.0.0.1 --port {port} --tp-size 8 --trust-remote-code \\
    --speculative-algorithm DDTREE --speculative-draft-model-path {draft_dir} \\
    --speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8 \\
    --mem-fraction-static 0.85 --cuda-graph-max-bs 64 --enable-metrics
"""


def available() -> tuple[bool, str]:
    """Whether this machine can run the cluster (the Debian packages are installed)."""
    missing = [b for b in ("slurmctld", "slurmd", "sbatch", "munged") if shutil.which(b) is None]
    if missing:
        return False, f"missing {', '.join(missing)} (Debian packages slurm-wlm and munge)"
    if os.geteuid() != 0:
        return False, "slurmd must run as root"
    return True, ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalSlurm:
    """The cluster's state directory and its daemons."""

    root: Path
    server_port: int = 30000

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    @property
    def script_dir(self) -> Path:
        return self.root / "scripts"

    def cluster(self) -> SlurmCluster:
        return SlurmCluster(LocalHost(f"slurm:{CLUSTER}"), name=CLUSTER, script_dir=str(self.script_dir),
                            partition="gpu", env=self.env)

    def _write(self) -> None:
        r = self.root
        for d in ("state", "spool", "log", "dev", "scripts", "logs", "munge", "gpu-state"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r / "munge", 0o700)
        key = r / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            os.chmod(key, 0o400)
        for i in range(8):
            dev = r / "dev" / f"nvidia{i}"
            if not dev.exists():
                os.mknod(dev, 0o600 | 0o020000, os.makedev(1, 3))
        ctld, slurmd = _free_port(), _free_port()
        self.conf.write_text("\n".join([
            f"ClusterName={CLUSTER}", f"SlurmctldHost={NODE}(127.0.0.1)", "AuthType=auth/munge",
            f"AuthInfo=socket={r}/munge/munge.socket",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core", "GresTypes=gpu", "SlurmUser=root", "SlurmdUser=root",
            f"StateSaveLocation={r}/state", f"SlurmdSpoolDir={r}/spool",
            f"SlurmctldPidFile={r}/slurmctld.pid", f"SlurmdPidFile={r}/slurmd.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log", f"SlurmdLogFile={r}/log/slurmd.log",
            f"SlurmctldPort={ctld}", f"SlurmdPort={slurmd}", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "MpiDefault=none", "ReturnToService=2",
            "MinJobAge=600", "KillWait=5", "SchedulerParameters=sched_interval=1",
            f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 2} RealMemory=1000 Gres=gpu:8 State=UNKNOWN",
            f"PartitionName=gpu Nodes={NODE} Default=YES MaxTime=INFINITE State=UP", ""]))
        (r / "gres.conf").write_text(f"NodeName={NODE} Name=gpu File={r}/dev/nvidia[0-7]\n")
        (self.script_dir / BASE_SCRIPT).write_text(_BASELINE.format(
            logs=r / "logs", sim_site=Path(_sim_pkg.__file__).parent, gpu_state=r / "gpu-state",
            model_dir=MODELS / "Kimi-K2.6", draft_dir=MODELS / "Kimi-K2.6-DFlash", port=self.server_port))

    def _spawn(self, name: str, argv: list[str]) -> None:
        # Through a shell that backgrounds the daemon and exits: the daemon is no child of
        # ours (no zombie to reap, and it outlives a test process that dies).
        with open(self.root / "log" / f"{name}.out", "ab") as out:
            subprocess.run(["sh", "-c", 'exec "$@" &', "sh", *argv], stdout=out, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, start_new_session=True, env={**os.environ, **self.env},
                           check=True, timeout=10)

    def up(self) -> SlurmCluster:
        """Start munged, slurmctld and slurmd; return when the node is idle (bounded)."""
        ok, why = available()
        if not ok:
            raise ConfigError(f"cannot start the Slurm testbed: {why}")
        self.down()
        self._write()
        r = self.root
        self._spawn("munged", ["munged", "--force", "-F", f"--socket={r}/munge/munge.socket",
                               f"--key-file={r}/munge/munge.key", f"--pid-file={r}/munge/munged.pid",
                               f"--log-file={r}/log/munged.log", f"--seed-file={r}/munge/munged.seed"])
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", NODE])
        cluster = self.cluster()
        deadline = time.monotonic() + START_TIMEOUT
        last = ""
        while time.monotonic() < deadline:
            try:
                nodes = cluster.nodes()
                last = ", ".join(f"{n.name} {n.state}" for n in nodes)
                if nodes and all(n.state == "idle" for n in nodes):
                    return cluster
            except Exception as exc:  # the controller is not answering yet
                last = str(exc)
            time.sleep(0.3)  # the daemons give no readiness signal but their answers
        logs = "\n".join((r / "log" / f).read_text()[-800:] for f in ("slurmctld.log", "slurmd.log")
                         if (r / "log" / f).exists())
        self.down()
        raise ConfigError(f"the Slurm testbed did not become idle in {START_TIMEOUT:.0f} s ({last})\n{logs}")

    def entry(self) -> dict[str, object]:
        """This cluster as :mod:`workbench.slurm.clusters` reads it."""
        return {"submit_host": "local", "script_dir": str(self.script_dir), "partition": "gpu", "env": self.env}

    def register(self, path: Path) -> None:
        """Write (or replace) this cluster's entry in the testbed's ``slurm.json``."""
        doc = json.loads(path.read_text()) if path.is_file() else {"clusters": {}}
        doc.setdefault("clusters", {})[CLUSTER] = self.entry()
        path.write_text(json.dumps(doc, indent=2))

    def down(self) -> None:
        """Cancel every job, stop the daemons (pid files), leave the state directory."""
        if self.conf.exists() and (self.root / "slurmctld.pid").exists():
            subprocess.run(["scancel", "--full", "--user=root"], env={**os.environ, **self.env},
                           capture_output=True, timeout=15, check=False)
        for pid_file in ("slurmd.pid", "slurmctld.pid", "munge/munged.pid"):
            path = self.root / pid_file
            try:
                pid = int(path.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)  # waiting for a process we signalled to exit
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            path.unlink(missing_ok=True)
