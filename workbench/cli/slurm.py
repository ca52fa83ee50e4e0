"""``workbench status slurm:NAME``: a Slurm cluster's partitions, nodes and the workbench's jobs."""

from __future__ import annotations

import argparse
import json
from typing import Any


def status_lines(st: dict[str, Any]) -> list[str]:
    """The text ``workbench status slurm:NAME`` prints for :meth:`SlurmCluster.status`."""
    acct = st.get("accounting")
    lines = [f"cluster {st['cluster']}" + ("" if acct is None else " (accounting: sacct)" if acct else
                                           " (no accounting: a job the controller purged is gone)")]
    for p in st["partitions"]:
        lines.append(f"  partition {p['name']}{'*' if p['default'] else ''}: {p['state']}, nodes {p['nodes']}, "
                     f"max time {p['max_time']}")
    for n in st["nodes"]:
        jobs = ", ".join(f"{j['job_id']} {j['name']} ({j['user']})" for j in n["jobs"]) or "-"
        why = f" ({n['reason']})" if n["reason"] else ""
        lines.append(f"  node {n['name']:12} {n['state']:>10}{why}  gres={n['gres']} gpus {n['gpus_used']}/{n['gpus']} "
                     f"used  cpus(a/i/o/t)={n['cpus']}  running: {jobs}")
    ours = st["jobs"]
    lines.append(f"  workbench jobs: {len(ours)}" + ("" if ours else " (none)"))
    for j in ours:
        why = f" ({j['reason']})" if j["reason"] and j["reason"] != "None" else ""
        where = f" on {j['nodes']}" if j["nodes"] else ""
        ended = j["state"] not in ("PENDING", "RUNNING", "CONFIGURING", "SUSPENDED", "REQUEUED")
        code = f", exit {j.get('exit_status', 0)}" + (f" signal {j['exit_signal']}" if j.get("exit_signal") else "") \
            if ended else ""
        times = "".join(f" {k} {_hm(j.get(k))}" for k in ("start", "end") if j.get(k) and (k == "start" or ended))
        past = " [sacct]" if j.get("source") == "sacct" else ""
        lines.append(f"    {j['job_id']:>8} {j['name']:40} {j['state']}{why}{where}{code}{times}{past}")
    return lines


def _hm(when: Any) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S") if hasattr(when, "strftime") else str(when)


def status(args: argparse.Namespace) -> int:
    import sys

    from workbench.errors import ServiceError
    from workbench.slurm.clusters import connect_cluster

    cluster = connect_cluster(args.host, ssh_config=args.ssh_config)
    st = cluster.status()
    if args.pattern not in ("", "*"):  # a script, job id or glob: its jobs, those only sacct still has too
        from fnmatch import fnmatch

        from workbench.slurm.base import base_job_name
        from workbench.slurm.cluster import job_row

        def match(j: dict[str, Any]) -> bool:
            return bool(fnmatch(j["name"], args.pattern) or j["job_id"] == args.pattern
                        or j["name"] == base_job_name(args.pattern))

        try:
            plain = not any(c in args.pattern for c in "*?[") and not args.pattern.isdigit()
            names = [base_job_name(args.pattern), args.pattern] if plain else []  # else all of ours, matched here
            past = [job_row(j) for j in cluster.history(names=names) or []]
        except ServiceError as exc:  # the accounting database does not answer: what the controller knows
            print(f"workbench status: {exc}", file=sys.stderr)
            past = []
        if args.pattern.isdigit() and not any(j["job_id"] == args.pattern for j in st["jobs"] + past):
            past.append(job_row(cluster.job(args.pattern)))  # anyone's job, or JobNotFound (exit 2)
        st["jobs"] = [j for j in past + st["jobs"] if match(j)]
    if args.json:
        print(json.dumps(st, indent=2, default=str))
    else:
        print("\n".join(status_lines(st)))
    return 0


