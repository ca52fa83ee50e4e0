"""Start-up cost of what every ``workbench run``, runbook kernel and report imports, with
``workbench.importcost`` (workbench imported first) beside without it (the same imports, workbench
last), in one run; optionally a whole reused bisect run on the testbed, this tree beside a baseline.

    .venv/bin/python bench/import_cost.py
    .venv/bin/python bench/import_cost.py --bisect --baseline 430d6c5   # testbed up; seeds' ledger filled

Each figure is the median wall time of ``--runs`` fresh interpreters (``python -c``), which is what a
user and the test suite pay per process. The bisect figure needs a ledger that already holds every
trial of ``--preset seeds-k26`` on gpu-b (run it once first): its run then starts no server, so what is
left is the workbench's own overhead (CLI, kernel, cells, report).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from baseline_tree import export_tree

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "jsonschema": "import jsonschema",
    "kernel set-up (altair, nbformat, papermill)": "import altair, nbformat, papermill",
    "workbench run (cli + execute)": "import workbench.cli, workbench.runbooks.execute",
}


def wall(argv: list[str], cwd: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def imports(runs: int) -> None:
    print(f"| imports (median of {runs} fresh interpreters) | workbench first | workbench last | ratio |")
    print("|---|---:|---:|---:|")
    for name, code in CASES.items():
        first = wall([sys.executable, "-c", f"import workbench; {code}"], ROOT, runs)
        # (where the code imports workbench itself, it comes first either way: the baseline blocks the deferral)
        baseline = f"import jsonschema, workbench; {code}" if code.startswith("import workbench.") else \
            f"{code}; import workbench"
        last = wall([sys.executable, "-c", baseline], ROOT, runs)
        print(f"| {name} | {first:.2f} s | {last:.2f} s | {first / last:.2f} |")


def bisect(baseline: str, runs: int, ssh_config: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = export_tree(baseline, Path(tmp) / "base", "workbench", "runbooks")
        data = Path.home() / ".cache" / "workbench" / "bench-import-cost"
        argv = [sys.executable, "-m", "workbench", "--ssh-config", ssh_config, "run", "bisect", "--host", "gpu-b",
                "--preset", "seeds-k26", "--data-dir", str(data), "-p", "start_timeout", "120", "--no-progress"]
        subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)  # fills the ledger (starts once)
        this = wall(argv, ROOT, runs)
        env_argv = ["env", f"PYTHONPATH={base}", *argv]
        was = wall(env_argv, base, runs)
        print(f"\n| reused bisect run (median of {runs}) | this tree | {baseline} | ratio |")
        print("|---|---:|---:|---:|")
        print(f"| `workbench run bisect --preset seeds-k26`, every trial from the ledger | {this:.2f} s | {was:.2f} s "
              f"| {this / was:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bisect", action="store_true", help="also time a reused bisect run on the testbed")
    ap.add_argument("--baseline", default="430d6c5", help="revision for the bisect's side-by-side (default 430d6c5)")
    ap.add_argument("--ssh-config", default=str(Path.home() / ".cache/workbench/testbed/ssh_config"))
    args = ap.parse_args()
    imports(args.runs)
    if args.bisect:
        bisect(args.baseline, args.runs, args.ssh_config)


if __name__ == "__main__":
    main()
