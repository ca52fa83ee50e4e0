"""The bisect runbook on real simulator starts against the factorial truth: culprit sets, phase, exception.

    .venv/bin/python bench/bisect_phase_truth.py [--only NAME,...] [--random 0] [--seed 16]
                                                [--real-truth] [--out bench/results/bisect_phase_truth.json]
    .venv/bin/python bench/bisect_phase_truth.py --offline 300 --seed 1     # no starts: the search alone

Written apart from the code under test. Each scenario is a fault file in the simulator's own format
(workbench/sim/README.md, "Fault files") with 3-7 real SGLang flag edits on the seeds' base unit:
faults in every startup phase (``nccl_init`` .. ``warmup``), blockers (``when.none_of`` on another edit,
on a base value a valued edit changes, ``--skip-server-warmup`` / ``--disable-cuda-graph`` that skip a
phase), mutual fixes, faults that need a combination of edits, the same bug in two phases, warmup
failures after the graphs were captured, a kv-cache failure from a valued flag (``--mem-fraction-static``),
aliases (``--tp``) and removals (``--enable-metrics``), faults on some ranks only.

A local testbed host (``workbench.testbed.local``, the process backend, in a private
``$WORKBENCH_TESTBED_DIR``) runs the simulator; its base unit reads the scenario's fault file.
The bisect runbook (``workbench.runbooks.bisect.run``: the real trial path, watch, journal and
traceback analysis) runs on it.

Truth: the full factorial's minimal failing sets per failure (exception + message + phase).  By
default every set is decided by the simulator's own fault evaluation (``server_args`` parses the
variant's command line, ``simcore.faults.select_strike`` picks the strike: the code the simulated
server runs), and every real start the bisect made is checked against it (``trial_mismatches``).
``--real-truth`` runs the factorial itself on real starts through the same trial path instead
(``run_trial``, 2^n - 1 starts a scenario).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workbench" / "sim"))

from sglang.srt.server_args import flag_view, prepare_server_args  # noqa: E402
from simcore.faults import parse_faults, select_strike  # noqa: E402

from workbench.variants import EditValue, apply_edits  # noqa: E402

BASE = "sglang-k26-ddtree.service"
BASE_ARGV = ["--model-path", "/models/Kimi-K2.6", "--served-model-name", "kimi-k2.6", "--host", "0.0.0.0",
             "--port", "30000", "--tp-size", "8", "--trust-remote-code", "--speculative-algorithm", "DDTREE",
             "--speculative-draft-model-path", "/models/Kimi-K2.6-DFlash", "--speculative-num-steps", "3",
             "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8", "--mem-fraction-static",
             "0.85", "--cuda-graph-max-bs", "64", "--enable-metrics"]
# the exception a kind raises, as the root cause of the log (README "Kinds")
EXCEPTION = {"nccl": "RuntimeError", "cublas": "RuntimeError", "cuda_oom": "torch.OutOfMemoryError",
             "nonetype": "AttributeError", "illegal_memory_access": "torch.AcceleratorError",
             "weight_key_error": "KeyError"}
PHASES = ["nccl_init", "weight_loading", "kv_cache_alloc", "cuda_graph_capture", "warmup"]
KINDS = {"nccl_init": ["nccl"], "weight_loading": ["weight_key_error", "cuda_oom"], "kv_cache_alloc": ["cuda_oom"],
         "cuda_graph_capture": ["cublas", "nonetype", "illegal_memory_access", "cuda_oom", "nccl"],
         "warmup": ["cublas", "nonetype", "illegal_memory_access", "cuda_oom", "nccl"]}

Edit = tuple[str, EditValue]


def F(phase: str, kind: str, all_of: tuple[str, ...] = (), none_of: tuple[str, ...] = (),
      any_of: tuple[str, ...] = (), ranks: Any = "all", **params: Any) -> dict[str, Any]:
    when = {k: list(v) for k, v in (("all_of", all_of), ("any_of", any_of), ("none_of", none_of)) if v}
    out: dict[str, Any] = {"phase": phase, "kind": kind, "ranks": ranks}
    if when:
        out["when"] = when
    if params:
        out["params"] = params
    return out


NVLS: Edit = ("--enable-nccl-nvls", True)
SYMM: Edit = ("--enable-symm-mem", True)
FUSION: Edit = ("--enable-flashinfer-allreduce-fusion", True)
NOCAR: Edit = ("--disable-custom-all-reduce", True)
NORADIX: Edit = ("--disable-radix-cache", True)
COMPILE: Edit = ("--enable-torch-compile", True)
EP8: Edit = ("--ep-size", "8")
FP8: Edit = ("--kv-cache-dtype", "fp8_e4m3")
CHUNK: Edit = ("--chunked-prefill-size", "4096")
PAGE: Edit = ("--page-size", "64")
MEM95: Edit = ("--mem-fraction-static", "0.95")
MEM20: Edit = ("--mem-fraction-static", "0.2")
BS256: Edit = ("--cuda-graph-max-bs", "256")
NOMETRICS: Edit = ("--enable-metrics", None)
TP4: Edit = ("--tp", "4")
NOGRAPH: Edit = ("--disable-cuda-graph", True)
NOWARM: Edit = ("--skip-server-warmup", True)

# Designed scenarios: (name, edits, faults). Each names the shapes it holds.
DESIGNED: list[tuple[str, list[Edit], list[dict[str, Any]]]] = [
    ("nccl-combination+blocker", [NVLS, SYMM, NORADIX, CHUNK],
     [F("nccl_init", "nccl", ("--enable-nccl-nvls", "--enable-symm-mem"), ("--disable-radix-cache",)),
      F("warmup", "nonetype", ("--chunked-prefill-size=4096",))]),
    ("weights-blocker-on-base-value", [FP8, MEM95, EP8, PAGE],
     [F("weight_loading", "weight_key_error", ("--kv-cache-dtype=fp8_e4m3",), ("--mem-fraction-static=0.85",)),
      F("cuda_graph_capture", "nonetype", ("--ep-size=8",))]),
    ("kv-valued-mem-fraction", [MEM95, PAGE, NVLS, FUSION],
     [F("kv_cache_alloc", "cuda_oom", ("--mem-fraction-static=0.95",)),
      F("cuda_graph_capture", "cublas", ("--enable-nccl-nvls", "--enable-flashinfer-allreduce-fusion"),
        status="CUBLAS_STATUS_NOT_SUPPORTED")]),
    ("capture-and-warmup-same-bug", [EP8, NOGRAPH, NVLS, NORADIX],
     [F("cuda_graph_capture", "nonetype", ("--ep-size=8",)), F("warmup", "nonetype", ("--ep-size=8",)),
      F("kv_cache_alloc", "cuda_oom", ("--enable-nccl-nvls", "--disable-radix-cache"))]),
    ("warmup-after-capture-some-ranks", [FUSION, BS256, NOCAR, NOMETRICS, CHUNK],
     [F("warmup", "illegal_memory_access", ("--enable-flashinfer-allreduce-fusion",), ranks=[5]),
      F("cuda_graph_capture", "cuda_oom", ("--cuda-graph-max-bs=256", "--disable-custom-all-reduce")),
      F("warmup", "cublas", ("--enable-metrics=false", "--chunked-prefill-size=4096"), ranks={"count": 2})]),
    ("mutual-fix-nccl", [NVLS, SYMM, FP8, COMPILE],
     [F("nccl_init", "nccl", ("--enable-nccl-nvls",), ("--enable-symm-mem",), error="invalid usage"),
      F("nccl_init", "nccl", ("--enable-symm-mem",), ("--enable-nccl-nvls",), error="invalid usage"),
      F("weight_loading", "cuda_oom", ("--kv-cache-dtype=fp8_e4m3", "--enable-torch-compile"))]),
    ("skip-warmup-blocks-warmup", [NOWARM, FUSION, PAGE, EP8, NORADIX],
     [F("warmup", "nccl", ("--enable-flashinfer-allreduce-fusion",), error="unhandled cuda error"),
      F("warmup", "cuda_oom", ("--page-size=64", "--disable-radix-cache")),
      F("nccl_init", "nccl", ("--ep-size=8", "--skip-server-warmup"), error="remote error")]),
    ("alias-tp4-masking", [TP4, EP8, NVLS, CHUNK, NOMETRICS],
     [F("weight_loading", "weight_key_error", ("--tensor-parallel-size=4",), name="model.layers.7.self_attn.kv_a_proj"),
      F("cuda_graph_capture", "illegal_memory_access", ("--ep-size=8",)),
      F("warmup", "cublas", ("--enable-nccl-nvls",), ("--enable-metrics=false",))]),
    ("any-of-kv-and-capture-nccl", [PAGE, FP8, SYMM, NOCAR, COMPILE, NORADIX],
     [F("kv_cache_alloc", "cuda_oom", ("--enable-torch-compile",), any_of=("--page-size=64", "--kv-cache-dtype=fp8_e4m3")),
      F("cuda_graph_capture", "nccl", ("--enable-symm-mem", "--disable-custom-all-reduce")),
      F("warmup", "nonetype", ("--disable-radix-cache",), ("--enable-torch-compile",))]),
    ("three-edit-combination", [NVLS, FUSION, EP8, CHUNK, NORADIX, PAGE],
     [F("cuda_graph_capture", "cublas", ("--enable-nccl-nvls", "--enable-flashinfer-allreduce-fusion", "--ep-size=8")),
      F("warmup", "illegal_memory_access", ("--chunked-prefill-size=4096",), ranks=[2, 6]),
      F("kv_cache_alloc", "cuda_oom", ("--page-size=64",), ("--disable-radix-cache",))]),
    ("graph-off-moves-oom", [BS256, NOGRAPH, MEM95, FP8, SYMM, COMPILE, NOMETRICS],
     [F("cuda_graph_capture", "cuda_oom", ("--cuda-graph-max-bs=256",)),
      F("warmup", "cuda_oom", ("--mem-fraction-static=0.95", "--disable-cuda-graph")),
      F("nccl_init", "nccl", ("--enable-symm-mem", "--enable-torch-compile")),
      F("weight_loading", "weight_key_error", ("--kv-cache-dtype=fp8_e4m3",), ("--enable-metrics=false",))]),
    ("every-phase", [NVLS, FP8, MEM95, EP8, FUSION, PAGE, NORADIX],
     [F("nccl_init", "nccl", ("--enable-nccl-nvls", "--page-size=64")),
      F("weight_loading", "weight_key_error", ("--kv-cache-dtype=fp8_e4m3",), ("--disable-radix-cache",)),
      F("kv_cache_alloc", "cuda_oom", ("--mem-fraction-static=0.95",)),
      F("cuda_graph_capture", "nonetype", ("--ep-size=8",), ranks={"count": 1}),
      F("warmup", "cublas", ("--enable-flashinfer-allreduce-fusion",))]),
    # no fault for the first culprit: the simulator's own memory model runs out of KV cache room
    ("kv-natural-mem-fraction", [MEM20, NVLS, EP8],
     [F("cuda_graph_capture", "nonetype", ("--ep-size=8",), ("--enable-nccl-nvls",)),
      F("warmup", "nccl", ("--enable-nccl-nvls",), error="internal error")]),
]
# scenarios whose truth the fault evaluation does not hold (the simulator's own failures): the
# factorial runs on real starts for them
REAL_TRUTH = {"kv-natural-mem-fraction"}

POOL: list[tuple[Edit, str]] = [  # an edit and the fault term that holds when it is present
    (NVLS, "--enable-nccl-nvls"), (SYMM, "--enable-symm-mem"), (FUSION, "--enable-flashinfer-allreduce-fusion"),
    (NOCAR, "--disable-custom-all-reduce"), (NORADIX, "--disable-radix-cache"), (COMPILE, "--enable-torch-compile"),
    (EP8, "--ep-size=8"), (FP8, "--kv-cache-dtype=fp8_e4m3"), (CHUNK, "--chunked-prefill-size=4096"),
    (PAGE, "--page-size=64"), (MEM95, "--mem-fraction-static=0.95"), (BS256, "--cuda-graph-max-bs=256"),
    (NOMETRICS, "--enable-metrics=false"), (TP4, "--tensor-parallel-size=4"), (NOGRAPH, "--disable-cuda-graph"),
    (NOWARM, "--skip-server-warmup"),
]


def random_scenario(rng: random.Random, n: int, lead: str) -> tuple[list[Edit], list[dict[str, Any]]]:
    """``n`` edits and 2-4 faults, one of them in ``lead``; shapes drawn at random."""
    while True:
        pool = rng.sample(POOL, n)
        terms = [t for _, t in pool]
        faults = []
        for j in range(rng.randint(2, 4)):
            phase = lead if j == 0 else rng.choice(PHASES)
            kind = rng.choice(KINDS[phase])
            shape = rng.choice(["combo", "blocker", "single", "any", "mutual"])
            pos = rng.sample(terms, 2 if shape == "combo" else 1)
            neg = [rng.choice([t for t in terms if t not in pos])] if shape in ("blocker", "mutual") else []
            ranks: Any = rng.choice(["all", "all", [rng.randrange(8)], {"count": 2}])
            if phase in ("nccl_init", "weight_loading", "kv_cache_alloc"):
                ranks = "all"
            if shape == "any":
                faults.append(F(phase, kind, (), (), tuple(rng.sample(terms, 2)), ranks))
            else:
                faults.append(F(phase, kind, tuple(pos), tuple(neg), ranks=ranks))
            if shape == "mutual":
                faults.append(F(phase, kind, tuple(neg), tuple(pos), ranks=ranks))
        edits = [e for e, _ in pool]
        sc = Truth(edits, faults)
        if sc.verdict(()) is None and sc.verdict(tuple(edits)) is not None:
            return edits, faults


OFFLINE_SHAPES = {  # shape: (edits present, edits absent)
    "single": (1, 0), "combo": (2, 0), "combo3": (3, 0), "blocker": (1, 1), "combo_block": (2, 1),
    "double_block": (1, 2), "mutual": (1, 1), "any": (0, 0)}


def offline_scenario(rng: random.Random, n: int, lead: str) -> tuple[list[Edit], list[dict[str, Any]], list[str]]:
    """Like :func:`random_scenario`, with more shapes (three-edit combinations, a combination with a
    blocker, two blockers) and faults on some ranks in every phase; for ``--offline``."""
    while True:
        pool = rng.sample(POOL, n)
        terms = [t for _, t in pool]
        faults: list[dict[str, Any]] = []
        shapes = []
        for j in range(rng.randint(2, 4)):
            phase = lead if j == 0 else rng.choice(PHASES)
            kind = rng.choice(KINDS[phase])
            shape = rng.choice(list(OFFLINE_SHAPES))
            npos, nneg = OFFLINE_SHAPES[shape]
            if npos + nneg > n:
                continue
            shapes.append(shape)
            pos = rng.sample(terms, npos)
            neg = rng.sample([t for t in terms if t not in pos], nneg)
            ranks: Any = rng.choice(["all", "all", [rng.randrange(8)], {"count": 2}])
            if shape == "any":
                faults.append(F(phase, kind, (), (), tuple(rng.sample(terms, 2)), ranks))
            else:
                faults.append(F(phase, kind, tuple(pos), tuple(neg), ranks=ranks))
            if shape == "mutual":
                faults.append(F(phase, kind, tuple(neg), tuple(pos), ranks=ranks))
        edits = [e for e, _ in pool]
        if faults:
            sc = Truth(edits, faults)
            if sc.verdict(()) is None and sc.verdict(tuple(edits)) is not None:
                return edits, faults, shapes


def run_offline(cases: int, seed: int) -> dict[str, Any]:
    """The search alone (``workbench.bisect``) on the simulator's fault evaluation: this tree's search, and
    the same without the maximal sets (``maximal=False``, the search of the fourth round), on the same
    verdicts.  "wrong but complete": the answer differs from the factorial's while the guarantee said
    ``complete``."""
    import statistics

    from workbench.bisect import Verdict, bisect

    rng = random.Random(seed)
    rows = []
    for i in range(cases):
        edits, faults, shapes = offline_scenario(rng, rng.randint(3, 7), PHASES[i % len(PHASES)])
        truth = Truth(edits, faults)

        def oracle(sub: tuple[Edit, ...], truth: Truth = truth) -> Verdict:
            v = truth.verdict(tuple(sub))
            return Verdict.passed() if v is None else Verdict.failed(f"{v[0]}|{v[1]} in {v[2]}", v[2])

        want = truth.culprits()
        row: dict[str, Any] = {"n": len(edits), "shapes": shapes}
        for name, maximal in (("bisect", True), ("without_maximal_sets", False)):
            s = bisect(edits, oracle, maximal=maximal)
            got = {(frozenset(c.items), c.signature.split("|")[0], c.phase) for c in s.culprits}
            row[name] = {"starts": s.starts, "exact": got == want,
                         "complete": bool(s.guarantee and s.guarantee.complete)}
        rows.append(row)
    out: dict[str, Any] = {"cases": cases, "seed": seed}
    for name in ("bisect", "without_maximal_sets"):
        out[name] = {"exact": sum(r[name]["exact"] for r in rows),
                     "wrong_but_complete": sum(not r[name]["exact"] and r[name]["complete"] for r in rows),
                     "median_starts_by_n": {n: statistics.median(r[name]["starts"] for r in rows if r["n"] == n)
                                            for n in sorted({r["n"] for r in rows})}}
    return out


class Truth:
    """The simulator's own decision for every subset of the edits."""

    def __init__(self, edits: list[Edit], faults: list[dict[str, Any]]) -> None:
        self.edits = edits
        self.faults = [{"id": f"f{i}", **f} for i, f in enumerate(faults)]
        self.parsed = parse_faults({"version": 1, "fault": self.faults}, "<scenario>",
                                   flag_view(prepare_server_args(BASE_ARGV)).options)

    def verdict(self, subset: tuple[Edit, ...]) -> tuple[str, str, str] | None:
        """None (starts), else (exception type, signature key, phase)."""
        try:
            args = prepare_server_args(apply_edits(["python3", *BASE_ARGV], list(subset))[1:])
        except ValueError as exc:
            return ("ValueError", f"ValueError {exc}", "startup_other")
        groups = 1 if args.enable_dp_attention else args.dp_size
        strike = select_strike(self.parsed, flag_view(args), args.tp_size * args.pp_size * groups, 0,
                               warmup_enabled=not args.skip_server_warmup, graphs_enabled=not args.disable_cuda_graph)
        if strike is None:
            return None
        kind = strike.fault.kind
        return (EXCEPTION[kind], f"{kind} {json.dumps(strike.fault.params, sort_keys=True)}", strike.phase)

    def culprits(self, verdicts: dict[frozenset[Edit], tuple[str, str, str] | None] | None = None
                 ) -> set[tuple[frozenset[Edit], str, str]]:
        """Minimal failing sets per failure: (edits, exception type, phase)."""
        fails: dict[frozenset[Edit], tuple[str, str, str]] = {}
        for k in range(1, len(self.edits) + 1):
            for sub in itertools.combinations(self.edits, k):
                v = verdicts[frozenset(sub)] if verdicts is not None else self.verdict(sub)
                if v is not None:
                    fails[frozenset(sub)] = v
        out = set()
        for s, v in fails.items():
            if not any(t < s and fails[t][1:] == v[1:] for t in fails):
                out.add((s, v[0], v[2]))
        return out

    def toml(self) -> str:
        lines = ["version = 1"]
        for f in self.faults:
            lines.append("\n[[fault]]")
            for key in ("id", "phase", "kind"):
                lines.append(f"{key} = {json.dumps(f[key])}")
            r = f["ranks"]
            lines.append("ranks = " + (json.dumps(r) if not isinstance(r, dict) else f"{{count = {r['count']}}}"))
            for key, terms in f.get("when", {}).items():
                lines.append(f"when.{key} = {json.dumps(terms)}")
            if f.get("params"):
                lines.append("[fault.params]")
                lines.extend(f"{k} = {json.dumps(v)}" for k, v in f["params"].items())
        return "\n".join(lines) + "\n"


