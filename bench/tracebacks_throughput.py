"""Throughput of the log parsers: MB/s of log text through ``analyze``, lines/s through ``parse_line``.

    .venv/bin/python bench/tracebacks_throughput.py            # 100 MB, the figure in docs/tracebacks.md
    .venv/bin/python bench/tracebacks_throughput.py --mb 10    # quicker

The input is every real log in tests/fixtures/tracebacks/ concatenated and repeated up
to the requested size (about one traceback line in three, far denser than a server log,
so this is a pessimistic figure). It also runs 1/4 of the size to show the time grows
linearly, and reports the peak RSS. Times are CPU seconds of this process
(``time.process_time``), so other work on a shared machine does not count; the load
average is printed alongside.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.logformats import parse_line  # noqa: E402
from workbench.phases import timeline  # noqa: E402
from workbench.tracebacks import analyze  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "tracebacks"


def corpus(megabytes: float) -> str:
    base = "\n".join(p.read_text(errors="replace") for p in sorted(FIXTURES.glob("*.log")))
    want = int(megabytes * 1_000_000)
    return (base * (want // len(base) + 1))[:want]


def timed(fn, *args):  # type: ignore[no-untyped-def]
    """CPU seconds of this process: on a shared machine wall time mostly measures the neighbours."""
    t = time.process_time()
    out = fn(*args)
    return time.process_time() - t, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0, help="size of the input in MB (default 100)")
    args = ap.parse_args()

    text = corpus(args.mb)
    lines = text.split("\n")
    mb = len(text.encode()) / 1e6
    print(f"input: {mb:.1f} MB, {len(lines):,} lines, {len(list(FIXTURES.glob('*.log')))} real logs repeated; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    sample = lines[: min(len(lines), 500_000)]
    dt, _ = timed(lambda: [parse_line(x) for x in sample])
    print(f"parse_line:            {len(sample) / dt:>12,.0f} lines/s  ({len(sample):,} lines in {dt:.2f} s)")

    quarter = text[: len(text) // 4]
    dq, _ = timed(analyze, quarter)
    da, analysis = timed(analyze, text)
    print(f"analyze (1/4 input):   {mb / 4 / dq:>12,.1f} MB/s   ({dq:.2f} s)")
    print(f"analyze (full input):  {mb / da:>12,.1f} MB/s   ({da:.2f} s, {len(analysis.tracebacks):,} tracebacks, "
          f"{len(analysis.failures)} failures)")
    print(f"CPU time ratio full / quarter: {da / dq:.2f} (4.0 = linear)")

    dp, rows = timed(timeline, text)
    print(f"phases.timeline:       {mb / dp:>12,.1f} MB/s   ({dp:.2f} s, {len(rows):,} rows)")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
