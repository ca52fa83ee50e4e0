"""What one start of the simulated SGLang server costs, this tree beside a baseline revision, in one run.

    .venv/bin/python bench/sim_start.py                          # 5 starts each, baseline 3ad5896
    .venv/bin/python bench/sim_start.py --starts 8 --baseline HEAD~3

Each start is the testbed's unit command line (TP8 + DDTree, ``sglang-k26-ddtree.service``) run here
with Debian's ``/usr/bin/python3`` and the tree's ``workbench/sim`` on ``PYTHONPATH`` (the baseline's
is exported with ``git archive``), from launch to "The server is fired up", then stopped with SIGTERM
as systemd would. The two trees alternate, start by start, so the machine's load falls on both alike.

Per start: the wall seconds to ready, and the CPU seconds (user + system, from ``/proc``) that every
process of the server's tree had used when it was ready (the server, its ranks, and whatever starts
them). Each tree runs at its own default ``--sim-time-scale``; ``--time-scale`` sets one for both.
Bytecode caches are written on a first, unmeasured start of each tree, as a testbed host keeps them.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from baseline_tree import export_tree

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "workbench" / "testbed" / "models"
READY = "The server is fired up and ready to roll!"
TICK = os.sysconf("SC_CLK_TCK")


def argv(port: int) -> list[str]:
    return ["/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", str(MODELS / "Kimi-K2.6"),
            "--served-model-name", "kimi-k2.6", "--host", "127.0.0.1", "--port", str(port), "--tp-size", "8",
            "--trust-remote-code", "--speculative-algorithm", "DDTREE",
            "--speculative-draft-model-path", str(MODELS / "Kimi-K2.6-DFlash"), "--speculative-num-steps", "3",
            "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8", "--mem-fraction-static", "0.85",
            "--cuda-graph-max-bs", "64", "--enable-metrics"]


def tree_cpu(root: int) -> float:
    """CPU seconds used so far by ``root`` and all its descendants (read from /proc)."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parent[int(name)] = int(fields[1])
        cpu[int(name)] = (int(fields[11]) + int(fields[12])) / TICK
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack.extend(p for p, pp in parent.items() if pp == pid)
    return total


def start(sim: Path, port: int, state: Path, scale: str | None) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(sim), "SIM_GPU_STATE_DIR": str(state)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if scale is not None:
        env["SGLANG_SIM_TIME_SCALE"] = scale
    t0 = time.monotonic()
    p = subprocess.Popen(argv(port), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    assert p.stdout is not None
    try:
        for line in p.stdout:
            if READY in line:
                return time.monotonic() - t0, tree_cpu(p.pid)
        raise SystemExit(f"{sim}: the server ended before it was ready (exit {p.wait()})")
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        p.stdout.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--baseline", default="3ad5896")
    ap.add_argument("--time-scale", default=None, help="one --sim-time-scale for both trees (default: each its own)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = export_tree(args.baseline, Path(tmp) / "base", "workbench/sim")
        trees = {args.baseline: base / "workbench" / "sim", "this tree": ROOT / "workbench" / "sim"}
        cache = Path(tmp) / "pycache"
        os.environ["PYTHONPYCACHEPREFIX"] = str(cache)  # written by the first start, neither tree's folder
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in trees}
        for i in range(args.starts + 1):
            for name, sim in trees.items():
                got = start(sim, 39500 + i % 50, Path(tmp) / f"gpu-{len(runs[name])}", args.time_scale)
                if i:  # the first start of each writes its bytecode cache: not measured
                    runs[name].append(got)
    load = os.getloadavg()[0]
    print(f"{args.starts} starts each, alternating; load average {load:.1f} on {os.cpu_count()} CPUs; "
          f"baseline {args.baseline}")
    print("| tree | wall to ready, s (median, min-max) | CPU of the tree at ready, s (median, min-max) |")
    print("|---|---:|---:|")
    for name, got in runs.items():
        wall, cpu = [w for w, _ in got], [c for _, c in got]
        print(f"| {name} | {statistics.median(wall):.2f} ({min(wall):.2f}-{max(wall):.2f}) | "
              f"{statistics.median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f}) |")
    (b_w, b_c), (t_w, t_c) = ([statistics.median(x[k] for x in got) for k in (0, 1)] for got in runs.values())
    print(f"ratio this tree / baseline: wall {t_w / b_w:.2f}, CPU {t_c / b_c:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