def testbed(state: Path, faults_path: Path, port: int = 30961) -> Any:
    """One local testbed host whose base unit reads ``faults_path``; returns the host."""
    os.environ["WORKBENCH_TESTBED_DIR"] = str(state / "tb")
    os.environ["WORKBENCH_CACHE"] = str(state / "cache")
    os.environ["WORKBENCH_INVENTORY"] = str(state / "no-inventory.toml")
    from workbench.hosts import connect
    from workbench.services import services_for
    from workbench.testbed import local

    faults_path.write_text("version = 1\n")
    local.up(1, start_baseline=False, progress=lambda _m: None)
    unit = state / "tb" / "local" / "gpu-a" / "services" / "units" / BASE
    # a port of its own: the local testbed's 30000 is in the machine's network namespace, where another
    # local testbed (an integration test) may serve at the same time -- and answer this host's health checks
    unit.write_text(unit.read_text().replace("ExecStart=", f'Environment="SGLANG_SIM_FAULT_FILE={faults_path}"\n'
                                             "ExecStart=", 1).replace("--port 30000", f"--port {port}"))
    host = connect("gpu-a")
    services_for(host).start(BASE)
    return host


def _key(edits: list[list[Any]]) -> frozenset[Edit]:
    return frozenset((f, tuple(v) if isinstance(v, list) else v) for f, v in edits)


