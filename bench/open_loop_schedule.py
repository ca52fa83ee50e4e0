"""Open-loop arrivals: does each client send on its gamma schedule at a given rate and burstiness?

    .venv/bin/python bench/open_loop_schedule.py [--rates 20,100,400] [--burstiness 1,0.25] [--requests 400]

A fixed-schedule server (TTFT 5 ms, one token every 2 ms, 4 tokens: ~11 ms a request) in its own
process; each client in this process, uncapped. Per (client, rate, burstiness): the seeded schedule's
own rate over the target (400 gamma draws: the same for both clients), the achieved send rate over
the schedule's, the median and p99 send delay behind the intended time, and the coefficient of
variation of the actual send gaps against the schedule's (the gamma's is 1/sqrt(burstiness)).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
from pathlib import Path

from workbench.bench import client, hostclient
from workbench.bench.loadcore import LoadSpec

CLIENTS = {"hostclient": hostclient.run, "httpx": lambda s: client.run_local(s, progress=False)}


def pct(v: list[float], q: float) -> float:
    s = sorted(v)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


def rate_of(times: list[float]) -> float:
    return (len(times) - 1) / (times[-1] - times[0])


def cv_of(times: list[float]) -> float:
    gaps = [y - x for x, y in itertools.pairwise(times)]
    return statistics.pstdev(gaps) / statistics.mean(gaps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="20,100,400")
    ap.add_argument("--burstiness", default="1,0.25")
    ap.add_argument("--requests", type=int, default=400)
    a = ap.parse_args()
    proc = subprocess.Popen([sys.executable, "-m", "workbench.bench.fixedserver", "--port", "0", "--ttft-ms", "5",
                             "--itl-ms", "2"], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[1])
    assert proc.stdout is not None
    url = f"http://127.0.0.1:{proc.stdout.readline().split()[1]}"
    print("| client | rate (req/s) | burstiness | schedule / target | sent / schedule | send delay p50 (ms) | p99 (ms) "
          "| gap CV sent (schedule; 1/sqrt(b)) |")
    print("|---|---|---|---|---|---|---|---|")
    try:
        for name, run in CLIENTS.items():
            for rate in (float(x) for x in a.rates.split(",")):
                for b in (float(x) for x in a.burstiness.split(",")):
                    spec = LoadSpec(url=url, input_len=16, output_len=4, num_requests=a.requests, concurrency=None,
                                    rate=rate, burstiness=b, warmup=0, seed=1, tokens_per_word=(0.0, 1.0), model="m")
                    records, _ = run(spec)
                    sent = sorted(r["start_unix"] for r in records)
                    meant = sorted(r["start_unix"] - r["sched_delay_s"] for r in records)
                    delay = [r["sched_delay_s"] * 1000 for r in records]
                    sched_rate, sent_rate = rate_of(meant), rate_of(sent)
                    print(f"| {name} | {rate:g} | {b:g} | {sched_rate / rate:.3f} | {sent_rate / sched_rate:.3f} | "
                          f"{statistics.median(delay):.2f} | {pct(delay, 99):.2f} | {cv_of(sent):.2f} "
                          f"({cv_of(meant):.2f}; {b ** -0.5:.2f}) |", flush=True)
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
