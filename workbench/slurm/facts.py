"""Slurm facts: command builders and parsers of the scheduler's real output (pure; no I/O).

pyinfra's shape: each fact is a command (argv) and a parser of what that command prints.
The parsers read ``scontrol show job|node|partition -o`` (one record a line, ``Key=Value``
pairs; stable across Slurm releases, unlike ``--json``'s OpenAPI versions), ``sinfo``,
``squeue`` and ``sacct`` with an explicit ``|``-separated format, and ``sbatch --parsable``.  The fixtures
in ``tests/fixtures/slurm/`` are real output (``capture.sh`` there made them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from workbench.errors import ParseError

# A ``Key=`` starts where a space is followed by a name and ``=``; values may hold spaces
# (``OS=Linux 6.1 #1 SMP``, ``Reason=(ReqNodeNotAvail, ...)``).
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:.]*)=")

# Job states after which a job never runs again (``scontrol`` long names).
ENDED_STATES = frozenset({
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT",
})
SINFO_FORMAT = "%N|%T|%G|%P|%C|%E|%m"
SQUEUE_FORMAT = "%i|%j|%T|%r|%N|%P|%u|%M|%l|%b"
# ``sacct -P -o``: the fields of a job's accounting record that ``JobInfo`` holds (Slurm 22.05
# records no output path: ``StdOut`` came in 23.02).
SACCT_FIELDS = ("JobIDRaw", "JobName", "State", "ExitCode", "Reason", "NodeList", "Partition", "Submit", "Start",
                "End", "Timelimit", "User", "WorkDir")
# What sacct says where the cluster keeps no accounting (``AccountingStorageType=accounting_storage/none``).
ACCOUNTING_DISABLED = "accounting storage is disabled"


def parse_keyvalues(line: str) -> dict[str, str]:
    """One ``scontrol ... -o`` record as a dict (values stripped; ``(null)`` kept as text)."""
    matches = list(_KEY.finditer(line))
    out: dict[str, str] = {}
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        out[m.group(1)] = line[m.end():end].strip()
    return out


def _time(value: str | None) -> datetime | None:
    if not value or value in ("Unknown", "None", "N/A"):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _none(value: str | None) -> str | None:
    return None if value in (None, "", "(null)", "None", "N/A") else value


@dataclass(frozen=True)
class JobInfo:
    """One job as ``scontrol show job -o`` reports it."""

    job_id: str
    name: str
    state: str  # RUNNING, PENDING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    reason: str | None  # the pending or end reason (Resources, Priority, NonZeroExitCode, TimeLimit, ...)
    nodes: tuple[str, ...]  # expanded node names ("" while pending)
    node_list: str  # as Slurm writes it (n[1-2])
    partition: str | None
    exit_status: int  # the batch script's exit code
    exit_signal: int  # the signal that ended it (0 if none)
    submit_time: datetime | None
    start_time: datetime | None
    end_time: datetime | None
    time_limit: str | None
    stdout: str | None
    stderr: str | None
    command: str | None
    fields: dict[str, str] = field(default_factory=dict, repr=False)
    source: str = "scontrol"  # scontrol (the controller's live record) | sacct (the accounting database's)

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"

    @property
    def finished(self) -> bool:
        """Its script has exited: an end state, or one Slurm holds while it reaps what is left of the
        job (``COMPLETING`` can last minutes where a process will not die; ``STAGE_OUT``).  What a
        follower of the job acts on; the end state itself comes later."""
        return self.ended or self.state in ("COMPLETING", "STAGE_OUT")

    @property
    def head(self) -> str:
        """The job's first node (``SLURM_NODEID`` 0): where task 0 of a one-task-per-node ``srun``
        runs, so where a multi-node server serves HTTP; "" while pending."""
        return self.nodes[0] if self.nodes else ""

    @property
    def queue_seconds(self) -> float | None:
        """Submit → start: the wait in the queue (None while pending or unknown)."""
        if self.submit_time and self.start_time:
            return max(0.0, (self.start_time - self.submit_time).total_seconds())
        return None

    def describe(self) -> str:
        where = f" on {self.node_list}" if self.node_list else ""
        why = f" ({self.reason})" if self.reason else ""
        code = f", exit {self.exit_status}" + (f" signal {self.exit_signal}" if self.exit_signal else "") if self.ended else ""
        return f"job {self.job_id} {self.name}: {self.state}{why}{where}{code}"


def parse_job(line: str) -> JobInfo:
    """A :class:`JobInfo` from one ``scontrol show job -o`` line."""
    kv = parse_keyvalues(line)
    if "JobId" not in kv or "JobState" not in kv:
        raise ParseError(f"not a scontrol job record: {line[:120]!r}", source="scontrol show job", line=1)
    code, _, sig = kv.get("ExitCode", "0:0").partition(":")
    state = kv["JobState"].split()[0]
    node_list = _none(kv.get("NodeList")) or ""
    return JobInfo(
        job_id=kv["JobId"], name=kv.get("JobName", ""), state=state, reason=_none(kv.get("Reason")),
        nodes=tuple(expand_hostlist(node_list)), node_list=node_list, partition=_none(kv.get("Partition")),
        exit_status=int(code or 0), exit_signal=int(sig or 0),
        submit_time=_time(kv.get("SubmitTime")), start_time=_time(kv.get("StartTime")),
        end_time=_time(kv.get("EndTime")), time_limit=_none(kv.get("TimeLimit")),
        stdout=_none(kv.get("StdOut")), stderr=_none(kv.get("StdErr")), command=_none(kv.get("Command")),
        fields=kv,
    )


def parse_sacct(text: str) -> list[JobInfo]:
    """``sacct -P -n -X -o SACCT_FIELDS``: one :class:`JobInfo` per job allocation (``source`` sacct).

    sacct writes ``CANCELLED by 0`` (the state, then who), ``None assigned`` for a job that never
    got nodes, ``Unknown`` for a time not reached.  A job name holding ``|`` is put back together:
    every other field is read from the ends of the line."""
    jobs = []
    n = len(SACCT_FIELDS)
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) < n or not parts[0].isdigit():
            raise ParseError(f"sacct line with {len(parts)} fields, expected {n}: {line[:120]!r}", source="sacct",
                             line=i)
        extra = len(parts) - n
        kv = dict(zip(SACCT_FIELDS, [parts[0], "|".join(parts[1:2 + extra]), *parts[2 + extra:]], strict=True))
        code, _, sig = kv["ExitCode"].partition(":")
        node_list = "" if kv["NodeList"] in ("None assigned", "(null)") else kv["NodeList"]
        jobs.append(JobInfo(
            job_id=kv["JobIDRaw"], name=kv["JobName"], state=kv["State"].split()[0] if kv["State"] else "",
            reason=_none(kv["Reason"]), nodes=tuple(expand_hostlist(node_list)), node_list=node_list,
            partition=_none(kv["Partition"]), exit_status=int(code or 0) if code.isdigit() else 0,
            exit_signal=int(sig) if sig.isdigit() else 0, submit_time=_time(kv["Submit"]),
            start_time=_time(kv["Start"]), end_time=_time(kv["End"]), time_limit=_none(kv["Timelimit"]),
            stdout=None, stderr=None, command=None, fields=kv, source="sacct",
        ))
    return jobs


def job_gpus_per_node(job: JobInfo) -> int:
    """GPUs the job holds on each of its nodes (``TresPerNode=gres:gpu:8``, ``gres/gpu:h100=8``)."""
    total = 0
    for part in (job.fields.get("TresPerNode") or "").split(","):
        m = re.fullmatch(r"gres[:/]gpu(?::[\w.-]+)*[:=](\d+)", part.strip())
        if m:
            total += int(m.group(1))
    return total


def job_user(job: JobInfo) -> str:
    """The job's user name (``UserId=alice(1000)`` → ``alice``)."""
    return (job.fields.get("UserId") or "").split("(")[0]


