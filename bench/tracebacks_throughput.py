"""Throughput and memory of the log parsers, this tree beside a baseline revision, in one run.

    .venv/bin/python bench/tracebacks_throughput.py                    # 100 MB inputs, baseline d7a812c
    .venv/bin/python bench/tracebacks_throughput.py --mb 20 --baseline HEAD~3

Inputs (each cut to ``--mb``):

* ``dense``: every real log in tests/fixtures/tracebacks/ concatenated and repeated, about one
  line in three inside a traceback, far denser than a server log (the figure issue 5 used);
* ``server``: real serving logs (tests/fixtures/captured/vllm/serve_under_load.log, an SGLang
  start to ready) repeated, with every traceback fixture inserted once per megabyte: the shape of
  a long-running server's journal;
* ``random``: random bytes (``--mb`` of them), for the peak memory of reading a file that is
  not a log.

Each measurement runs in a fresh Python process with the tree under test first on the path
(the baseline is exported with ``git archive``), so the peak RSS is that of one analysis.
Times are CPU seconds of that process (``time.process_time``), so other work on a shared
machine counts less; 1/4 of each input is also timed to show the time grows linearly. The
baseline has no streaming reader, so its file figures read the whole file and decode it, as
its CLI did.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from baseline_tree import export_tree

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "tracebacks"
SERVING = (ROOT / "tests" / "fixtures" / "captured" / "vllm" / "serve_under_load.log",
           ROOT / "tests" / "fixtures" / "logs" / "phases" / "sglang_tp1_startup_ready.log")

# what one child process runs: analyse a file (streaming when the tree has it) and report
CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import workbench.tracebacks as tb
path, part = sys.argv[2], float(sys.argv[3])
t = time.process_time()
if part < 1.0:
    data = open(path, "rb").read()
    text = data[: int(len(data) * part)].decode("utf-8", "replace")
    del data
    a = tb.analyze(text)
elif hasattr(tb, "analyze_stream"):
    with open(path, "rb") as fh:
        a = tb.analyze_stream(fh)
else:
    a = tb.analyze(open(path, "rb").read().decode("utf-8", "replace"))
dt = time.process_time() - t
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]  # ru_maxrss survives exec
rss = int(hwm[0].split()[1]) / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"cpu_s": dt, "tracebacks": len(a.tracebacks), "failures": len(a.failures), "rss_mb": rss}))
"""


def make_inputs(megabytes: float, out: Path) -> dict[str, Path]:
    want = int(megabytes * 1_000_000)
    logs = [p.read_text(errors="replace") for p in sorted(FIXTURES.glob("*.log"))]
    dense = "\n".join(logs)
    paths = {"dense": out / "dense.log", "server": out / "server.log", "random": out / "random.bin"}
    paths["dense"].write_text((dense * (want // len(dense) + 1))[:want])
    serving = "\n".join(p.read_text(errors="replace") for p in SERVING)
    parts: list[str] = []
    size = i = 0
    while size < want:
        chunk = serving * max(1, 1_000_000 // len(serving)) + "\n" + logs[i % len(logs)] + "\n"
        parts.append(chunk)
        size += len(chunk)
        i += 1
    paths["server"].write_text("".join(parts)[:want])
    with open(paths["random"], "wb") as fh:
        left = want
        while left > 0:
            n = min(left, 1 << 20)
            fh.write(os.urandom(n))
            left -= n
    return paths


def run(tree: Path, path: Path, part: float) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(path), str(part)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0, help="size of each input in MB (default 100)")
    ap.add_argument("--baseline", default="d7a812c", help="revision to compare with (default d7a812c, before issue 15)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = export_tree(args.baseline, Path(tmp) / "baseline", "workbench")
        paths = make_inputs(args.mb, Path(tmp))
        print(f"inputs: {args.mb:g} MB each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
              f"baseline {args.baseline}")
        print("| input | tree | MB/s (full) | MB/s (1/4) | time full/quarter | peak RSS MB | tracebacks |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for name in ("dense", "server", "random"):
            for label, tree in (("baseline", base), ("this tree", ROOT)):
                full = run(tree, paths[name], 1.0)
                quarter = run(tree, paths[name], 0.25) if name != "random" else None
                mbs = args.mb / full["cpu_s"] if full["cpu_s"] else float("inf")
                q = f"{args.mb / 4 / quarter['cpu_s']:.1f}" if quarter else "-"
                ratio = f"{full['cpu_s'] / quarter['cpu_s']:.2f}" if quarter else "-"
                print(f"| {name} | {label} | {mbs:.1f} | {q} | {ratio} | {full['rss_mb']:.0f} | {full['tracebacks']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
