"""Start the real vLLM server on localhost, time it, load it, stop it.

    python bench/vllm_serve.py [--port 18431] [--requests 8] [--max-tokens 128]

Prints one JSON object: seconds to ready (first 200 from /health), resident memory
of the whole process tree at ready and after load, and output tokens per second
of a streaming client at concurrency 1 and 16 (``/v1/completions``, ``ignore_eos``
so every request yields exactly ``--max-tokens`` tokens). Standard library only;
the helpers here are reused by bench/vllm_capture.py.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.testbed.tiny_model import default_model_dir, make_tiny_model
from workbench.testbed.vllm import VllmEnv, ensure_vllm_env


def start(
    env: VllmEnv,
    model: Path,
    port: int,
    log: IO[bytes],
    extra: Sequence[str] = (),
    environ: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start the server in its own process group, stdout+stderr into ``log``."""
    argv = env.serve_argv(model, port, extra)
    child_env = {**os.environ, **env.serve_environ(), **(environ or {})}
    return subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, env=child_env, start_new_session=True
    )


def wait_ready(proc: subprocess.Popen[bytes], port: int, timeout: float = 300) -> float | None:
    """Seconds until /health answers 200, or None if the process exits first."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            return None
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"server not ready after {timeout}s")


def tree_pids(root: int) -> list[int]:
    """``root`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def proc_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def tree_rss_mib(root: int) -> float:
    total = 0
    for pid in tree_pids(root):
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return round(total / 1024, 1)


def stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    """SIGTERM the server, SIGKILL its process group if it lingers; return its exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for pid in tree_pids(proc.pid)[1:]:  # children still under it, if any
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    # and what is left in its process group: children whose parent died before them (a server that crashed) were
    # handed to init, out of its tree but not out of its group
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode


def stream_one(port: int, model: str, prompt: str, max_tokens: int) -> dict[str, float]:
    """One streaming completion; returns ttft, total seconds and output tokens."""
    body = json.dumps(
        {
            "model": model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "stream": True,
            "ignore_eos": True,
            "temperature": 0.0,
            "stream_options": {"include_usage": True},
        }
    )
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:500]!r}")
    ttft, tokens, chunks = None, 0, 0
    for raw in resp:
        line = raw.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        data = json.loads(line[6:])
        if data.get("choices") and data["choices"][0].get("text"):
            chunks += 1
            if ttft is None:
                ttft = time.monotonic() - t0
        if data.get("usage"):
            tokens = data["usage"]["completion_tokens"]
    return {
        "ttft": ttft or 0.0,
        "seconds": time.monotonic() - t0,
        "tokens": float(tokens or chunks),
    }


def load(port: int, model: str, concurrency: int, requests: int, max_tokens: int) -> dict[str, Any]:
    """``requests`` streaming requests from ``concurrency`` threads; aggregate figures."""
    results: list[dict[str, float]] = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def worker() -> None:
        for i in counter:
            r = stream_one(port, model, f"request {i}: the quick brown fox", max_tokens)
            with lock:
                results.append(r)

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    tokens = sum(r["tokens"] for r in results)
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "output_tokens": int(tokens),
        "wall_s": round(wall, 2),
        "output_tok_per_s": round(tokens / wall, 1),
        "ttft_median_s": round(statistics.median(r["ttft"] for r in results), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=18431)
    parser.add_argument("--requests", type=int, default=8, help="per concurrency level (x4 at 16)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--log", type=Path, default=Path("/tmp/vllm_serve_bench.log"))
    args = parser.parse_args()

    t = time.monotonic()
    env = ensure_vllm_env()
    env_s = time.monotonic() - t
    model = make_tiny_model(default_model_dir(), env=env)
    with open(args.log, "wb") as log:
        proc = start(env, model, args.port, log)
        try:
            ready = wait_ready(proc, args.port)
            if ready is None:
                raise SystemExit(f"server exited {proc.returncode}; see {args.log}")
            out: dict[str, Any] = {
                "vllm": env.version,
                "ensure_env_s": round(env_s, 2),
                "ready_s": round(ready, 1),
                "rss_mib_at_ready": tree_rss_mib(proc.pid),
                "processes": sorted({proc_name(p) for p in tree_pids(proc.pid)}),
            }
            load(args.port, str(model), 1, 2, 16)  # warm-up
            out["c1"] = load(args.port, str(model), 1, args.requests, args.max_tokens)
            out["c16"] = load(args.port, str(model), 16, args.requests * 8, args.max_tokens)
            out["rss_mib_after_load"] = tree_rss_mib(proc.pid)
        finally:
            out_rc = stop(proc)
    out["exit_code_after_sigterm"] = out_rc
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