def run_scenario(name: str, edits: list[Edit], faults: list[dict[str, Any]], faults_path: Path, data_dir: Path,
                 real_truth: bool) -> dict[str, Any]:
    from workbench.runbooks import bisect as rb

    truth = Truth(edits, faults)
    faults_path.write_text(truth.toml())
    row: dict[str, Any] = {"name": name, "n": len(edits), "edits": edits, "faults": truth.faults}
    sim_truth = truth.culprits()
    verdicts: dict[frozenset[Edit], tuple[str, str, str] | None] = {}
    if real_truth:
        from workbench.hosts import connect
        from workbench.session import HostSession
        from workbench.trials import run_trial

        with HostSession(connect("gpu-a")) as s:
            for k in range(1, len(edits) + 1):
                for sub in itertools.combinations(edits, k):
                    rec = run_trial(s, BASE, list(sub), timeout=120)
                    verdicts[frozenset(sub)] = (None if rec.outcome == "ready" else
                                                (str(rec.exception_type), str(rec.signature_id), rec.phase))
        row["real_truth_starts"] = len(verdicts)
        real = truth.culprits(verdicts)
        row["real_truth_agrees_with_sim"] = real == sim_truth
        expected = real
    else:
        expected = sim_truth
    t0 = time.time()
    params = rb.BisectParams(host="gpu-a", base_unit=BASE, edits=dict(edits), data_dir=str(data_dir), rerun=True,
                             start_timeout=120)
    _run, result = rb.run(params, progress=lambda _m: None)
    row["wall"] = round(time.time() - t0, 1)
    got = {(_key(c["edits"]), c["exception_type"], c["phase"]) for c in result.get("culprits", [])}
    row["server_starts"] = result.get("server_starts")
    row["status"] = result.get("status")
    row["failure"] = result.get("failure")
    row["complete"] = (result.get("guarantee") or {}).get("complete")
    row["sets_right"] = {c[0] for c in got} == {c[0] for c in expected}
    row["sets_phase_right"] = {(c[0], c[2]) for c in got} == {(c[0], c[2]) for c in expected}
    row["exact"] = got == expected
    row["truth"] = sorted([[sorted(map(list, s)), e, p] for s, e, p in expected], key=str)
    row["got"] = sorted([[sorted(map(list, s)), e, p] for s, e, p in got], key=str)
    mism = []
    for t in result.get("trials", []):
        sub = tuple((f, tuple(v) if isinstance(v, list) else v) for f, v in t["edits"])
        want = verdicts[frozenset(sub)] if real_truth else truth.verdict(sub)
        have = None if t["outcome"] == "ready" else (t["exception_type"], t["phase"])
        if (want and (want[0], want[2])) != have:
            mism.append({"edits": t["edits"], "want": want and [want[0], want[2]], "have": have,
                         "outcome": t["outcome"]})
    row["trial_mismatches"] = mism
    row["run_dir"] = str(_run.dir) if _run is not None else ""
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated scenario names (designed ones, or random-N)")
    ap.add_argument("--designed", type=int, default=1, help="1: run the designed scenarios")
    ap.add_argument("--random", type=int, default=0, help="random scenarios besides the designed ones")
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--real-truth", action="store_true", help="the factorial on real starts (2^n - 1 each)")
    ap.add_argument("--state", default="", help="testbed state directory (default: a new temporary one)")
    ap.add_argument("--out", default="")
    ap.add_argument("--offline", type=int, default=0, help="N: no starts; the search alone on N random "
                    "scenarios of 3-7 edits decided by the simulator's fault evaluation (seed --seed)")
    args = ap.parse_args()
    if args.offline:
        text = json.dumps(run_offline(args.offline, args.seed), indent=1)
        print(text)
        if args.out:
            Path(args.out).write_text(text)
        return
    scenarios = list(DESIGNED) if args.designed else []
    rng = random.Random(args.seed)
    for i in range(args.random):
        edits, faults = random_scenario(rng, rng.randint(3, 6), PHASES[i % len(PHASES)])
        scenarios.append((f"random-{i}", edits, faults))
    only = [s for s in args.only.split(",") if s]
    if only:
        scenarios = [s for s in scenarios if s[0] in only]
    state = Path(args.state or tempfile.mkdtemp(prefix="phase-truth-"))
    state.mkdir(parents=True, exist_ok=True)
    faults_path = state / "faults.toml"
    testbed(state, faults_path)
    rows = []
    try:
        for name, edits, faults in scenarios:
            row = run_scenario(name, edits, faults, faults_path, state / "data",
                               args.real_truth or name in REAL_TRUTH)
            rows.append(row)
            print(f"{name}: n={row['n']} starts={row['server_starts']} wall={row['wall']} s exact={row['exact']} "
                  f"sets={row['sets_right']} sets+phase={row['sets_phase_right']} "
                  f"trial mismatches={len(row['trial_mismatches'])}", flush=True)
            if not row["exact"]:
                print(f"  truth: {row['truth']}\n  got:   {row['got']}", flush=True)
    finally:
        import shutil

        from workbench.testbed import local

        if any(r.get("status") != "ok" or r["trial_mismatches"] for r in rows):  # keep the logs to look at
            shutil.copytree(state / "tb" / "local" / "gpu-a" / "services", state / "kept-services",
                            ignore=shutil.ignore_patterns("*.sock"), dirs_exist_ok=True)
        local.down(progress=lambda _m: None)
    summary = {"scenarios": len(rows), "exact": sum(r["exact"] for r in rows),
               "sets_right": sum(r["sets_right"] for r in rows),
               "sets_phase_right": sum(r["sets_phase_right"] for r in rows),
               "trial_mismatches": sum(len(r["trial_mismatches"]) for r in rows),
               "phases_covered": sorted({p for r in rows for _, _, p in r["truth"]})}
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
