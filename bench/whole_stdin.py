"""What the whole-input guard (``shell.whole_stdin``) adds to a command fed on stdin, side by side.

    PYTHONPATH=. .venv/bin/python bench/whole_stdin.py [--runs 40] [--rounds 3] [--kb 4]

A local host runs ``cat`` on ``--kb`` KB of stdin (a session record or unit text is 1-8 KB), with the
guard and without it (``_prepare`` alone, as before the guard), the two alternating by round; prints
the median wall of one ``run`` per round, in ms.  The local host is the guard's whole cost: over SSH
the same spool runs on the host, behind one channel round trip that is unchanged.
"""

from __future__ import annotations

import argparse
import statistics
import time

from workbench import hosts
from workbench.hosts import LocalHost


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kb", type=int, default=4)
    args = ap.parse_args()
    host, data = LocalHost(), b"x" * (args.kb * 1024)
    guarded = hosts._prepare_run

    def unguarded(cmd, input, env):  # type: ignore[no-untyped-def]
        text, sent = hosts._prepare(cmd, input, env)
        return text, sent, text

    medians: dict[str, list[float]] = {"guarded": [], "unguarded": []}
    try:
        for _ in range(args.rounds):
            for name, prepare in (("guarded", guarded), ("unguarded", unguarded)):
                hosts._prepare_run = prepare  # type: ignore[assignment]
                walls = []
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    host.run(["cat"], input=data, check=True)
                    walls.append(time.perf_counter() - t0)
                medians[name].append(statistics.median(walls) * 1000)
    finally:
        hosts._prepare_run = guarded
    for name, ms in medians.items():
        print(f"{name:10s} median ms per run, by round: {', '.join(f'{m:.1f}' for m in ms)}")
    print("added by the guard, by round (ms): "
          + ", ".join(f"{g - u:+.1f}" for g, u in zip(medians["guarded"], medians["unguarded"], strict=True)))


if __name__ == "__main__":
    main()
