"""The sweep runbook's SLO search on real simulator starts: each configuration's limit, the points it took.

    PYTHONPATH=. .venv/bin/python bench/sweep_slo_search.py [--grid JSON] [--concurrency 1,16,64]
        [--slo-ttft-ms 400] [--points 5] [--repeats 2] [--port 30400]

A fresh local testbed of one host (the process backend, the simulated Kimi K2.6 server on ``--port``,
not 30000), then ``sweep.run`` with ``slo_search``: every configuration of the grid started as a
variant, the ladder measured, its SLO limit bisected; printed: the limits, the points each search
took, the conclusion, and the wall time. The testbed is taken down afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BASE = "sglang-k26-ddtree.service"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grid", default='{"--max-running-requests": ["8", "32"]}')
    ap.add_argument("--concurrency", default="1,16,64")
    ap.add_argument("--slo-ttft-ms", type=float, default=400.0)
    ap.add_argument("--points", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--port", type=int, default=30400, help="the simulated server's port (not 30000)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="wb-slo-") as tmp:
        os.environ["WORKBENCH_TESTBED_DIR"] = tmp
        from workbench.runbooks import sweep
        from workbench.testbed import local

        local.BASE_PORT = args.port  # one host: its server listens here
        local.up(1, progress=lambda _m: None)
        try:
            p = sweep.SweepParams(host="gpu-a", base_unit=BASE, grid=json.loads(args.grid),
                                  concurrency=[int(c) for c in args.concurrency.split(",")],
                                  slo_ttft_p99_ms=args.slo_ttft_ms, slo_search=True, slo_search_points=args.points,
                                  repeats=args.repeats, input_len=32, output_len=args.output_len, num_requests=8,
                                  requests_per_concurrency=1, warmup=1, telemetry=False, server_metrics=False,
                                  model_spec="", data_dir=str(Path(tmp) / "data"), start_timeout=120)
            t0 = time.monotonic()
            _run, res = sweep.run(p, progress=lambda line: print(line, flush=True))
            wall = time.monotonic() - t0
        finally:
            local.down(progress=lambda _m: None)
    print(f"\nstatus {res['status']}, {res.get('server_starts')} starts, {wall:.0f} s wall")
    for i, c in enumerate(res["configs"]):
        lim = c.get("slo_limit") or {}
        ladder = sum(not p.get("search") for p in c["points"])
        print(f"config {i} {c['edits']}: {c['outcome']}; limit {lim.get('value')} (missed at {lim.get('failing')}, "
              f"{lim.get('bound')}); {ladder} ladder + {len(lim.get('probes') or [])} search points "
              f"{lim.get('probes')}")
        for pt in c["points"]:
            print(f"    c={pt['concurrency']}{' (search)' if pt.get('search') else ''}: {pt['output_tok_s']:.0f} tok/s, "
                  f"TTFT p99 {pt.get('ttft_p99_ms', float('nan')):.0f} ms, met {pt['slo_met']}")
    print("\n" + res["conclusion"])
    return 0 if res["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
