"""Scheduler overhead of a trial as a Slurm job, on the local Slurm testbed (issue 20).

    .venv/bin/python bench/slurm_overhead.py [--jobs 10] [--root /tmp/wb-slurm-bench]

Starts the local cluster (munged, slurmctld, slurmd; tests/integration/test_slurm.py's), then:

* submit → running for ``--jobs`` trivial jobs (``sbatch`` to the job's ``StartTime`` as
  ``scontrol`` reports it, and to the moment the trial saw it running);
* the seeds' factorial (2 edits, 3 jobs) with ``max_parallel`` 1 and 2 over the testbed's two
  nodes (the second in a network namespace of its own);
* the seeds' bisect (3 edits) with trials as jobs, against the same trials run directly on
  this machine as plain processes (``python3 -m sglang.launch_server`` with the same edits,
  judged by the same log tracker): the difference is the scheduler's cost per trial.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from workbench.phases import PhaseTracker
from workbench.slurm.script import JobScript
from workbench.slurm.search import bisect_jobs, factorial_jobs
from workbench.testbed.slurm import BASE_SCRIPT, LocalSlurm

EDITS = [("--ep-size", "8"), ("--enable-nccl-nvls", True), ("--enable-flashinfer-allreduce-fusion", True)]


def direct_trial(script: JobScript, edits: list) -> float:  # type: ignore[type-arg]
    """The same start without a scheduler: run the server line here and follow its output."""
    env_lines = [ln[len("export "):] for ln in script.text.splitlines() if ln.startswith("export ")]
    env = dict(line.split("=", 1) for line in env_lines)
    argv = script.with_edits(edits).argv
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**env, "PATH": "/usr/bin:/bin"})
    tracker = PhaseTracker()
    assert proc.stdout is not None
    for line in proc.stdout:
        tracker.feed(line.rstrip("\n"))
        if tracker.ready:
            break
    proc.kill()
    proc.wait()
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--root", default="/tmp/wb-slurm-bench")
    args = ap.parse_args()
    bed = LocalSlurm(Path(args.root), nodes=2)
    cluster = bed.up()
    try:
        lat = []
        trivial = JobScript("#!/bin/bash\n#SBATCH --output=/dev/null\n# workbench: server\npython3 -c pass\n")
        for i in range(args.jobs):
            t0 = time.time()
            jid = cluster.submit(trivial, job_name=f"overhead-{i}", time_limit="1")
            while True:
                info = cluster.job(jid)
                if info.start_time is not None:
                    break
                time.sleep(0.05)
            seen = time.time() - t0
            lat.append(seen)
            cluster.cancel([jid])
        factorial = {}
        for mp in (1, 2):
            f = factorial_jobs(cluster, BASE_SCRIPT, EDITS[:2], max_parallel=mp, timeout=120)
            factorial[f"max_parallel_{mp}"] = {"jobs": f.starts, "wall_s": round(f.wall_seconds, 1),
                                               "nodes": sorted({t.node for t in f.trials}),
                                               "culprits": len(f.culprits), "jobs_left": f.jobs_left}
        search = bisect_jobs(cluster, BASE_SCRIPT, EDITS, timeout=120)
        script = cluster.read_script(BASE_SCRIPT)
        direct = [direct_trial(script, [tuple(e) for e in t.edits]) if t.ok else None for t in search.trials]
        out = {
            "submit_to_running_s": {"median": round(statistics.median(lat), 3), "max": round(max(lat), 3),
                                    "n": len(lat)},
            "bisect": {"jobs": search.starts, "wall_s": round(search.wall_seconds, 1),
                       "queue_s": round(search.queue_seconds, 1),
                       "run_s": round(sum(t.run_seconds for t in search.trials), 1),
                       "culprits": [c["edits"] for c in search.culprits], "jobs_left": search.jobs_left},
            "factorial": factorial,
            "direct_ready_s": [round(d, 2) for d in direct if d is not None],
            "job_ready_s": [round((t.queue_seconds or 0) + t.run_seconds, 2) for t in search.trials if t.ok],
        }
        json.dump(out, sys.stdout, indent=2)
        print()
    finally:
        bed.down()


if __name__ == "__main__":
    main()
