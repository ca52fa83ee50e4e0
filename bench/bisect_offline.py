"""Bisect against the full factorial on many random fault sets, offline (no server): agreement and starts.

    .venv/bin/python bench/bisect_offline.py [--cases 3000] [--sizes 3,4,5,6,8]

Faults as the simulator applies them (the matching fault of the earliest phase strikes, faults of one
kind share a signature, so failures mask each other), 1-4 faults on 1-2 of ``n`` edits. Agreement =
bisect's (culprit set, signature) pairs equal the factorial's minimal failing sets; starts compared
with 2^n - 1 (the factorial without the base run) and one-at-a-time's n.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections import defaultdict

from workbench.bisect import Verdict, bisect, full_factorial


def sim_like_faults(rng: random.Random, n: int):  # type: ignore[no-untyped-def]
    faults = []
    for i in range(rng.randint(1, 4)):
        cond = frozenset(rng.sample(range(n), rng.randint(1, min(2, n))))
        faults.append((cond, rng.randint(0, 3), rng.choice(["oom", "nccl", "cublas"]), i))

    def oracle(subset):  # type: ignore[no-untyped-def]
        s = frozenset(subset)
        hits = sorted((phase, i, kind) for cond, phase, kind, i in faults if cond <= s)
        return Verdict.failed(f"{hits[0][2]}@{hits[0][0]}") if hits else Verdict.passed()

    return oracle


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--sizes", default="3,4,5,6,8")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(20261129)
    agree = 0
    starts: dict[int, list[int]] = defaultdict(list)
    misses = []
    for case in range(args.cases):
        n = rng.choice(sizes)
        oracle = sim_like_faults(rng, n)
        result = bisect(list(range(n)), oracle)
        _, truth = full_factorial(list(range(n)), oracle)
        ok = {(c.items, c.signature) for c in result.culprits} == {(c.items, c.signature) for c in truth}
        agree += ok
        if not ok:
            misses.append(case)
        starts[n].append(result.starts)
    print(json.dumps({
        "cases": args.cases, "agree": agree, "missed_cases": misses[:20],
        "median_starts": {n: statistics.median(v) for n, v in sorted(starts.items())},
        "max_starts": {n: max(v) for n, v in sorted(starts.items())},
        "factorial_starts": {n: 2 ** n - 1 for n in sorted(starts)},
    }, indent=1))


if __name__ == "__main__":
    main()
