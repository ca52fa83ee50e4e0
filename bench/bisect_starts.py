"""Server starts and wall time to reach the culprits: bisect vs one-at-a-time vs the full factorial.

    .venv/bin/python bench/bisect_starts.py [--hosts gpu-a,gpu-b] [--sizes 3,6,10] [--seeds 1]
                                            [--factorial-max 6] [--out bench/results/bisect_starts.json]

On the running nspawn testbed (real systemd, the simulated SGLang server). Scenarios:
* ``seeds``: the seeds' three edits with the simulator's default faults;
* ``random-n``: a random fault file (1-3 faults, each on 1-2 of ``n`` candidate flags, random phases
  and kinds) installed as /etc/sglang-sim/faults.toml on every host, then removed.
For each scenario, in the same run: bisect (delta debugging) and one-at-a-time on the first host,
and the full factorial spread over all hosts (only up to ``--factorial-max`` edits: 2^10 starts would
take over an hour; its start count is 2^n by construction and it is marked "not run").
The factorial's minimal failing sets per signature are the ground truth bisect is checked against.
Also reported per trial: the workbench's overhead outside the watch (install, GPU check, stop,
log fetch, removal) and the detection latency.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from pathlib import Path
from typing import Any

from workbench.bisect import Verdict, bisect, one_at_a_time
from workbench.fleet import run_many
from workbench.hosts import connect
from workbench.session import HostSession
from workbench.trials import TrialRecord, run_trial
from workbench.variants import EditValue

BASE = "sglang-k26-ddtree.service"
SEEDS = [("--ep-size", "8"), ("--enable-nccl-nvls", True), ("--enable-flashinfer-allreduce-fusion", True)]
CANDIDATES: list[tuple[str, EditValue]] = [
    ("--enable-nccl-nvls", True), ("--enable-flashinfer-allreduce-fusion", True), ("--ep-size", "8"),
    ("--enable-symm-mem", True), ("--disable-custom-all-reduce", True), ("--disable-radix-cache", True),
    ("--kv-cache-dtype", "fp8_e4m3"), ("--chunked-prefill-size", "4096"), ("--page-size", "64"),
    ("--stream-interval", "2"),
]
KINDS_BY_PHASE = {
    "nccl_init": ["nccl"], "weight_loading": ["weight_key_error", "cuda_oom"], "kv_cache_alloc": ["cuda_oom"],
    "cuda_graph_capture": ["cublas", "nonetype", "illegal_memory_access", "cuda_oom"],
}
FAULT_PATH = "/etc/sglang-sim/faults.toml"


def term(flag: str, value: EditValue) -> str:
    return flag if value is True else f"{flag}={value}"


def random_faults(rng: random.Random, edits: list[tuple[str, EditValue]]) -> str:
    lines = ["version = 1", ""]
    for i in range(rng.randint(1, 3)):
        phase = rng.choice(sorted(KINDS_BY_PHASE))
        kind = rng.choice(KINDS_BY_PHASE[phase])
        cond = rng.sample(edits, rng.randint(1, min(2, len(edits))))
        lines += ["[[fault]]", f'id = "rand-{i}"', f'phase = "{phase}"', f'kind = "{kind}"',
                  "when.all_of = [" + ", ".join(f'"{term(f, v)}"' for f, v in cond) + "]", ""]
    return "\n".join(lines)


def oracle_for(session: HostSession, records: list[TrialRecord]):  # type: ignore[no-untyped-def]
    def test(subset: tuple[tuple[str, EditValue], ...]) -> Verdict:
        t0 = time.monotonic()
        rec = run_trial(session, BASE, list(subset), timeout=180)
        rec.reason = f"{rec.reason} | wall {time.monotonic() - t0:.3f}"
        records.append(rec)
        return Verdict.passed() if rec.outcome == "ready" else Verdict.failed(rec.signature_id or rec.outcome, rec.phase)
    return test


def minimal_sets(results: dict[Any, TrialRecord]) -> set[tuple[frozenset[str], str]]:
    by = {frozenset(f for f, _ in s): r for s, r in results.items()}
    out = set()
    for s, r in by.items():
        if r.outcome == "ready" or not r.signature_id:
            continue
        if not any(o < s and q.outcome != "ready" and q.signature_id == r.signature_id for o, q in by.items()):
            out.add((s, r.signature_id))
    return out


def overheads(records: list[TrialRecord]) -> dict[str, float | None]:
    walls = [float(r.reason.rsplit("wall ", 1)[1]) for r in records if "wall " in r.reason]
    outside = [w - r.seconds for w, r in zip(walls, records, strict=False)]
    lat = [r.detection_latency for r in records if r.detection_latency is not None]
    return {"median_overhead_outside_watch_s": round(statistics.median(outside), 3) if outside else None,
            "median_detection_latency_s": round(statistics.median(lat), 3) if lat else None}


def scenario(name: str, edits: list[tuple[str, EditValue]], hosts: list[Any], faults: str | None,
             factorial_max: int) -> dict[str, Any]:
    for h in hosts:
        if faults is None:
            h.run(["rm", "-f", FAULT_PATH], check=True)
        else:
            h.put(faults.encode(), FAULT_PATH)
    row: dict[str, Any] = {"scenario": name, "n": len(edits), "faults": faults}
    try:
        with HostSession(hosts[0], purpose="bench bisect", lock_wait=300) as s:
            recs: list[TrialRecord] = []
            t0 = time.monotonic()
            search = bisect(edits, oracle_for(s, recs))
            row["bisect"] = {"starts": search.starts, "wall_s": round(time.monotonic() - t0, 1),
                             "culprits": [[list(map(list, c.items)), c.signature] for c in search.culprits],
                             **overheads(recs)}
            recs2: list[TrialRecord] = []
            t0 = time.monotonic()
            starts, culprits = one_at_a_time(edits, oracle_for(s, recs2))
            row["one_at_a_time"] = {"starts": starts, "wall_s": round(time.monotonic() - t0, 1),
                                    "culprits": [[list(map(list, c.items)), c.signature] for c in culprits]}
        if len(edits) <= factorial_max:
            from workbench.runbooks.factorial import combinations

            t0 = time.monotonic()
            results, reports = run_many(hosts, BASE, combinations(tuple(edits)), timeout=180, purpose="bench factorial")
            truth = minimal_sets(results)
            found = {(frozenset(f for f, _ in c.items), c.signature) for c in search.culprits}
            row["factorial"] = {"starts": len(results), "wall_s": round(time.monotonic() - t0, 1),
                                "hosts": len(hosts), "errors": [r.error for r in reports if r.error],
                                "minimal_sets": [[sorted(s), sig] for s, sig in truth]}
            row["bisect"]["correct"] = found == truth
            blame = {(frozenset(f for f, _ in c.items), c.signature) for c in culprits}
            row["one_at_a_time"]["all_culprits_found"] = blame == truth
        else:
            row["factorial"] = {"starts": 2 ** len(edits), "wall_s": None, "not_run": True}
        row["info_lower_bound"] = math.ceil(math.log2(len(edits))) if len(edits) > 1 else 1
    finally:
        for h in hosts:
            h.run(["rm", "-f", FAULT_PATH])
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", default="gpu-a,gpu-b")
    ap.add_argument("--sizes", default="3,6,10")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--factorial-max", type=int, default=6)
    ap.add_argument("--out", default="bench/results/bisect_starts.json")
    args = ap.parse_args()
    hosts = [connect(h) for h in args.hosts.split(",")]
    rows = [scenario("seeds", SEEDS, hosts, None, args.factorial_max)]
    print(json.dumps(rows[-1]), flush=True)
    for n in [int(x) for x in args.sizes.split(",")]:
        for seed in range(args.seeds):
            rng = random.Random(1000 * n + seed)
            edits = CANDIDATES[:n]
            rows.append(scenario(f"random-{n}-s{seed}", edits, hosts, random_faults(rng, edits), args.factorial_max))
            print(json.dumps(rows[-1]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
