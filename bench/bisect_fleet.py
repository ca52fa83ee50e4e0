"""Wall time of the bisect on one host and on two equal hosts, on the testbed, same scenarios in one run.

    .venv/bin/python bench/bisect_fleet.py [--hosts gpu-a,gpu-b] [--cases 2] [--n 6] [--seed 7]
                                           [--out bench/results/bisect_fleet.json]

Scenarios: bench/bisect_offline.py's generator (blockers, mutual fixes, two-phase bugs, masking,
valued flags, aliases, removals) written as /etc/sglang-sim/faults.toml on every host while the
bench holds its lock (removed before it lets go).  Each scenario is bisected with a :class:`workbench.fleet.Fleet` of the first host alone,
then of all hosts (one trial per host at a time; a host that would idle while the batch's slowest
start runs takes a spare, ``Search.spare``), and both answers are checked against the offline
factorial of the same fault file (``--batch-sync``: also all hosts without spares).  Per-trial overhead = trial wall (fleet dispatch to record) minus
the watch's seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bisect_offline import Scenario, random_scenario

import workbench.fleet as fleet_module
from workbench.bisect import Verdict, bisect, full_factorial
from workbench.fleet import Fleet
from workbench.hosts import connect

BASE = "sglang-k26-ddtree.service"
FAULT_PATH = "/etc/sglang-sim/faults.toml"


def toml_of(faults: list[dict[str, Any]]) -> str:
    lines = ["version = 1", ""]
    for f in faults:
        lines += ["[[fault]]", f'id = "{f["id"]}"', f'phase = "{f["phase"]}"', f'kind = "{f["kind"]}"']
        for key, terms in f.get("when", {}).items():
            lines.append(f"when.{key} = [" + ", ".join(json.dumps(t) for t in terms) + "]")
        lines.append("")
    return "\n".join(lines)


_TIMED: list[tuple[str, float, float]] = []  # (host, trial wall from run_trial's call to its return, watch seconds)


def _timed_run_trial(session: Any, *args: Any, **kwargs: Any) -> Any:
    """``fleet.run_trial`` as the fleet's workers call it, timed: a trial's overhead outside the watch, per host."""
    t = time.monotonic()
    rec = _run_trial(session, *args, **kwargs)
    _TIMED.append((session.host.name, time.monotonic() - t, rec.seconds))
    return rec


_run_trial = fleet_module.run_trial
fleet_module.run_trial = _timed_run_trial  # type: ignore[assignment]


def bisect_on(hosts: list[Any], sc: Scenario, spares: bool = True) -> dict[str, Any]:
    """The fault file is on a host only while this fleet holds its lock (setup writes it, teardown removes it)."""
    _TIMED.clear()
    overhead: list[float] = []
    seconds: list[float] = []  # every trial's watch seconds (batches and spares): host time spent starting
    slowest: list[Any] = []  # the slowest trial's (seconds, outcome, phase, host): an outlier shows where
    recs_all: list[Any] = []  # every trial record (batches and spares), for the slow ones' timelines

    def note_slowest(recs: Any) -> None:
        for r in recs:
            recs_all.append(r)
            if not slowest or r.seconds > slowest[0]:
                slowest[:] = [r.seconds, r.outcome, r.phase, r.host]
    spared: list[Any] = []
    text = toml_of(sc.fault_data).encode()
    t0 = time.monotonic()
    with Fleet(hosts, BASE, purpose="bench bisect fleet", timeout=180, lock_wait=600,
               setup=lambda s, r, t: s.host.put(text, FAULT_PATH),
               teardown=lambda s: s.host.run(["rm", "-f", FAULT_PATH], timeout=30)) as fleet:
        def many(batch: list[Any]) -> list[Verdict]:
            b0 = time.monotonic()
            recs = fleet.run(batch)
            seconds.extend(r.seconds for r in recs)
            note_slowest(r for r in recs)
            if len(batch) == 1:
                overhead.append(time.monotonic() - b0 - recs[0].seconds)
            return [verdict(r) for r in recs]

        def verdict(r: Any) -> Verdict:
            return Verdict.passed() if r.outcome == "ready" else Verdict.failed(r.signature_id or "", r.phase)

        def take(wait: bool) -> list[Any]:
            got = fleet.take_spares(wait=wait)
            seconds.extend(r.seconds for _, r in got)
            note_slowest(r for _, r in got)
            spared.extend(got)
            return got

        def started(search: Any) -> None:
            if spares and fleet.width > 1:
                fleet.set_spares(search.spare)

        try:
            search = bisect(sc.edits, test_many=many, width=fleet.width, started=started,
                            extras=lambda wait: [(s, verdict(r)) for s, r in take(wait)])
        finally:
            fleet.set_spares(None)
    wall = time.monotonic() - t0
    busy = sum(w for _h, w, _s in _TIMED)
    out = {"hosts": len(hosts), "starts": search.starts, "spares": len(spared),
           # run_trial's wall minus the watch's seconds, per trial (variant, start, restore, record, over ssh),
           # and the share of the hosts' time spent inside run_trial (the rest: waiting for the search or a batch)
           "trial_overhead_s_median": round(statistics.median(w - s for _h, w, s in _TIMED), 3) if _TIMED else None,
           "hosts_busy_share": round(busy / (wall * len(hosts)), 3)}
    return out | {
            "trial_s_sum": round(sum(seconds), 1), "trial_s_median": round(statistics.median(seconds), 2),
            "slowest_trial": slowest, "slow_trials": slow_trials(recs_all),
            "wall_s": round(wall, 1),
            "culprits": sorted([[list(map(list, c.items)), c.phase] for c in search.culprits], key=str),
            "complete": bool(search.guarantee and search.guarantee.complete),
            "median_overhead_outside_watch_s": round(statistics.median(overhead), 3) if overhead else None}


def slow_trials(recs: list[Any]) -> list[dict[str, Any]]:
    """Trials over twice the median watch seconds, with their timelines (phase entered, seconds from the
    start): where an outlier's time went."""
    if not recs:
        return []
    median = statistics.median(r.seconds for r in recs)
    return [{"seconds": r.seconds, "outcome": r.outcome, "phase": r.phase, "host": r.host, "edits": r.edits,
             "reason": r.reason, "timeline": [[e.get("phase"), e.get("seconds")] for e in r.timeline]}
            for r in recs if r.seconds > 2 * median]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", default="gpu-a,gpu-b")
    ap.add_argument("--cases", type=int, default=2)
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="bench/results/bisect_fleet.json")
    ap.add_argument("--batch-sync", action="store_true", help="also bisect on all hosts without spares (a column "
                    "beside: every batch waits for its slowest start, as before spares)")
    args = ap.parse_args()
    hosts = [connect(h) for h in args.hosts.split(",")]
    rng = random.Random(args.seed)
    rows = []
    for case in range(args.cases):
        sc = random_scenario(rng, args.n)
        _, truth = full_factorial(sc.edits, sc.oracle)
        want = sorted([[list(map(list, c.items)), c.phase] for c in truth], key=str)
        one = bisect_on(hosts[:1], sc)
        many = bisect_on(hosts, sc)
        row = {"case": case, "shapes": sc.shapes, "n": args.n, "one_host": one, "all_hosts": many,
               "one_host_exact": one["culprits"] == want, "all_hosts_exact": many["culprits"] == want,
               "wall_ratio": round(many["wall_s"] / one["wall_s"], 3)}
        if args.batch_sync:  # the same hosts without spares: every batch waits for its slowest start
            sync = bisect_on(hosts, sc, spares=False)
            row.update(all_hosts_batch_sync=sync, all_hosts_batch_sync_exact=sync["culprits"] == want,
                       wall_ratio_batch_sync=round(sync["wall_s"] / one["wall_s"], 3))
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {"cases": len(rows), "wall_ratio_total": round(sum(r["all_hosts"]["wall_s"] for r in rows)
                                                            / sum(r["one_host"]["wall_s"] for r in rows), 3)}
    if args.batch_sync:
        summary["wall_ratio_total_batch_sync"] = round(sum(r["all_hosts_batch_sync"]["wall_s"] for r in rows)
                                                       / sum(r["one_host"]["wall_s"] for r in rows), 3)
    print(json.dumps(summary))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
