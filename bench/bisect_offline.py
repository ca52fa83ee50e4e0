"""Bisect against the full factorial on random fault scenarios, offline: the simulator decides every trial.

    .venv/bin/python bench/bisect_offline.py [--cases 400] [--sizes 4,5,6,7,8] [--seed 20261201]
                                             [--old-rev d7a812c] [--base-rev REV] [--out bench/results/bisect_offline.json]

The scenarios are written apart from the code under test: a random fault file in the simulator's
own format (workbench/sim/README.md, "Fault files"), evaluated by the simulator's own code
(``sglang.srt.server_args`` parses the command line the variant would run, ``simcore.faults``
picks the strike) on the seeds' base unit with ``n`` random edits applied by ``workbench.variants``.
Each scenario mixes these shapes (the edits always fail together, the base always starts):

* ``plain``: a fault on 1-3 edits, in a random phase;
* ``blocker``: a fault whose ``when.none_of`` names another of the edits (or the base value that a
  valued edit changes);
* ``mutual``: two edits that fail alone and fix each other (each fault blocked by the other edit);
* ``two_phase``: the same bug in ``cuda_graph_capture`` and, with ``--disable-cuda-graph`` among the
  edits, in ``warmup``;
* ``masking``: an early fault (``nccl_init``, ``weight_loading``) that hides later ones.

Edits include valued flags that change base values (``--mem-fraction-static 0.95``,
``--cuda-graph-max-bs 256``), an alias (``--tp 4`` over the base's ``--tp-size 8``, the fault
spelling ``--tensor-parallel-size=4``) and removals (``--enable-metrics`` removed).

Ground truth: the full factorial's minimal failing sets per signature (exception + message +
phase).  Compared in one run: this tree's bisect on one host and with two hosts (``width=2``),
the bisect of ``--base-rev`` on the same verdicts (a side-by-side baseline
of an earlier search), the bisect of ``--old-rev`` (phase-blind signatures, warmup failures named ``serving`` as its
trials did), one-at-a-time, the factorial.  "exact" = same culprit sets, signatures and phases.
Wall time is simulated: a start takes the time to the phase it fails in (or to ready), and a
batch of ``width`` starts on ``width`` hosts takes its longest start.  Column ``bisect_2_hosts_spares``
(``spare_run``): the same two hosts event by event, a host with nothing of the batch to start runs
``Search.spare`` beside it (as :class:`workbench.fleet.Fleet` does); summary ``wall_2_hosts_spares_over_1``
beside the batches-only ``wall_2_hosts_over_1``.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import random
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workbench" / "sim"))

from sglang.srt.server_args import flag_view, prepare_server_args  # noqa: E402
from simcore.faults import Fault, parse_faults, select_strike  # noqa: E402

from workbench.bisect import Search, Verdict, bisect, full_factorial, one_at_a_time  # noqa: E402
from workbench.variants import EditValue, apply_edits  # noqa: E402

BASE_ARGV = ["/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", "/models/Kimi-K2.6", "--served-model-name", "kimi-k2.6", "--host", "0.0.0.0", "--port", "30000", "--tp-size", "8", "--trust-remote-code", "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", "/models/Kimi-K2.6-DFlash", "--speculative-num-steps", "3", "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8", "--mem-fraction-static", "0.85", "--cuda-graph-max-bs", "64", "--enable-metrics"]

# (flag, value, "present" condition as (when-key, term)); the opposite key gives "absent".
POOL: list[tuple[str, EditValue, tuple[str, str]]] = [
    ("--ep-size", "8", ("all_of", "--ep-size=8")),
    ("--enable-nccl-nvls", True, ("all_of", "--enable-nccl-nvls")),
    ("--enable-flashinfer-allreduce-fusion", True, ("all_of", "--enable-flashinfer-allreduce-fusion")),
    ("--enable-symm-mem", True, ("all_of", "--enable-symm-mem")),
    ("--disable-custom-all-reduce", True, ("all_of", "--disable-custom-all-reduce")),
    ("--disable-radix-cache", True, ("all_of", "--disable-radix-cache")),
    ("--enable-dp-attention", True, ("all_of", "--enable-dp-attention")),
    ("--dp-size", "2", ("all_of", "--dp=2")),  # alias spelling in the fault file
    ("--tp", "4", ("all_of", "--tensor-parallel-size=4")),  # alias of the base's --tp-size 8
    ("--kv-cache-dtype", "fp8_e4m3", ("all_of", "--kv-cache-dtype=fp8_e4m3")),
    ("--chunked-prefill-size", "4096", ("all_of", "--chunked-prefill-size=4096")),
    ("--page-size", "64", ("all_of", "--page-size=64")),
    ("--mem-fraction-static", "0.95", ("none_of", "--mem-fraction-static=0.85")),  # changes the base value
    ("--cuda-graph-max-bs", "256", ("all_of", "--cuda-graph-max-bs=256")),  # changes the base value
    ("--enable-metrics", None, ("all_of", "--enable-metrics=false")),  # a removal
    ("--enable-torch-compile", True, ("all_of", "--enable-torch-compile")),
]
DISABLE_GRAPH: tuple[str, EditValue, tuple[str, str]] = (
    "--disable-cuda-graph", True, ("all_of", "--disable-cuda-graph"))
KINDS_BY_PHASE = {
    "nccl_init": ["nccl"], "weight_loading": ["weight_key_error", "cuda_oom"], "kv_cache_alloc": ["cuda_oom"],
    "cuda_graph_capture": ["cublas", "nonetype", "illegal_memory_access", "cuda_oom", "nccl"],
    "warmup": ["cublas", "nonetype", "illegal_memory_access", "cuda_oom", "nccl"],
}
LATE_KINDS = ["cublas", "nonetype", "illegal_memory_access", "nccl"]
SECONDS_TO = {"nccl_init": 1.5, "weight_loading": 2.5, "kv_cache_alloc": 3.0, "cuda_graph_capture": 3.5,
              "warmup": 4.0, None: 4.0, "ok": 4.5}  # simulated start time to the verdict
FLIP = {"all_of": "none_of", "none_of": "all_of"}


class Scenario:
    """A fault file and ``n`` edits on the seeds' base; ``oracle`` runs the simulator's own decision."""

    def __init__(self, edits: list[tuple[str, EditValue, tuple[str, str]]], faults: list[dict[str, Any]],
                 shapes: list[str]) -> None:
        self.pool = edits
        self.edits = [(f, v) for f, v, _ in edits]
        self.fault_data = faults
        self.shapes = shapes
        self.faults: list[Fault] = parse_faults({"version": 1, "fault": faults}, "<generated>",
                                                flag_view(prepare_server_args(BASE_ARGV[3:])).options)
        self.memo: dict[tuple[tuple[str, EditValue], ...], Verdict] = {}

    def oracle(self, subset: tuple[tuple[str, EditValue], ...]) -> Verdict:
        key = tuple(sorted(subset, key=str))
        if key not in self.memo:
            try:
                args = prepare_server_args(apply_edits(BASE_ARGV, list(subset))[3:])
            except ValueError as exc:  # the server refuses the flags before any phase
                self.memo[key] = Verdict.failed(f"ValueError: {exc} in startup_other", "startup_other")
                return self.memo[key]
            view = flag_view(args)
            groups = 1 if args.enable_dp_attention else args.dp_size
            strike = select_strike(self.faults, view, args.tp_size * args.pp_size * groups, 0,
                                   warmup_enabled=not args.skip_server_warmup,
                                   graphs_enabled=not args.disable_cuda_graph)
            if strike is None:
                self.memo[key] = Verdict.passed()
            else:
                what = strike.fault.params.get("status") or strike.fault.params.get("error") or ""
                self.memo[key] = Verdict.failed(f"{strike.kind}{'/' + what if what else ''} in {strike.phase}",
                                                strike.phase)
        return self.memo[key]


def _fault(rng: random.Random, i: int, phase: str, kind: str | None = None, **when: list[str]) -> dict[str, Any]:
    kind = kind or rng.choice(KINDS_BY_PHASE[phase])
    return {"id": f"f{i}", "phase": phase, "kind": kind, "when": {k: v for k, v in when.items() if v}}


def _cond(items: list[tuple[str, EditValue, tuple[str, str]]], absent: list[tuple[str, EditValue, tuple[str, str]]]
          ) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"all_of": [], "none_of": []}
    for _, _, (key, term) in items:
        out[key].append(term)
    for _, _, (key, term) in absent:
        out[FLIP[key]].append(term)
    return out


def random_scenario(rng: random.Random, n: int) -> Scenario:
    while True:
        shapes = rng.sample(["plain", "blocker", "mutual", "two_phase", "masking"], rng.randint(1, 3))
        pool = rng.sample(POOL, n - (1 if "two_phase" in shapes else 0))
        if "two_phase" in shapes:
            pool.insert(rng.randrange(len(pool) + 1), DISABLE_GRAPH)
        others = [e for e in pool if e is not DISABLE_GRAPH]
        faults: list[dict[str, Any]] = []
        for shape in shapes:
            i = len(faults)
            if shape == "plain":
                p = rng.choice(list(KINDS_BY_PHASE))
                faults.append(_fault(rng, i, p, **_cond(rng.sample(others, rng.choice([1, 1, 2, 2, 3])), [])))
            elif shape == "blocker":
                pos = rng.sample(others, rng.choice([1, 2]))
                block = rng.choice([e for e in pool if e not in pos])
                faults.append(_fault(rng, i, rng.choice(list(KINDS_BY_PHASE)), **_cond(pos, [block])))
            elif shape == "mutual":
                x, y = rng.sample(others, 2)
                p = rng.choice(["nccl_init", "cuda_graph_capture", "weight_loading"])
                kind = rng.choice(KINDS_BY_PHASE[p])
                faults.append(_fault(rng, i, p, kind, **_cond([x], [y])))
                faults.append(_fault(rng, i + 1, p, kind, **_cond([y], [x])))
                if rng.random() < 0.5:  # ... and the pair does something of its own with a third edit
                    z = rng.choice([e for e in others if e not in (x, y)])
                    faults.append(_fault(rng, i + 2, "kv_cache_alloc", "cuda_oom", **_cond([x, y, z], [])))
            elif shape == "two_phase":
                pos = rng.sample(others, rng.choice([1, 1, 2]))
                kind = rng.choice(LATE_KINDS)
                faults.append(_fault(rng, i, "cuda_graph_capture", kind, **_cond(pos, [])))
                faults.append(_fault(rng, i + 1, "warmup", kind, **_cond(pos, [])))
            else:  # masking
                faults.append(_fault(rng, i, rng.choice(["nccl_init", "weight_loading"]),
                                     **_cond(rng.sample(others, 1), [])))
                faults.append(_fault(rng, i + 1, rng.choice(["cuda_graph_capture", "warmup"]),
                                     **_cond(rng.sample(others, rng.choice([1, 2])), [])))
        rng.shuffle(faults)
        for j, f in enumerate(faults):
            f["id"] = f"f{j}"
        sc = Scenario(pool, faults, shapes)
        if sc.oracle(()).ok and not sc.oracle(tuple(sc.edits)).ok:
            return sc


def _answer(culprits: list[Any], phase_of: Any = None) -> set[tuple[frozenset[Any], str, str | None]]:
    return {(frozenset(c.items), c.signature.split(" in ")[0], phase_of(c) if phase_of else c.phase)
            for c in culprits}


def _load_old(rev: str, name: str = "bisect_old") -> Any:
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:workbench/bisect.py"], check=True,
                          capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _batched_wall(order: list[tuple[Any, Any]], batches: list[int]) -> float:
    """Simulated wall: each batch of starts (one per host at once) lasts its longest start."""
    times = [SECONDS_TO["ok"] if v.ok else SECONDS_TO.get(v.phase, 4.0) for _, v in order]
    return sum(max(times[i:i + b]) for i, b in zip(_offsets(batches), batches, strict=True))


def _seconds(v: Verdict) -> float:
    return SECONDS_TO["ok"] if v.ok else SECONDS_TO.get(v.phase, 4.0)


def spare_run(sc: Scenario, edits: list[Any], hosts: int = 2) -> tuple[Search[Any], float]:
    """The search on ``hosts`` equal hosts with spares, event by event (as :class:`workbench.fleet.Fleet` runs it).

    Free hosts take the batch's sets; a set running or done as a spare is not started again (the batch
    waits for / reuses it).  While the batch runs, a host with nothing of it to start takes
    ``search.spare(busy)``; the batch's verdicts are sent when all its sets are done, the finished spares
    learned just before (an empty batch: the search waits for all its spares before its answer).
    Returns the search and the simulated wall."""
    search: Search[Any] = Search(edits, width=hosts)
    steps = search.steps()
    now = 0.0
    run: list[tuple[float, Any, bool] | None] = [None] * hosts  # per host: (end, subset, spare)
    spares: dict[Any, float] = {}  # spares not claimed by a batch: subset -> end (done when end <= now)
    try:
        batch = next(steps)
        while True:
            if not batch:  # the search waits for its spares before its answer
                now = max([now, *spares.values()])
            ends: dict[Any, float] = {}
            queue = []
            for sub in batch:
                if sub in spares:
                    ends[sub] = spares.pop(sub)
                else:
                    queue.append(sub)
            while True:
                for h in range(hosts):
                    slot = run[h]
                    if slot is not None and slot[0] <= now:
                        run[h] = slot = None
                    if slot is not None:
                        continue
                    if queue:
                        sub = queue.pop(0)
                        ends[sub] = now + _seconds(sc.oracle(sub))
                        run[h] = (ends[sub], sub, False)
                    elif any(e > now for e in ends.values()):  # the batch runs on: an idle host takes a spare
                        sub = search.spare(list(ends) + list(spares))
                        if sub is not None:
                            spares[sub] = now + _seconds(sc.oracle(sub))
                            run[h] = (spares[sub], sub, True)
                if not queue and all(e <= now for e in ends.values()):
                    break
                now = min(r[0] for r in run if r is not None and r[0] > now)
            for sub in [x for x, e in spares.items() if e <= now]:
                search.learn(sub, sc.oracle(sub))
                del spares[sub]
            batch = steps.send([sc.oracle(x) for x in batch])
    except StopIteration:
        pass
    assert not spares  # learned before the answer
    return search, now


def _needs(sc: Scenario) -> tuple[int, list[frozenset[int]]]:
    """For each fault of the guaranteed shape ("at most two edits present, at most one absent") that could
    show somewhere, the started sets that would exclude it: those holding it that fail no earlier than any
    set where it could show (the adversary gives it the latest phase that still shows).  Any search whose
    answer is proven under the guarantee must have started one set of each."""
    n, edits = len(sc.edits), sc.edits
    full = (1 << n) - 1
    val = {s: sc.oracle(tuple(edits[i] for i in range(n) if s >> i & 1)).rank for s in range(1, full + 1)}
    need: set[frozenset[int]] = set()
    for absent in [-1, *range(n)]:
        neg = 0 if absent < 0 else 1 << absent
        for k in (1, 2):
            for pos in itertools.combinations([i for i in range(n) if i != absent], k):
                p = sum(1 << i for i in pos)
                cov = [s for s in val if s & p == p and not s & neg]
                top = max(val[s] for s in cov)
                if top > 0:
                    need.add(frozenset(s for s in cov if val[s] == top))
    return full, sorted(need, key=sorted)


def min_hitting(need: list[frozenset[int]], forced: frozenset[int] = frozenset()) -> int:
    """The fewest sets meeting every set of ``need`` with ``forced`` among them: exact, branch and bound
    (branch on the open need with the fewest sets; prune by a packing of disjoint open needs)."""
    left0 = [a for a in need if not a & forced]
    best = len(forced) + len(left0)

    def packing(left: list[frozenset[int]]) -> int:
        used: set[int] = set()
        k = 0
        for a in sorted(left, key=len):
            if not a & used:
                used |= a
                k += 1
        return k

    def go(chosen: int, left: list[frozenset[int]]) -> None:
        nonlocal best
        if not left:
            best = min(best, chosen)
            return
        if chosen + packing(left) >= best:
            return
        a = min(left, key=len)
        for s in sorted(a, key=lambda s: -sum(s in b for b in left)):
            go(chosen + 1, [b for b in left if s not in b])

    go(len(forced), left0)
    return best


def oracle_cover(sc: Scenario, truth_c: list[Any]) -> dict[str, int | None]:
    """Bounds no search can beat: starts a search that already knew every verdict would need.

    ``greedy`` (the column of earlier rounds): the edits together, every culprit, and a greedy hitting
    set of :func:`_needs`.  ``exact_seen``: the fewest sets doing the same (exact).  ``exact``: the fewest
    sets meeting every need, nothing forced -- a lower bound for *any* search that proves its answer
    under the guarantee, adaptive or not; an adaptive search also has to learn.
    """
    full, need = _needs(sc)
    forced = frozenset({full} | {sum(1 << sc.edits.index(x) for x in c.items) for c in truth_c})
    chosen = set(forced)
    left = [a for a in need if not a & chosen]
    while left:
        count: dict[int, int] = defaultdict(int)
        for a in left:
            for s in a:
                count[s] += 1
        best = max(count, key=lambda s: count[s])
        chosen.add(best)
        left = [a for a in left if best not in a]
    small = len(sc.edits) <= 7  # 8 edits: up to minutes a case; not run (None)
    return {"greedy": len(chosen), "exact_seen": min_hitting(need, forced) if small else None,
            "exact": min_hitting(need) if small else None}


def run_case(sc: Scenario, old: Any, base: Any = None) -> dict[str, Any]:
    edits = sc.edits
    _, truth_c = full_factorial(edits, sc.oracle)
    truth = _answer(truth_c)
    row: dict[str, Any] = {"n": len(edits), "shapes": sc.shapes, "factorial": 2 ** len(edits) - 1}
    for name, starts in oracle_cover(sc, truth_c).items():
        if starts is not None:
            row[f"bound_{name}"] = {"starts": starts, "exact": True, "sets": True}
    for name, width in (("bisect", 1), ("bisect_2_hosts", 2)):
        batches: list[int] = []

        def many(subsets: list[Any], batches: list[int] = batches) -> list[Verdict]:
            batches.append(len(subsets))
            return [sc.oracle(s) for s in subsets]

        s = bisect(edits, test_many=many, width=width)
        row[name] = {"starts": s.starts, "exact": _answer(s.culprits) == truth,
                     "sets": {(a, b) for a, b, _ in _answer(s.culprits)} == {(a, b) for a, b, _ in truth},
                     "complete": bool(s.guarantee and s.guarantee.complete),
                     "wall": _batched_wall(s.order, batches)}
    sp, wall = spare_run(sc, edits)
    row["bisect_2_hosts_spares"] = {"starts": sp.starts, "exact": _answer(sp.culprits) == truth,
                                    "sets": {(a, b) for a, b, _ in _answer(sp.culprits)} == {(a, b) for a, b, _ in truth},
                                    "complete": bool(sp.guarantee and sp.guarantee.complete), "wall": wall}
    if base is not None:  # another revision's bisect on the same verdicts (phases and all): a side-by-side baseline
        for name, width in (("base_bisect", 1), ("base_bisect_2_hosts", 2)):
            base_batches: list[int] = []

            def base_many(subsets: list[Any], batches: list[int] = base_batches) -> list[Any]:
                batches.append(len(subsets))
                return [base.Verdict(*_fields(sc.oracle(s))) for s in subsets]

            b = base.bisect(edits, test_many=base_many, width=width)
            got_b = {(frozenset(c.items), c.signature.split(" in ")[0], c.phase) for c in b.culprits}
            row[name] = {"starts": b.starts, "exact": got_b == truth,
                         "sets": {(a, x) for a, x, _ in got_b} == {(a, x) for a, x, _ in truth},
                         "complete": bool(b.guarantee and b.guarantee.complete),
                         "wall": _batched_wall(b.order, base_batches)}
    if old is not None:  # what the old runbook saw: signatures without the phase, warmup named serving
        def blind(subset: Any) -> Any:
            v = sc.oracle(subset)
            return old.Verdict.passed() if v.ok else old.Verdict.failed((v.signature or "").split(" in ")[0])
        o = old.bisect(edits, blind)
        phase_of = {frozenset(c.items): c.phase for c in truth_c}
        got = set()
        for c in o.culprits:
            v = sc.oracle(tuple(c.items))
            got.add((frozenset(c.items), c.signature, "serving" if v.phase == "warmup" else v.phase))
        row["old_bisect"] = {"starts": o.starts, "exact": got == truth,
                             "sets": {(a, b) for a, b, _ in got} == {(a, b) for a, b, _ in truth}}
        del phase_of
    starts, oat = one_at_a_time(edits, sc.oracle)
    row["one_at_a_time"] = {"starts": starts, "exact": _answer(oat) == truth,
                            "sets": {(a, b) for a, b, _ in _answer(oat)} == {(a, b) for a, b, _ in truth}}
    return row


def _fields(v: Verdict) -> tuple[bool, str | None, str | None]:
    return v.ok, v.signature, v.phase


def _offsets(batches: list[int]) -> list[int]:
    out, at = [], 0
    for b in batches:
        out.append(at)
        at += b
    return out


def summary(rows: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        per: dict[str, Any] = {}
        for n in sorted({r["n"] for r in rows}):
            rs = [r for r in rows if r["n"] == n and name in r]
            if not rs:
                continue
            starts = [r[name]["starts"] for r in rs]
            per[str(n)] = {"cases": len(rs), "exact_pct": round(100 * sum(r[name]["exact"] for r in rs) / len(rs), 1),
                           "sets_pct": round(100 * sum(r[name]["sets"] for r in rs) / len(rs), 1),
                           "median_starts": statistics.median(starts), "max_starts": max(starts),
                           "median_pct_of_factorial": round(100 * statistics.median(starts) / (2 ** n - 1), 1)}
        out[name] = per
    for prefix in ("bisect", "base_bisect"):
        if all(f"{prefix}_2_hosts" in r for r in rows):
            walls = [(r[prefix]["wall"], r[f"{prefix}_2_hosts"]["wall"]) for r in rows]
            key = "wall_2_hosts_over_1" if prefix == "bisect" else "base_wall_2_hosts_over_1"
            out[key] = round(sum(b for _, b in walls) / sum(a for a, _ in walls), 3)
    if all("bisect_2_hosts_spares" in r for r in rows):
        out["wall_2_hosts_spares_over_1"] = round(sum(r["bisect_2_hosts_spares"]["wall"] for r in rows)
                                                  / sum(r["bisect"]["wall"] for r in rows), 3)
        out["bisect_2_hosts_spares_complete_pct"] = round(
            100 * sum(r["bisect_2_hosts_spares"]["complete"] for r in rows) / len(rows), 1)
    out["bisect_complete_pct"] = round(100 * sum(r["bisect"]["complete"] for r in rows) / len(rows), 1)
    if all("base_bisect" in r for r in rows):
        out["base_bisect_complete_pct"] = round(100 * sum(r["base_bisect"]["complete"] for r in rows) / len(rows), 1)
    by_shape: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        for s in r["shapes"]:
            by_shape[s].append(r["bisect"]["exact"])
            by_shape[f"{s} (old)"].append(r.get("old_bisect", {}).get("exact", False))
    out["exact_pct_by_shape"] = {k: round(100 * sum(v) / len(v), 1) for k, v in sorted(by_shape.items())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--sizes", default="4,5,6,7,8")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--old-rev", default="d7a812c", help="git revision whose bisect is the baseline ('' = none)")
    ap.add_argument("--base-rev", default="", help="git revision whose (phase-aware) bisect runs beside this tree's "
                    "on the same verdicts, column base_bisect ('' = none)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    old = _load_old(args.old_rev) if args.old_rev else None
    base = _load_old(args.base_rev, "bisect_base") if args.base_rev else None
    rng = random.Random(args.seed)
    rows, misses = [], []
    for case in range(args.cases):
        sc = random_scenario(rng, sizes[case % len(sizes)])
        row = run_case(sc, old, base)
        rows.append(row)
        if not row["bisect"]["exact"] and len(misses) < 5:
            misses.append({"case": case, "complete": row["bisect"]["complete"], "shapes": sc.shapes, "edits": sc.edits,
                           "faults": sc.fault_data})
    names = ["bisect", "bisect_2_hosts", "bisect_2_hosts_spares", "one_at_a_time", "bound_greedy", "bound_exact_seen", "bound_exact"] + (["old_bisect"] if old else []) + (
        ["base_bisect", "base_bisect_2_hosts"] if base else [])
    report = {"cases": len(rows), "seed": args.seed, "summary": summary(rows, names), "bisect_misses": misses}
    text = json.dumps(report, indent=1, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
