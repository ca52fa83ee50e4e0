"""Bisect and factorial wall time over the testbed's Slurm cluster vs the SSH fleet, same scenarios, one run.

    .venv/bin/python bench/slurm_vs_fleet.py [--hosts gpu-a,gpu-b] [--cluster slurm:testbed]
                                             [--out bench/results/slurm_vs_fleet.json]

Needs the testbed with the slurm provisioner (``workbench testbed up --provision sim,slurm``): the
cluster's two nodes (gpu-d, gpu-e) are nspawn hosts like gpu-a and gpu-b, with the same simulator,
model files and default fault file, so a start costs the same on both sides.  Scenarios: the seeds'
bisect (3 edits: EP8, NVLS, allreduce fusion) and the factorial of EP8 x NVLS (3 starts).  Each is run
with one trial at a time and with two at once: ``max_parallel`` 1 and 2 on Slurm (trials as jobs the
scheduler places), one host and two hosts on the SSH fleet (:class:`workbench.fleet.Fleet`, one
session per host: the base unit stopped, variants started, the host restored).

Scheduler overhead per trial: submit (``sbatch`` returned) → the trial saw the job RUNNING, from
the trial's own events (monotonic clock); Slurm's own SubmitTime → StartTime has a 1 s resolution.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from pathlib import Path
from typing import Any

from workbench.bisect import Verdict, bisect
from workbench.fleet import Fleet
from workbench.hosts import connect
from workbench.slurm.clusters import connect_cluster
from workbench.slurm.search import bisect_jobs, factorial_jobs

UNIT = "sglang-k26-ddtree.service"
SCRIPT = "sglang-k26-ddtree.sbatch"
BISECT = [("--ep-size", "8"), ("--enable-nccl-nvls", True), ("--enable-flashinfer-allreduce-fusion", True)]
FACTORIAL = BISECT[:2]


def culprit_sets(items: list[Any]) -> list[list[list[Any]]]:
    return sorted([[list(e) for e in c] for c in items], key=str)


def fleet_runs(hosts: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    t0 = time.monotonic()
    with Fleet(hosts, UNIT, purpose="bench slurm vs fleet", timeout=180, lock_wait=900) as fleet:
        opened = time.monotonic() - t0

        def many(batch: list[Any]) -> list[Verdict]:
            recs = fleet.run(batch)
            return [Verdict.passed() if r.outcome == "ready" else Verdict.failed(r.signature_id or "", r.phase)
                    for r in recs]

        b0 = time.monotonic()
        search = bisect(BISECT, test_many=many, width=fleet.width)
        out["bisect"] = {"starts": search.starts, "wall_s": round(time.monotonic() - b0, 1),
                         "culprits": culprit_sets([c.items for c in search.culprits])}
        subsets = [s for r in range(1, len(FACTORIAL) + 1) for s in itertools.combinations(FACTORIAL, r)]
        f0 = time.monotonic()
        recs = fleet.run(subsets)
        out["factorial"] = {"starts": len(recs), "wall_s": round(time.monotonic() - f0, 1),
                            "failed": sum(r.outcome != "ready" for r in recs)}
        out["trial_s_median"] = round(statistics.median([r.seconds for r in recs]), 2)
    out["session_open_s"] = round(opened, 1)
    out["session_close_s"] = round(time.monotonic() - t0 - opened - out["bisect"]["wall_s"]
                                   - out["factorial"]["wall_s"], 1)
    return out


def slurm_runs(cluster: Any, max_parallel: int) -> dict[str, Any]:
    submit_to_running: list[float] = []
    seen: dict[str, float] = {}

    def events(kind: str, text: str) -> None:
        job = text.split()[1] if text.startswith("job ") else ""
        if kind == "submitted":
            seen[job] = time.monotonic()
        elif kind == "running" and job in seen:
            submit_to_running.append(time.monotonic() - seen.pop(job))

    found = bisect_jobs(cluster, SCRIPT, BISECT, max_parallel=max_parallel, timeout=180, on_event=events,
                        tag="bench")
    fact = factorial_jobs(cluster, SCRIPT, FACTORIAL, max_parallel=max_parallel, timeout=180, on_event=events,
                          tag="bench")
    trials = found.trials + fact.trials
    return {"bisect": {"starts": found.starts, "wall_s": round(found.wall_seconds, 1),
                       "queue_s": round(found.queue_seconds, 1),
                       "culprits": culprit_sets([c["edits"] for c in found.culprits]),
                       "jobs_left": found.jobs_left},
            "factorial": {"starts": fact.starts, "wall_s": round(fact.wall_seconds, 1),
                          "queue_s": round(fact.queue_seconds, 1), "jobs_left": fact.jobs_left,
                          "nodes": sorted({t.node for t in fact.trials})},
            "trial_run_s_median": round(statistics.median([t.run_seconds for t in trials]), 2),
            "submit_to_running_s": {"median": round(statistics.median(submit_to_running), 2),
                                    "max": round(max(submit_to_running), 2), "n": len(submit_to_running)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", default="gpu-a,gpu-b")
    ap.add_argument("--cluster", default="slurm:testbed")
    ap.add_argument("--out", default="bench/results/slurm_vs_fleet.json")
    args = ap.parse_args()
    cluster = connect_cluster(args.cluster)
    hosts = [connect(h) for h in args.hosts.split(",")]
    result: dict[str, Any] = {}
    for mp in (1, 2):
        result[f"slurm_max_parallel_{mp}"] = slurm_runs(cluster, mp)
        print(json.dumps({f"slurm_max_parallel_{mp}": result[f"slurm_max_parallel_{mp}"]}), flush=True)
    for n in (1, 2):
        result[f"fleet_{n}_hosts"] = fleet_runs(hosts[:n])
        print(json.dumps({f"fleet_{n}_hosts": result[f"fleet_{n}_hosts"]}), flush=True)
    s1, s2, f1, f2 = (result[k] for k in ("slurm_max_parallel_1", "slurm_max_parallel_2", "fleet_1_hosts",
                                          "fleet_2_hosts"))
    result["ratios"] = {
        "bisect_slurm_2_over_1": round(s2["bisect"]["wall_s"] / s1["bisect"]["wall_s"], 3),
        "bisect_fleet_2_over_1": round(f2["bisect"]["wall_s"] / f1["bisect"]["wall_s"], 3),
        "factorial_slurm_2_over_1": round(s2["factorial"]["wall_s"] / s1["factorial"]["wall_s"], 3),
        "factorial_fleet_2_over_1": round(f2["factorial"]["wall_s"] / f1["factorial"]["wall_s"], 3),
        "bisect_slurm_over_fleet_1": round(s1["bisect"]["wall_s"] / f1["bisect"]["wall_s"], 3),
        "bisect_slurm_over_fleet_2": round(s2["bisect"]["wall_s"] / f2["bisect"]["wall_s"], 3),
        "factorial_slurm_over_fleet_1": round(s1["factorial"]["wall_s"] / f1["factorial"]["wall_s"], 3),
        "factorial_slurm_over_fleet_2": round(s2["factorial"]["wall_s"] / f2["factorial"]["wall_s"], 3),
        "same_culprits": s1["bisect"]["culprits"] == s2["bisect"]["culprits"] == f1["bisect"]["culprits"]
        == f2["bisect"]["culprits"],
    }
    print(json.dumps({"ratios": result["ratios"]}))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    for h in hosts:
        h.close()
    cluster.host.close()


if __name__ == "__main__":
    main()
