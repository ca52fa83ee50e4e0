"""A Slurm cluster reached through its submit host: the thin verbs that touch the scheduler.

Everything that changes the cluster goes through here (``sbatch``, ``scancel``); everything
it reads is parsed by :mod:`workbench.slurm.facts`.  The submit host is any
:class:`workbench.hosts.Host` (SSH alias or this machine).  Jobs the workbench submits carry
the name prefix ``wb-`` so that ``status`` can tell them from other users' jobs and a
cleanup can cancel exactly its own.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import ConfigError, ServiceError, UnitNotFound
from workbench.hosts import Host
from workbench.slurm import facts
from workbench.slurm.facts import JobInfo, NodeInfo
from workbench.slurm.script import JobScript, sbatch_argv

JOB_PREFIX = "wb-"
LOG_TAIL_BYTES = 8 << 20


class JobNotFound(UnitNotFound):
    """Slurm knows no such job (never submitted; or purged after ``MinJobAge`` and the cluster
    keeps no accounting, or its accounting has no record of it)."""


class SubmitError(ServiceError):
    """``sbatch`` refused the job (bad partition, account, GRES, time limit...)."""


def job_row(j: JobInfo) -> dict[str, Any]:
    """One job in ``status``: state, pending/end reason, nodes, exit code and signal, times."""
    return {"job_id": j.job_id, "name": j.name, "state": j.state, "reason": j.reason, "nodes": j.node_list,
            "exit_status": j.exit_status, "exit_signal": j.exit_signal, "queue_seconds": j.queue_seconds,
            "partition": j.partition, "time_limit": j.time_limit, "submit": j.submit_time, "start": j.start_time,
            "end": j.end_time, "source": j.source}


@dataclass
class SlurmCluster:
    """One cluster: its submit host, where its job scripts live, and default sbatch options."""

    host: Host
    name: str = "cluster"
    script_dir: str = ""  # where a bare script name such as ``sglang-k26-ddtree.sbatch`` is looked up
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # environment for every scheduler command
    node_hosts: Mapping[str, str] = field(default_factory=dict)  # node -> host alias to reach it by (else its name)
    _accounting: bool | None = field(default=None, init=False, repr=False)  # learnt from sacct's first answer

    def _run(self, argv: Sequence[str], *, input: str | None = None, env: Mapping[str, str] | None = None,
             timeout: float = 30.0) -> Any:
        merged = {**self.env, **(env or {})}
        return self.host.run(list(argv), input=input, env=merged or None, timeout=timeout)

    # -- reading -------------------------------------------------------------------------------

    def nodes(self) -> list[NodeInfo]:
        res = self._run(facts.sinfo_nodes())
        if not res.ok:
            raise ServiceError(f"{self.name}: sinfo failed: {res.tail(3)}", host=self.host.name)
        return facts.parse_sinfo_nodes(res.stdout)

    def node_addr(self, node: str) -> str:
        """Where ``node`` is reached (its ``NodeAddr``; node names need not resolve)."""
        res = self._run(facts.show_node(node))
        kv = facts.parse_keyvalues(res.stdout.strip()) if res.ok else {}
        return kv.get("NodeAddr") or node

    def node_host(self, node: str, *, ssh_config: str | None = None) -> Host:
        """A host on ``node``, to measure the server a job runs there: the node's alias in
        ``node_hosts``, else its name as an ssh_config alias (a Slurm user reaches the node of a
        running job by SSH: ``pam_slurm_adopt``)."""
        from workbench.hosts import connect

        return connect(self.node_hosts.get(node, node), ssh_config=ssh_config)

    def partitions(self) -> list[dict[str, str]]:
        res = self._run(facts.show_partitions())
        if not res.ok:
            raise ServiceError(f"{self.name}: scontrol show partition failed: {res.tail(3)}", host=self.host.name)
        return facts.parse_partitions(res.stdout)

    def jobs(self, *, ours: bool = True) -> list[JobInfo]:
        """Jobs Slurm still knows (running, pending, recently ended); only ``wb-`` ones by default."""
        res = self._run(facts.show_jobs())
        if not res.ok:
            if "No jobs in the system" in res.stdout + res.stderr:
                return []
            raise ServiceError(f"{self.name}: scontrol show job failed: {res.tail(3)}", host=self.host.name)
        jobs = facts.parse_jobs(res.stdout)
        return [j for j in jobs if j.name.startswith(JOB_PREFIX)] if ours else jobs

    def job(self, job_id: str) -> JobInfo:
        """The job as the controller knows it; once the controller has purged it (``MinJobAge``
        after its end), its record in the accounting database (``sacct``) where there is one."""
        if not job_id.isdigit():
            raise ConfigError(f"not a Slurm job id: {job_id!r}")
        res = self._run(facts.show_job(job_id))
        if not res.ok or not res.stdout.strip():
            if "Invalid job id" in res.stderr + res.stdout:
                found = self.accounting_jobs([job_id])
                if found:
                    return found[-1]
                why = ("its accounting has no record of it" if found is not None
                       else "the cluster keeps no accounting (sacct: Slurm accounting storage is disabled)")
                raise JobNotFound(f"{self.name}: no job {job_id}: never submitted, or ended and purged by the "
                                  f"controller, and {why}", host=self.host.name, unit=job_id)
            raise ServiceError(f"{self.name}: scontrol show job {job_id} failed: {res.tail(3)}", host=self.host.name)
        return facts.parse_job(res.stdout.strip().splitlines()[0])

    @property
    def accounting(self) -> bool:
        """Whether the cluster keeps accounting (slurmdbd): ``sacct`` answers for ended jobs (False
        while its database does not answer; asked again next time)."""
        if self._accounting is None:
            try:
                self.accounting_jobs(["1"])
            except ServiceError:
                return False
        return bool(self._accounting)

    def accounting_jobs(self, job_ids: Sequence[str] = (), *, names: Sequence[str] = (),
                        since: str = "now-7days") -> list[JobInfo] | None:
        """Jobs from the accounting database (``sacct``): the ids given, else the user's jobs called
        ``names`` (all where none) since ``since``.  None where the cluster keeps no accounting."""
        if self._accounting is False:
            return None
        res = self._run(facts.sacct_jobs(list(job_ids), names=list(names), since=since))
        if facts.ACCOUNTING_DISABLED in (res.stderr + res.stdout).lower():
            self._accounting = False
            return None
        if not res.ok:
            raise ServiceError(f"{self.name}: sacct failed: {res.tail(3)}", host=self.host.name)
        self._accounting = True
        return facts.parse_sacct(res.stdout)

    def history(self, *, names: Sequence[str] = (), since: str = "now-7days") -> list[JobInfo] | None:
        """The workbench's jobs (called ``names`` where given) the controller has purged and the
        accounting database still has (since ``since``, oldest first); None where it keeps none."""
        live = {j.job_id for j in self.jobs(ours=False)}
        found = self.accounting_jobs(names=names, since=since)
        if found is None:
            return None
        return [j for j in found if j.name.startswith(JOB_PREFIX) and j.job_id not in live]

    def status(self) -> dict[str, Any]:
        """Partitions, nodes (state, GRES, GPUs, running jobs of anyone) and the workbench's jobs:
        ``workbench status slurm:NAME``."""
        every = self.jobs(ours=False)
        running: dict[str, list[JobInfo]] = {}
        for j in every:
            if j.running:
                for n in j.nodes:
                    running.setdefault(n, []).append(j)
        return {
            "cluster": self.name,
            "accounting": self.accounting,
            "partitions": [{"name": p.get("PartitionName"), "state": p.get("State"), "nodes": p.get("Nodes"),
                            "default": p.get("Default") == "YES", "max_time": p.get("MaxTime")}
                           for p in self.partitions()],
            "nodes": [{"name": n.name, "state": n.state, "gres": n.gres, "gpus": n.gpus,
                       "gpus_used": sum(facts.job_gpus_per_node(j) for j in running.get(n.name, [])),
                       "partitions": list(n.partitions), "cpus": n.cpus, "reason": n.reason,
                       "jobs": [{"job_id": j.job_id, "name": j.name, "user": facts.job_user(j),
                                 "ours": j.name.startswith(JOB_PREFIX)} for j in running.get(n.name, [])]}
                      for n in self.nodes()],
            "jobs": [job_row(j) for j in every if j.name.startswith(JOB_PREFIX)],
        }

    def fingerprint(self) -> str:
        """What a trial's verdict here depends on besides its job script (``unit_hash``): the Slurm
        version, the partition the jobs go to and its nodes with their GRES.  Trials of earlier runs
        are reused from the ledger while it is the same (a node added, a GRES changed, a Slurm
        upgrade or another partition: they run again)."""
        res = self._run(facts.version())
        if not res.ok:
            raise ServiceError(f"{self.name}: sinfo -V failed: {res.tail(3)}", host=self.host.name)
        partition = self.partition or next((str(p.get("PartitionName")) for p in self.partitions()
                                            if p.get("Default") == "YES"), "")
        nodes = sorted(f"{n.name}:{n.gres}" for n in self.nodes() if not partition or partition in n.partitions)
        text = "\n".join([res.stdout.strip(), f"partition {partition}", *nodes])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def script_path(self, name: str) -> str:
        """Where a job script named ``name`` lives on the submit host."""
        if not re.fullmatch(r"[A-Za-z0-9_./@+-]+", name) or ".." in name.split("/"):
            raise ConfigError(f"not a job script name: {name!r}")
        if name.startswith("/"):
            return name
        if not self.script_dir:
            raise ConfigError(f"{self.name}: no script directory configured for the bare name {name!r}; "
                              "give an absolute path")
        return posixpath.join(self.script_dir, name)

    def read_script(self, name: str) -> JobScript:
        path = self.script_path(name)
        res = self._run(["cat", "--", path])
        if not res.ok:
            raise ServiceError(f"{self.name}: no job script {path} on {self.host.name}", host=self.host.name,
                               unit=name)
        return JobScript(res.stdout)

    def log(self, job: JobInfo) -> str:
        """The job's output (stdout, then stderr where it is a separate file), last 8 MiB of each."""
        parts = []
        for path in dict.fromkeys(p for p in (job.stdout, job.stderr) if p and p != "/dev/null"):
            res = self._run(["tail", "-c", str(LOG_TAIL_BYTES), "--", path])
            if res.ok:
                parts.append(res.stdout)
        return "".join(parts)

    def output_after(self, job: JobInfo, lines: int) -> str:
        """The job's stdout after its first ``lines`` lines (what a follower of it has not read yet)."""
        if not job.stdout or job.stdout == "/dev/null":
            return ""
        res = self._run(["tail", "-n", f"+{int(lines) + 1}", "--", job.stdout])
        return res.stdout if res.ok else ""

    # -- changing ------------------------------------------------------------------------------

    def submit(self, script: JobScript, *, job_name: str, time_limit: str | None = None,
               env: Mapping[str, str] | None = None, extra: Sequence[str] = ()) -> str:
        """``sbatch`` the script (text on stdin); ``env`` values travel in sbatch's environment."""
        if not job_name.startswith(JOB_PREFIX):
            job_name = JOB_PREFIX + job_name
        argv = sbatch_argv(job_name=job_name, time_limit=time_limit, partition=self.partition,
                           account=self.account, qos=self.qos, export=sorted(env or {}), extra=extra)
        script.server  # noqa: B018 - a script without a server line is refused before submitting
        res = self._run(argv, input=script.text, env=env)
        if not res.ok:
            raise SubmitError(f"{self.name}: sbatch refused {job_name}: {(res.stderr or res.stdout).strip()[:400]}",
                              host=self.host.name, unit=job_name)
        return facts.parse_sbatch(res.stdout)

    def cancel(self, job_ids: Sequence[str], *, wait: float = 60.0) -> list[JobInfo]:
        """``scancel`` the jobs and wait (at most ``wait`` s) until Slurm says each has ended
        (a cancelled job is ``COMPLETING`` while its processes are killed); their last state."""
        ids = [j for j in job_ids if j]
        for j in ids:
            if not j.isdigit():
                raise ConfigError(f"not a Slurm job id: {j!r}")
        if not ids:
            return []
        self._run(facts.cancel(ids))
        deadline = time.monotonic() + wait
        while True:
            jobs = [self.job(j) for j in ids]
            if all(j.ended for j in jobs) or time.monotonic() > deadline:
                return jobs
            time.sleep(0.2)  # only the scheduler can say when the job's processes are gone