def parse_jobs(text: str) -> list[JobInfo]:
    return [parse_job(line) for line in text.splitlines() if line.strip().startswith("JobId=")]


@dataclass(frozen=True)
class NodeInfo:
    name: str
    state: str  # idle, mixed, allocated, drained, down, ... (sinfo's long form)
    gres: str  # gpu:8, gpu:h100:8, (null)
    partitions: tuple[str, ...]
    cpus: str  # allocated/idle/other/total
    reason: str | None
    memory_mb: int | None

    @property
    def gpus(self) -> int:
        """Configured GPUs from the GRES string (``gpu:8``, ``gpu:h100:8(S:0-1)``)."""
        total = 0
        for part in self.gres.split(","):
            bits = part.split("(")[0].split(":")
            if bits[0] == "gpu" and bits[-1].isdigit():
                total += int(bits[-1])
        return total


def parse_sinfo_nodes(text: str) -> list[NodeInfo]:
    """``sinfo -h -N -o SINFO_FORMAT``: one line per node and partition, merged per node."""
    nodes: dict[str, NodeInfo] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 7:
            raise ParseError(f"sinfo line with {len(parts)} fields, expected 7: {line!r}", source="sinfo", line=1)
        name, state, gres, part, cpus, reason, mem = parts
        partition = part.rstrip("*")
        if name in nodes:
            old = nodes[name]
            nodes[name] = NodeInfo(old.name, old.state, old.gres, (*old.partitions, partition), old.cpus,
                                   old.reason, old.memory_mb)
            continue
        nodes[name] = NodeInfo(name, state, gres, (partition,), cpus, None if reason == "none" else reason,
                               int(mem) if mem.isdigit() else None)
    return list(nodes.values())


