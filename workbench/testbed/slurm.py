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
* node names other than ``localhost`` (a node called ``localhost`` gets the machine's host
  name, and a second node is then a fatal ``Duplicated NodeHostName``);
* one ``slurmd`` per address (Debian's build has no ``--enable-multiple-slurmd``), so a second
  node runs in a network namespace of its own (``nodes=2``: ``ip netns`` + a veth pair on
  10.214.0.0/24, the controller at .1), with its own spool, log and GPU state directories —
  and its own port 30000, as on a real second host;
* accounting is optional (``accounting=True``): Debian's ``slurmdbd`` over a MariaDB server of
  its own (``mariadb-server``; a data directory, a TCP port on loopback and a password of the
  cluster's, started as root with ``--no-defaults`` so the machine's own MariaDB configuration
  is neither read nor used), the cluster registered with ``sacctmgr``; ``sacct`` then answers
  for jobs ``scontrol`` has purged.  Without it ``sacct`` answers "Slurm accounting storage is
  disabled" and job states come from ``scontrol show job`` only (kept ``MinJobAge`` seconds
  after the end).

The seeds' baseline is written as the job script ``sglang-k26-ddtree.sbatch`` in the
cluster's script directory, running the simulated server from this repository.
"""

from __future__ import annotations

import hashlib
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
from workbench.testbed.ports import free_port

CLUSTER = "testbed"
NODE = "node1"  # not "localhost": Slurm gives that name the machine's own host name
SUBNET = "10.214.0"  # the second node's veth pair: the root side .1, the node .2
NODE2 = "node2"
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
{env}# workbench: server
exec python3 -m sglang.launch_server --model-path {model_dir} --served-model-name kimi-k2.6 \\
    --host 0.0.0.0 --port {port} --tp-size 8 --trust-remote-code \\
    --speculative-algorithm DDTREE --speculative-draft-model-path {draft_dir} \\
    --speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8 \\
    --mem-fraction-static 0.85 --cuda-graph-max-bs 64 --enable-metrics
"""

MULTINODE_SCRIPT = "sglang-k26-2node.sbatch"
# One job over two nodes, the way a Slurm user writes it: one task per node (srun), the node rank
# from SLURM_NODEID in each task, the rendezvous at the first node of SLURM_JOB_NODELIST (by its
# NodeAddr: node names need not resolve).  The server's argv stays one editable line: the task's
# shell adds the per-node words and execs it ("$0" "$@").
_MULTINODE = """#!/bin/bash
# Kimi K2.6 TP16 = 8 + 8 over two 8-GPU nodes + DDTree: one job, one server process tree per node.
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
#SBATCH --output={logs}/%x-%j.log
export PYTHONPATH={sim_site}
export PYTHONUNBUFFERED=1
HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
HEAD_ADDR=$(scontrol show node "$HEAD" -o | tr ' ' '\\n' | sed -n 's/^NodeAddr=//p')
export SIM_INIT_ADDR="${{HEAD_ADDR:-$HEAD}}:{init_port}"
# workbench: server
srun --label --kill-on-bad-exit=1 bash -c '{task_env}exec "$0" "$@" --node-rank "$SLURM_NODEID" --dist-init-addr "$SIM_INIT_ADDR"' \\
    python3 -m sglang.launch_server --model-path {model_dir} --served-model-name kimi-k2.6 \\
    --host 0.0.0.0 --port {port} --tp-size 16 --nnodes 2 --trust-remote-code \\
    --speculative-algorithm DDTREE --speculative-draft-model-path {draft_dir} \\
    --speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8 \\
    --mem-fraction-static 0.85 --cuda-graph-max-bs 64 --enable-metrics
"""


def job_scripts(*, logs: str, sim_site: str, model_dir: str, draft_dir: str, port: int, init_port: int,
                gpu_state: str | None = None) -> dict[str, str]:
    """The testbed's job scripts by name: the seeds' baseline and the two-node server.

    ``gpu_state``: a directory of the simulated GPUs' state per node (``$SLURMD_NODENAME``) where
    the nodes share one machine; None where each node is a host of its own."""
    env = f"export SIM_GPU_STATE_DIR={gpu_state}/$SLURMD_NODENAME\n" if gpu_state else ""
    task_env = f"export SIM_GPU_STATE_DIR={gpu_state}/$SLURMD_NODENAME; " if gpu_state else ""
    common = {"logs": logs, "sim_site": sim_site, "model_dir": model_dir, "draft_dir": draft_dir, "port": port}
    return {BASE_SCRIPT: _BASELINE.format(env=env, **common),
            MULTINODE_SCRIPT: _MULTINODE.format(task_env=task_env, init_port=init_port, **common)}