def variant(args: argparse.Namespace, edits: list[tuple[str, Any]]) -> int:
    """``workbench variant slurm:NAME SCRIPT --set ...``: the job script with edited flags as one new job,
    watched to ready or failure and cancelled after (``--plan``: the script that would be submitted)."""
    import sys

    from workbench.errors import ConfigError
    from workbench.slurm.clusters import connect_cluster
    from workbench.slurm.trial import run_job_trial

    if args.keep:
        raise ConfigError("--keep: a Slurm variant is a job the workbench cancels after its verdict "
                          "(submit the script with sbatch to keep one)")
    if args.env:
        raise ConfigError("--env: a Slurm variant edits the job script's server flags only")
    cluster = connect_cluster(args.host, ssh_config=args.ssh_config)
    base = cluster.read_script(args.unit)
    if args.plan:
        print(base.with_edits(edits).text, end="")
        return 0

    def line(kind: str, text: str) -> None:
        print(f"  {kind}: {text}", file=sys.stderr, flush=True)

    replaced = []
    if args.replace_base:  # the base job's nodes for the variant; the base job comes back after
        from workbench.slurm.base import base_jobs, start_base

        replaced = cluster.cancel([j.job_id for j in base_jobs(cluster, args.unit)])
        for j in replaced:
            line("replaced", f"base job {j.job_id} cancelled for the variant")
    try:
        trial = run_job_trial(cluster, base, edits, job_name="variant", timeout=args.timeout,
                              health_path=args.health, on_event=line)
    finally:
        if replaced:
            line("restored", f"base job {start_base(cluster, args.unit)} submitted again")
    row = {"job_id": trial.job_id, "outcome": trial.outcome, "phase": trial.phase, "node": trial.node,
           "queue_seconds": trial.queue_seconds, "seconds": round(trial.run_seconds, 2), "state": trial.state,
           "exception_type": trial.exception_type, "message": trial.message}
    if args.json:
        print(json.dumps(row, indent=2))
    else:
        what = f": {trial.exception_type}: {trial.message}" if trial.exception_type else ""
        print(f"job {trial.job_id} on {trial.node or '-'}: {trial.outcome} in {trial.phase} after "
              f"{trial.run_seconds:.1f} s ({trial.queue_seconds or 0:.0f} s queued){what}")
        print(f"job {trial.job_id} {trial.state.lower()}: no job left", file=sys.stderr)
    return 0 if trial.ok else 1


def verb(args: argparse.Namespace) -> int:
    """``workbench start|stop|restart slurm:NAME SCRIPT``: the job script as the base job (sbatch,
    ``--wait``: judged as a unit's start); ``stop`` also takes the job id (scancel)."""
    import dataclasses
    import sys

    from workbench.errors import ConfigError
    from workbench.slurm.base import start_base, stop_base
    from workbench.slurm.clusters import connect_cluster
    from workbench.slurm.script import sbatch_argv

    if not args.unit:
        raise ConfigError(f"{args.verb}: name the job script (or, for stop, the job id)")
    if args.verb != "stop" and args.unit.isdigit():
        raise ConfigError(f"{args.verb}: name the job script (a job id is only for stop)")
    opts = {k: getattr(args, k) for k in ("partition", "account", "qos") if getattr(args, k)}
    if opts and args.verb == "stop":
        raise ConfigError("stop: --partition/--account/--qos are for start and restart")
    sbatch_argv(job_name="check", **opts)  # bad values are refused before the cluster is asked
    cluster = dataclasses.replace(connect_cluster(args.host, ssh_config=args.ssh_config), **opts)
    if args.verb in ("stop", "restart"):
        try:
            for j in stop_base(cluster, args.unit):
                print(f"job {j.job_id} {j.name}: {j.state.lower()}")
        except LookupError:
            if args.verb == "stop":
                raise
    if args.verb == "stop":
        return 0

    def line(kind: str, text: str) -> None:
        print(f"  {kind}: {text}", file=sys.stderr, flush=True)

    got = start_base(cluster, args.unit, wait=args.wait, timeout=args.timeout, health_path=args.health,
                     on_event=line)
    if isinstance(got, str):
        print(f"job {got} submitted: base job of {args.unit}")
        return 0
    what = f": {got.exception_type}: {got.message} [{got.signature}]" if got.outcome != "ready" else ""
    print(f"job {got.job_id} on {got.node or '-'}: {got.outcome} in {got.phase} after {got.run_seconds:.1f} s "
          f"({got.queue_seconds or 0:.0f} s queued){what}")
    if not got.ok:
        print(f"job {got.job_id} {got.state.lower()}: no job left", file=sys.stderr)
    return 0 if got.ok else 1