def parse_partitions(text: str) -> list[dict[str, str]]:
    """``scontrol show partition -o``: a dict per partition."""
    return [parse_keyvalues(line) for line in text.splitlines() if line.startswith("PartitionName=")]


def parse_sbatch(stdout: str) -> str:
    """The job id from ``sbatch --parsable`` (``123`` or ``123;cluster``)."""
    first = stdout.strip().splitlines()[0] if stdout.strip() else ""
    job_id = first.split(";")[0]
    if not job_id.isdigit():
        raise ParseError(f"sbatch --parsable printed no job id: {stdout[:120]!r}", source="sbatch", line=1)
    return job_id


def expand_hostlist(expr: str) -> list[str]:
    """Slurm's host list syntax expanded: ``n[1-3,07],login`` → n1 n2 n3 n07 login."""
    out: list[str] = []
    for item in _split_top(expr):
        m = re.fullmatch(r"(.*?)\[([^\]]+)\](.*)", item)
        if not m:
            if item:
                out.append(item)
            continue
        prefix, ranges, suffix = m.groups()
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            if hi:
                width = len(lo)
                out.extend(f"{prefix}{i:0{width}d}{suffix}" for i in range(int(lo), int(hi) + 1))
            else:
                out.append(f"{prefix}{lo}{suffix}")
    return out


def _split_top(expr: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in expr:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


# -- command builders (argv lists; the host quotes them with shlex.join) ----------------------

def show_job(job_id: str) -> list[str]:
    return ["scontrol", "show", "job", "-o", job_id]


def show_jobs() -> list[str]:
    return ["scontrol", "show", "job", "-o"]


def show_node(node: str) -> list[str]:
    return ["scontrol", "show", "node", "-o", node]


def sinfo_nodes() -> list[str]:
    return ["sinfo", "-h", "-N", "-o", SINFO_FORMAT]


def show_partitions() -> list[str]:
    return ["scontrol", "show", "partition", "-o"]


def version() -> list[str]:
    return ["sinfo", "-V"]


def sacct_jobs(job_ids: list[str] | None = None, *, names: list[str] | None = None,
               since: str = "now-7days") -> list[str]:
    """``sacct`` of the given jobs (any age), or of the jobs called ``names`` (else all of the
    user's) that ran since ``since``: job allocations only (``-X``: no steps), ``|``-separated."""
    argv = ["sacct", "-P", "-n", "-X", "-o", ",".join(SACCT_FIELDS)]
    if job_ids:
        return [*argv, "-j", ",".join(job_ids)]
    return [*argv, "-S", since, *(["--name", ",".join(names)] if names else [])]


def cancel(job_ids: list[str]) -> list[str]:
    return ["scancel", *job_ids]
