"""The simulator's own ceiling: max streamed tokens/s one server process can deliver here.

Starts ``python -m workbench.sim.server`` with ``--sim-speed`` high enough that the simulated GPU
is never the bottleneck, opens N concurrent streaming /v1/completions requests, and counts the
tokens clients receive over a window once every stream is flowing.  Client and server share this
machine's cores, so the figure is a lower bound of the server's own ceiling.

    .venv/bin/python bench/sim_ceiling.py --concurrency 64 --window 8 [--speculative]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from workbench.testbed.ports import free_port

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "tests" / "fixtures" / "sim" / "models"


def run(concurrency: int, window: float, speed: float, speculative: bool) -> dict[str, float]:
    port = free_port()
    spec = (
        [
            "--speculative-algorithm",
            "DDTREE",
            "--speculative-draft-model-path",
            str(MODELS / "Kimi-K2.6-DFlash"),
        ]
        if speculative
        else []
    )
    env = {**os.environ, "SIM_GPU_STATE_DIR": tempfile.mkdtemp(prefix="sim-ceiling-")}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workbench.sim.server",
            "--model-path",
            str(MODELS / "Kimi-K2.6"),
            "--trust-remote-code",
            "--tp-size",
            "8",
            "--port",
            str(port),
            "--sim-speed",
            str(speed),
            "--sim-time-scale",
            "0.005",
            "--decode-log-interval",
            "100000",
            *spec,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        for line in server.stdout:
            if "fired up and ready to roll" in line:
                break
        threading.Thread(target=server.stdout.read, daemon=True).start()
        tokens = [0] * concurrency
        chunks = [0] * concurrency
        flowing = threading.Barrier(concurrency + 1)
        stop = threading.Event()

        def client(i: int) -> None:
            body = {
                "prompt": f"ceiling {i}",
                "max_tokens": 10**6 // 4,
                "ignore_eos": True,
                "stream": True,
            }
            first = True
            with httpx.stream(
                "POST", f"http://127.0.0.1:{port}/v1/completions", json=body, timeout=60
            ) as r:
                for line in r.iter_lines():
                    if not line.startswith("data: {"):
                        continue
                    chunks[i] += 1
                    tokens[i] += json.loads(line[6:])["choices"][0]["text"].count(" ")
                    if first:
                        first = False
                        flowing.wait()
                    if stop.is_set():
                        return

        for i in range(concurrency):
            threading.Thread(target=client, args=(i,), daemon=True).start()
        flowing.wait(timeout=120)
        t0, tok0, ch0 = time.monotonic(), sum(tokens), sum(chunks)
        stop.wait(window)
        dt = time.monotonic() - t0
        result = {
            "concurrency": concurrency,
            "speculative": speculative,
            "sim_speed": speed,
            "tokens_per_s": (sum(tokens) - tok0) / dt,
            "chunks_per_s": (sum(chunks) - ch0) / dt,
        }
        stop.set()
        return result
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--window", type=float, default=8.0)
    ap.add_argument("--speed", type=float, default=1000.0)
    ap.add_argument("--speculative", action="store_true")
    args = ap.parse_args()
    print(json.dumps(run(args.concurrency, args.window, args.speed, args.speculative)))


if __name__ == "__main__":
    main()
