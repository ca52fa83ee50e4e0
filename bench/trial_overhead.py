"""Per-trial overhead outside the server's own start: this tree against a baseline tree, one run.

    .venv/bin/python bench/trial_overhead.py [--host gpu-b] [--trials 8] [--rounds 2] [--local]
                                             [--baseline-tree /work/main] [--out bench/results/trial_overhead.json]

On the running nspawn testbed (or, with ``--local``, a fresh local testbed: the process backend, in a
temporary directory, torn down after): one session per tree and round on ``--host``, ``--trials`` trials of the
seeds' failing variant (``--ep-size 8``: fails in cuda_graph_capture) of the simulated SGLang base.
Overhead of a trial = its wall time in ``run_variant`` minus the watch's own ``outcome.seconds`` (the
server's start as the watch saw it): the record writes, the GPU check, the verified placement, the base
stop, the removal.  The first trial of a session also records the base (and, on this tree, arms the
guard): reported apart.  The trees alternate round by round (baseline first in odd rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BASE = "sglang-k26-ddtree.service"
HERE = Path(__file__).resolve()


def child(host_name: str, trials: int) -> None:
    from workbench.hosts import LocalHost, connect
    from workbench.session import HostSession
    from workbench.ssh import SSHHost
    from workbench.testbed import paths

    host = connect(host_name)
    if isinstance(host, LocalHost) and not os.environ.get("WORKBENCH_TESTBED_DIR"):  # nspawn: over SSH
        host = SSHHost(host_name, ssh_config=str(paths.state_dir() / "ssh_config"))
    out = []
    with HostSession(host, purpose="bench trial overhead", lock_wait=300) as s:
        for _ in range(trials):
            t0 = time.monotonic()
            trial = s.run_variant(BASE, {"--ep-size": "8"}, timeout=120)
            wall = time.monotonic() - t0
            out.append({"wall_s": wall, "watch_s": trial.outcome.seconds, "outcome": trial.outcome.outcome})
    print(json.dumps(out))


def measure(tree: str, host: str, trials: int) -> list[dict[str, float]]:
    env = dict(os.environ, PYTHONPATH=tree)
    res = subprocess.run([sys.executable, str(HERE), "--child", "--host", host, "--trials", str(trials)],
                         capture_output=True, text=True, env=env, timeout=1800, cwd=tree)
    if res.returncode != 0:
        raise SystemExit(f"{tree}: {res.stderr[-2000:]}")
    return list(json.loads(res.stdout.strip().splitlines()[-1]))


def summary(rows: list[dict[str, float]]) -> dict[str, float]:
    over = [r["wall_s"] - r["watch_s"] for r in rows]
    return {"first_trial_overhead_s": round(over[0], 3),
            "median_overhead_s": round(statistics.median(over[1:]), 3),
            "max_overhead_s": round(max(over[1:]), 3), "trials": len(rows)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="gpu-b")
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline-tree", default="/work/main")
    ap.add_argument("--out", default=str(HERE.parent / "results" / "trial_overhead.json"))
    ap.add_argument("--local", action="store_true", help="a local testbed (process backend) instead of nspawn")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.host, args.trials)
        return
    if args.local:
        import tempfile

        from workbench.testbed import local

        with tempfile.TemporaryDirectory(prefix="wb-overhead-") as tmp:
            os.environ["WORKBENCH_TESTBED_DIR"] = tmp
            args.host = "gpu-a"  # the one host a local testbed of 1 has
            local.up(1, progress=lambda _m: None)
            try:
                run(args)
            finally:
                local.down(progress=lambda _m: None)
        return
    run(args)


def run(args: argparse.Namespace) -> None:
    trees = {"baseline": args.baseline_tree, "this": str(HERE.parents[1])}
    later: dict[str, list[float]] = {"baseline": [], "this": []}  # every trial but a session's first
    rounds = []
    for r in range(args.rounds):
        order = ["baseline", "this"] if r % 2 == 0 else ["this", "baseline"]
        for name in order:
            got = measure(trees[name], args.host, args.trials)
            later[name] += [g["wall_s"] - g["watch_s"] for g in got[1:]]
            rounds.append({"round": r, "tree": name, **summary(got)})
    result: dict[str, object] = {"host": args.host, "backend": "process (local)" if args.local else "systemd (nspawn)",
                                 "trees": trees, "rounds": rounds}
    for name, over in later.items():
        result[name] = {"median_overhead_s": round(statistics.median(over), 3), "max_overhead_s": round(max(over), 3)}
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"all rounds: baseline median {result['baseline']} / this {result['this']}")
    for row in rounds:
        print(f"round {row['round']} {row['tree']:8}  first {row['first_trial_overhead_s']:.3f} s  "
              f"median {row['median_overhead_s']:.3f} s  max {row['max_overhead_s']:.3f} s")


if __name__ == "__main__":
    main()
