"""``workbench demo``: the main job on the embedded default — bisect the seeds' three flags.

Brings the testbed up (nspawn hosts with real systemd when it can, local processes
otherwise, and says which), runs ``runbooks/bisect.ipynb`` against ``gpu-a`` with the
preset ``seeds-k26`` (the seeds' edits ``--ep-size 8``, ``--enable-nccl-nvls``,
``--enable-flashinfer-allreduce-fusion`` on the TP8 + DDTree baseline), and prints the conclusion, the run directory and the report.
"""

from __future__ import annotations

import argparse
import os
import time

PRESET = "seeds-k26"  # workbench/runbooks/presets/bisect.toml: the seeds' unit and three edits


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("demo", help="bring the testbed up and bisect the seeds' flags on it (writes an HTML report)",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
                       epilog="examples:\n  workbench demo\n  workbench demo --backend local --rerun\n")
    p.add_argument("--backend", choices=("auto", "nspawn", "local"), default="auto",
                   help="nspawn (root + systemd-nspawn) or local processes; auto picks nspawn when it can")
    p.add_argument("--data-dir", default=os.environ.get("WORKBENCH_DATA_DIR") or "data", metavar="DIR",
                   help="where the run is recorded (default: $WORKBENCH_DATA_DIR, else ./data)")
    p.add_argument("--rerun", action="store_true", help="start every trial again even if the ledger has it")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from workbench.cli.testbed import _up
    from workbench.runbooks.execute import execute

    started = time.monotonic()
    _up(argparse.Namespace(hosts=2, backend=args.backend, provision="sim"))
    print("\nbisect: which of --ep-size 8, --enable-nccl-nvls, --enable-flashinfer-allreduce-fusion "
          "break sglang-k26-ddtree.service on gpu-a?")
    outcome = execute("bisect", {"host": "gpu-a", "rerun": args.rerun}, data_dir=args.data_dir, preset=PRESET)
    result = outcome.result or {}
    print(f"\n{outcome.conclusion}")
    from workbench.runbooks.show import culprit_lines

    for line in culprit_lines(result):
        print(f"  {line}")
    print(f"server starts: {result.get('server_starts')} (reused trials: "
          f"{sum(1 for t in result.get('trials', []) if t.get('reused'))}); host restored: {result.get('host_restored')}")
    print(f"run directory: {outcome.run_dir}\nreport:        {outcome.report}")
    print(f"demo finished in {time.monotonic() - started:.0f} s")
    return outcome.exit_code
