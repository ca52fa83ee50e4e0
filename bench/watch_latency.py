"""Detection latency of the watch: from the server process's exit (journal timestamp) to the verdict.

    .venv/bin/python bench/watch_latency.py [--host gpu-a] [--starts 20] [--poll 0.5]

Starts a failing variant of the seeds' base (``--ep-size 8``: the simulator crashes in CUDA graph
capture) ``--starts`` times on the testbed and reports the median and max latency between the
journal's "Main process exited" record and the moment ``watch_start`` returned "failed".
Baseline in the same run: the seeds' style readiness loop — poll ``systemctl is-active`` every
second over SSH — measured the same way on the same variant.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from workbench.hosts import connect
from workbench.session import HostSession
from workbench.watch import watch_start

BASE = "sglang-k26-ddtree.service"


def exit_usec(host, unit: str, invocation: str) -> int | None:  # type: ignore[no-untyped-def]
    res = host.run(["journalctl", "-o", "json", "--no-pager", f"INVOCATION_ID={invocation}",
                    "MESSAGE_ID=98e322203f7a4ed290d09fe03c09fe15"], timeout=30)
    for line in res.stdout.splitlines():
        return int(json.loads(line)["__REALTIME_TIMESTAMP"])
    return None


def polling_loop(svc, host, unit: str, interval: float = 1.0) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """The hand-written loop of the seeds: is it active? sleep; repeat."""
    before = svc.status(unit).invocation_id
    svc.start(unit)
    while True:
        st = svc.status(unit)
        if st.invocation_id != before and st.active_state in ("failed", "inactive"):
            return int(time.time() * 1e6), st.invocation_id
        time.sleep(interval)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="gpu-a")
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--poll", type=float, default=0.5)
    args = ap.parse_args()
    host = connect(args.host)
    watch, loop = [], []
    with HostSession(host, purpose="bench watch latency", lock_wait=300) as s:
        s.protect(BASE)
        v = s.variant(BASE, {"--ep-size": "8"})
        s.record.created.append(v.name)
        s._save()
        s.svc.install_variant(v)
        s.svc.stop_if_running(BASE)
        for _ in range(args.starts):
            out = watch_start(s.svc, v.name, timeout=120, poll=args.poll)
            assert out.outcome == "failed", out.describe()
            exit_us = exit_usec(host, v.name, out.invocation_id) or out.exit_usec
            if exit_us and out.detected_usec:
                watch.append((out.detected_usec - exit_us) / 1e6)
            s.svc.reset(v.name)
        for _ in range(max(3, args.starts // 4)):
            detected, inv = polling_loop(s.svc, host, v.name)
            exit_us = exit_usec(host, v.name, inv)
            if exit_us:
                loop.append((detected - exit_us) / 1e6)
            s.svc.reset(v.name)
    print(json.dumps({
        "starts": len(watch),
        "watch_median_s": round(statistics.median(watch), 3), "watch_max_s": round(max(watch), 3),
        "poll_loop_1s_median_s": round(statistics.median(loop), 3), "poll_loop_1s_max_s": round(max(loop), 3),
        "poll_loop_starts": len(loop),
    }))


if __name__ == "__main__":
    main()