ACCOUNTING_BINARIES = ("slurmdbd", "mariadbd", "mariadb-install-db")


def available(*, accounting: bool = False) -> tuple[bool, str]:
    """Whether this machine can run the cluster (the Debian packages are installed)."""
    missing = [b for b in ("slurmctld", "slurmd", "sbatch", "munged") if shutil.which(b) is None]
    if missing:
        return False, f"missing {', '.join(missing)} (Debian packages slurm-wlm and munge)"
    missing = [b for b in ACCOUNTING_BINARIES if accounting and shutil.which(b) is None]
    if missing:
        return False, f"missing {', '.join(missing)} (Debian packages slurmdbd and mariadb-server)"
    if os.geteuid() != 0:
        return False, "slurmd must run as root"
    return True, ""


@dataclass
class LocalSlurm:
    """The cluster's state directory and its daemons."""

    root: Path
    server_port: int = 30000
    nodes: int = 1  # 2: a second slurmd in a network namespace of its own (see the module docstring)
    accounting: bool = False  # slurmdbd over a MariaDB of its own: sacct knows every ended job
    min_job_age: int = 600  # seconds the controller keeps an ended job (it purges once a minute)

    @property
    def netns(self) -> str:
        return "wbs-" + hashlib.sha1(str(self.root).encode()).hexdigest()[:8]

    @property
    def ctld_addr(self) -> str:
        return f"{SUBNET}.1" if self.nodes > 1 else "127.0.0.1"

    @property
    def node_addrs(self) -> dict[str, str]:
        if self.nodes == 1:
            return {NODE: "127.0.0.1"}
        if self.nodes == 2:
            return {NODE: f"{SUBNET}.1", NODE2: f"{SUBNET}.2"}
        raise ConfigError(f"the local Slurm testbed has 1 or 2 nodes, not {self.nodes}")

    def _net_up(self) -> None:
        """The second node's namespace: a veth pair, the root side the controller's address."""
        ns, veth = self.netns, self.netns[-8:]  # interface names: at most 15 characters
        for argv in (["ip", "netns", "add", ns],
                     ["ip", "link", "add", f"ws{veth}", "type", "veth", "peer", "name", "eth0", "netns", ns],
                     ["ip", "addr", "add", f"{SUBNET}.1/24", "dev", f"ws{veth}"],
                     ["ip", "link", "set", f"ws{veth}", "up"],
                     ["ip", "-n", ns, "addr", "add", f"{SUBNET}.2/24", "dev", "eth0"],
                     ["ip", "-n", ns, "link", "set", "eth0", "up"],
                     ["ip", "-n", ns, "link", "set", "lo", "up"]):
            subprocess.run(argv, check=True, capture_output=True, timeout=10)

    def _net_down(self) -> None:
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True, timeout=10, check=False)
        subprocess.run(["ip", "link", "del", f"ws{self.netns[-8:]}"], capture_output=True, timeout=10, check=False)

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
        for d in ("state", "spool", "log", "dev", "scripts", "logs", "munge", "gpu-state", *(
                f"gpu-state/{n}" for n in self.node_addrs), *(f"spool/{n}" for n in self.node_addrs)):
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
        ctld, slurmd = free_port(), free_port()
        accounting = self._write_accounting() if self.accounting else ["AccountingStorageType=accounting_storage/none"]
        self.conf.write_text("\n".join([
            f"ClusterName={CLUSTER}", f"SlurmctldHost={socket.gethostname()}({self.ctld_addr})",
            "AuthType=auth/munge",
            f"AuthInfo=socket={r}/munge/munge.socket",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core", "GresTypes=gpu", "SlurmUser=root", "SlurmdUser=root",
            f"StateSaveLocation={r}/state",
            f"SlurmctldPidFile={r}/slurmctld.pid", f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmctldPort={ctld}", f"SlurmdPort={slurmd}", "JobAcctGatherType=jobacct_gather/none",
            f"SlurmdSpoolDir={r}/spool/%n", f"SlurmdPidFile={r}/slurmd-%n.pid", f"SlurmdLogFile={r}/log/slurmd-%n.log",
            *accounting, "MpiDefault=none", "ReturnToService=2",
            f"MinJobAge={self.min_job_age}", "KillWait=5", "SchedulerParameters=sched_interval=1",
            *[f"NodeName={n} NodeHostName={n} NodeAddr={a} CPUs={os.cpu_count() or 2} RealMemory=1000 Gres=gpu:8 State=UNKNOWN"
              for n, a in self.node_addrs.items()],
            f"PartitionName=gpu Nodes={','.join(self.node_addrs)} Default=YES MaxTime=INFINITE State=UP", ""]))
        (r / "gres.conf").write_text("".join(f"NodeName={n} Name=gpu File={r}/dev/nvidia[0-7]\n"
                                             for n in self.node_addrs))
        scripts = job_scripts(logs=str(r / "logs"), sim_site=str(Path(_sim_pkg.__file__).parent),
                              model_dir=str(MODELS / "Kimi-K2.6"), draft_dir=str(MODELS / "Kimi-K2.6-DFlash"),
                              port=self.server_port, init_port=free_port(), gpu_state=str(r / "gpu-state"))
        for name, text in scripts.items():
            if name == BASE_SCRIPT or self.nodes > 1:
                (self.script_dir / name).write_text(text)

    def _write_accounting(self) -> list[str]:
        """slurmdbd.conf (beside slurm.conf, where slurmdbd looks, mode 600) and MariaDB's first
        statements; the slurm.conf lines that send the controller's records to slurmdbd."""
        r = self.root
        db_port, dbd_port = free_port(), free_port()
        password = os.urandom(12).hex()
        (r / "db").mkdir(exist_ok=True)
        (r / "db" / "init.sql").write_text(
            f"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}';\n"
            f"ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}';\n"
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';\n")
        (r / "db" / "port").write_text(str(db_port))
        dbd = r / "slurmdbd.conf"
        dbd.touch(mode=0o600)
        os.chmod(dbd, 0o600)  # slurmdbd refuses a configuration others can read (it holds the password)
        dbd.write_text("\n".join([
            "AuthType=auth/munge", f"AuthInfo=socket={r}/munge/munge.socket", f"DbdHost={socket.gethostname()}",
            f"DbdAddr={self.ctld_addr}", f"DbdPort={dbd_port}", "SlurmUser=root", f"PidFile={r}/slurmdbd.pid",
            f"LogFile={r}/log/slurmdbd.log", "StorageType=accounting_storage/mysql", "StorageHost=127.0.0.1",
            f"StoragePort={db_port}", "StorageUser=slurm", f"StoragePass={password}", "StorageLoc=slurm_acct_db", ""]))
        return ["AccountingStorageType=accounting_storage/slurmdbd", f"AccountingStorageHost={self.ctld_addr}",
                f"AccountingStoragePort={dbd_port}",
                # the munge socket of the controller's and clients' connections to slurmdbd (the
                # machine's /run/munge one otherwise: AuthInfo is not read for them)
                f"AccountingStoragePass=socket={r}/munge/munge.socket"]

    def _database_up(self) -> None:
        """MariaDB (a data directory of its own, loopback only), then slurmdbd; the cluster
        registered before slurmctld first asks for it."""
        r, db = self.root, self.root / "db"
        port = (db / "port").read_text()
        if not (db / "data" / "mysql").is_dir():
            subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={db}/data", "--user=root",
                            "--auth-root-authentication-method=normal", "--skip-test-db",
                            "--innodb-log-file-size=8M"], check=True, capture_output=True, timeout=120)
        self._spawn("mariadbd", ["mariadbd", "--no-defaults", f"--datadir={db}/data", "--user=root",
                                 "--bind-address=127.0.0.1", f"--port={port}", f"--socket={db}/mariadb.sock",
                                 f"--pid-file={r}/mariadbd.pid", f"--log-error={r}/log/mariadbd.log",
                                 "--innodb-log-file-size=8M", f"--init-file={db}/init.sql", "--skip-name-resolve"])
        self._wait("MariaDB", ["mariadb-admin", "--no-defaults", f"--socket={db}/mariadb.sock", "-uroot", "ping"])
        self._spawn("slurmdbd", ["slurmdbd", "-D"])
        self._wait("slurmdbd", ["sacctmgr", "-n", "-P", "list", "cluster"])
        subprocess.run(["sacctmgr", "-i", "add", "cluster", CLUSTER], env={**os.environ, **self.env},
                       capture_output=True, timeout=30, check=False)  # already there after a restart

    def _wait(self, what: str, argv: list[str]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            res = subprocess.run(argv, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=30,
                                 check=False)
            if res.returncode == 0:
                return
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text()[-800:] for p in sorted((self.root / "log").glob("*.log")))
                self.down()
                raise ConfigError(f"the Slurm testbed's {what} did not answer in {START_TIMEOUT:.0f} s: "
                                  f"{(res.stderr or res.stdout).strip()[-400:]}\n{logs}")
            time.sleep(0.2)  # the daemon gives no readiness signal but its answers

    def _spawn(self, name: str, argv: list[str]) -> None:
        # Through a shell that backgrounds the daemon and exits: the daemon is no child of
        # ours (no zombie to reap, and it outlives a test process that dies).
        with open(self.root / "log" / f"{name}.out", "ab") as out:
            subprocess.run(["sh", "-c", 'exec "$@" &', "sh", *argv], stdout=out, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, start_new_session=True, env={**os.environ, **self.env},
                           check=True, timeout=10)

    def up(self) -> SlurmCluster:
        """Start munged, slurmctld and slurmd; return when the node is idle (bounded)."""
        ok, why = available(accounting=self.accounting)
        if not ok:
            raise ConfigError(f"cannot start the Slurm testbed: {why}")
        self.down()
        if self.nodes > 1:
            self._net_up()
        self._write()
        r = self.root
        self._spawn("munged", ["munged", "--force", "-F", f"--socket={r}/munge/munge.socket",
                               f"--key-file={r}/munge/munge.key", f"--pid-file={r}/munge/munged.pid",
                               f"--log-file={r}/log/munged.log", f"--seed-file={r}/munge/munged.seed"])
        if self.accounting:
            self._database_up()
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._spawn(f"slurmd-{NODE}", ["slurmd", "-D", "-f", str(self.conf), "-N", NODE])
        if self.nodes > 1:
            # nsenter, not ``ip netns exec``: that remounts /sys, hiding the cgroup tree slurmd reads
            self._spawn(f"slurmd-{NODE2}", ["nsenter", f"--net=/run/netns/{self.netns}",
                                             "slurmd", "-D", "-f", str(self.conf), "-N", NODE2])
        cluster = self.cluster()
        deadline = time.monotonic() + START_TIMEOUT
        last = ""
        while time.monotonic() < deadline:
            try:
                nodes = cluster.nodes()
                last = ", ".join(f"{n.name} {n.state}" for n in nodes)
                if len(nodes) == self.nodes and all(n.state == "idle" for n in nodes):
                    return cluster
            except Exception as exc:  # the controller is not answering yet
                last = str(exc)
            time.sleep(0.3)  # the daemons give no readiness signal but their answers
        logs = "\n".join(p.read_text()[-800:] for p in sorted((r / "log").glob("slurm*.log")))
        self.down()
        raise ConfigError(f"the Slurm testbed did not become idle in {START_TIMEOUT:.0f} s ({last})\n{logs}")

    def entry(self) -> dict[str, object]:
        """This cluster as :mod:`workbench.slurm.clusters` reads it."""
        # node1 is this machine's own network namespace: a job's server there is measured from here
        return {"submit_host": "local", "script_dir": str(self.script_dir), "partition": "gpu", "env": self.env,
                "node_hosts": {NODE: "local"}}

    def register(self, path: Path) -> None:
        """Write (or replace) this cluster's entry in the testbed's ``slurm.json``."""
        doc = json.loads(path.read_text()) if path.is_file() else {"clusters": {}}
        doc.setdefault("clusters", {})[CLUSTER] = self.entry()
        path.write_text(json.dumps(doc, indent=2))

    def down(self) -> None:
        """Cancel every job, stop the daemons (pid files), leave the state directory."""
        if self.conf.exists() and (self.root / "slurmctld.pid").exists():
            env = {**os.environ, **self.env}
            try:  # a controller that is gone cannot cancel anything: go on and stop the daemons
                subprocess.run(["scancel", "--full", "--user=root"], env=env, capture_output=True, timeout=10,
                               check=False)
                deadline = time.monotonic() + 10.0
                while time.monotonic() < deadline:  # the jobs' steps end before their slurmd (else they outlive it)
                    res = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True,
                                         timeout=10, check=False)
                    if res.returncode != 0 or not res.stdout.strip():
                        break
                    time.sleep(0.2)  # only the controller can say the jobs are gone
            except subprocess.TimeoutExpired:
                pass
        # the daemons at once (each takes a second or two to go), munged last: they need it to the end
        daemons = [p.name for p in self.root.glob("slurmd-*.pid")] + ["slurmctld.pid", "slurmdbd.pid", "mariadbd.pid"]
        for group in (daemons, ["munge/munged.pid"]):
            _stop([self.root / name for name in group])
        self._net_down()


def _stop(pid_files: list[Path]) -> None:
    """SIGTERM the daemons of these pid files, wait for them all (SIGKILL after 5 s), remove the files."""
    pids = []
    for path in pid_files:
        try:
            pids.append(int(path.read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            continue
        try:
            os.kill(pids[-1], signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5.0
    for pid in pids:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            if time.monotonic() > deadline:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                break
            time.sleep(0.05)  # waiting for a process we signalled to exit
    for path in pid_files:
        path.unlink(missing_ok=True)
