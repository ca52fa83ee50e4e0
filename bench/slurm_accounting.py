"""What Slurm accounting (slurmdbd over MariaDB) costs the local Slurm testbed (issue 20).

    .venv/bin/python bench/slurm_accounting.py [--rounds 3] [--root /tmp/wb-slurm-acct-bench]

For the one-node local cluster without and with accounting (``LocalSlurm(accounting=...)``):
``up()`` (the first round includes ``mariadb-install-db``; later rounds reuse the data
directory) and ``down()`` wall seconds; with accounting, a job's status from ``scontrol`` vs
from ``sacct`` (median of 20 asks each).  Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

from workbench.slurm import facts
from workbench.testbed.slurm import BASE_SCRIPT, LocalSlurm


def _median_s(fn: object, n: int = 20) -> float:
    times = []
    for _ in range(n):
        t = time.monotonic()
        fn()  # type: ignore[operator]
        times.append(time.monotonic() - t)
    return round(statistics.median(times), 4)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--root", default="/tmp/wb-slurm-acct-bench")
    args = ap.parse_args()
    out: dict[str, object] = {}
    for accounting in (False, True):
        root = Path(args.root) / ("accounting" if accounting else "none")
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        ups, downs = [], []
        asks: dict[str, float] = {}
        for i in range(args.rounds):
            bed = LocalSlurm(root, accounting=accounting)
            t = time.monotonic()
            cluster = bed.up()
            ups.append(round(time.monotonic() - t, 2))
            if accounting and i == 0:
                job = cluster.submit(cluster.read_script(BASE_SCRIPT), job_name="bench-acct", time_limit="5")
                cluster.cancel([job])
                asks = {"scontrol_s": _median_s(lambda c=cluster, j=job: c._run(facts.show_job(j))),
                        "sacct_s": _median_s(lambda c=cluster, j=job: c.accounting_jobs([j]))}
            t = time.monotonic()
            bed.down()
            downs.append(round(time.monotonic() - t, 2))
        out["accounting" if accounting else "none"] = {"up_s": ups, "down_s": downs, **asks}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
