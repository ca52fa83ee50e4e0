"""``workbench status slurm:NAME``: a Slurm cluster's partitions, nodes and the workbench's jobs."""

from __future__ import annotations

import argparse
import json
from typing import Any


def status_lines(st: dict[str, Any]) -> list[str]:
    """The text ``workbench status slurm:NAME`` prints for :meth:`SlurmCluster.status`."""
    lines = [f"cluster {st['cluster']}"]
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
        lines.append(f"    {j['job_id']:>8} {j['name']:40} {j['state']}{why}{where}")
    return lines


def status(args: argparse.Namespace) -> int:
    from workbench.slurm.clusters import connect_cluster

    cluster = connect_cluster(args.host, ssh_config=args.ssh_config)
    st = cluster.status()
    if args.pattern not in ("", "*"):
        from fnmatch import fnmatch

        st["jobs"] = [j for j in st["jobs"] if fnmatch(j["name"], args.pattern)]
    if args.json:
        print(json.dumps(st, indent=2, default=str))
    else:
        print("\n".join(status_lines(st)))
    return 0