def journal(args: argparse.Namespace, show: Any) -> int:
    """``workbench journal slurm:NAME JOBID|SCRIPT``: the job's output as the journal frame (filters
    and formats as for a unit; ``--list``: the jobs, one per invocation)."""
    from workbench.errors import ConfigError
    from workbench.journal.filter import filter
    from workbench.slurm.clusters import connect_cluster
    from workbench.slurm.journal import job_frame, jobs_for

    for opt in ("since", "until", "after_cursor", "invocation", "last"):
        if getattr(args, opt, None) not in (None, False):
            raise ConfigError(f"--{opt.replace('_', '-')}: not for a Slurm job's output (name the job id)")
    cluster = connect_cluster(args.host, ssh_config=args.ssh_config)
    jobs = jobs_for(cluster, args.unit)

    def pick(frame: Any) -> Any:
        return filter(frame, include=args.grep, exclude=args.exclude, level=args.level, rank=args.rank,
                      phase=args.phase)

    if args.follow:
        return _follow(args, cluster, max(jobs, key=lambda j: int(j.job_id)), pick, show)
    if args.list:
        rows = [{"invocation": j.job_id, "unit": j.name, "state": j.state, "exit_status": j.exit_status,
                 "start": j.start_time, "nodes": j.node_list} for j in jobs]
        if args.json:
            print("".join(json.dumps(r, default=str) + "\n" for r in rows), end="")
        else:
            for r in rows:
                print(f"{r['invocation']:>8} {r['unit']:40} {r['state']:12} exit {r['exit_status'] or '-':6} "
                      f"{r['start'] or '-'} {r['nodes'] or '-'}")
        return 0
    frame = pick(job_frame(cluster, jobs))
    if args.lines is not None:
        frame = frame.tail(args.lines) if args.lines else frame.iloc[:0]
    show(frame)
    return 0


def _follow(args: argparse.Namespace, cluster: Any, job: Any, pick: Any, show: Any) -> int:
    """``journal slurm:NAME JOBID|SCRIPT -f``: the last N lines of the job's output (a script: its
    latest job), then its lines as they are written until the job ends (exit 0) or Ctrl-C."""
    import contextlib
    import sys

    from workbench.cli.journal import FOLLOW_LINES
    from workbench.slurm.journal import follow_job

    def line(kind: str, text: str) -> None:
        print(f"workbench journal: {text}", file=sys.stderr, flush=True)

    n = args.lines if args.lines is not None else FOLLOW_LINES
    with contextlib.closing(follow_job(cluster, job.job_id, poll=args.interval, on_event=line)) as frames:
        for i, frame in enumerate(frames):
            shown = pick(frame)
            if i == 0:  # what the file held already: its last N lines, as tail -f
                shown = shown.tail(n) if n else shown.iloc[:0]
            if len(shown):
                show(shown)
    return 0


def job_text(args: argparse.Namespace) -> str:
    """``workbench tracebacks --host slurm:NAME --unit JOBID|SCRIPT``: the job's output (a script:
    its latest job Slurm still knows) as journalctl-like text, srun labels turned into nodes."""
    from workbench.errors import ConfigError
    from workbench.journal.filter import to_text
    from workbench.slurm.clusters import connect_cluster
    from workbench.slurm.journal import job_frame, jobs_for

    if args.invocation != "last":
        raise ConfigError("--invocation: for a Slurm job give its id as --unit")
    cluster = connect_cluster(args.host, ssh_config=getattr(args, "ssh_config", None))
    jobs = jobs_for(cluster, args.unit)
    return str(to_text(job_frame(cluster, [max(jobs, key=lambda j: int(j.job_id))])))
