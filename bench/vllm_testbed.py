"""The real vLLM unit on the testbed, through the workbench: time each start and what it became.

    python bench/vllm_testbed.py [--host gpu-a] [--case NAME ...]

Needs a testbed provisioned with vllm (``workbench testbed up --provision sim,vllm``).
Runs every case as a variant of ``vllm-tiny.service`` in one ``HostSession`` (the
simulated SGLang baseline is stopped for the session, since it holds the simulated
GPUs, and restarted at the end), one server at a time, and prints one JSON object:
per case the outcome, the phase, the seconds from the start request to the verdict,
the exit status, the phase timeline (seconds since the start request) and, for a
failure, the root cause the traceback reader finds in that invocation's journal.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.session import HostSession
from workbench.ssh import SSHHost
from workbench.testbed import paths
from workbench.testbed.provision import BASE_UNIT, VLLM_HEALTH_PATH, VLLM_UNIT
from workbench.tracebacks import analyze
from workbench.variants import EditValue

CASES: dict[str, dict[str, EditValue]] = {
    "base": {},
    "max_num_seqs_1": {"--max-num-seqs": "1"},
    "no_enforce_eager": {"--enforce-eager": None},
    "max_model_len_1m": {"--max-model-len": "1000000"},
    "max_model_len_513": {"--max-model-len": "513"},
    "tp2": {"--tensor-parallel-size": "2"},
    "tp4": {"--tensor-parallel-size": "4"},
}


def journal(host: SSHHost, invocation: str) -> str:
    return host.run(["journalctl", "--no-pager", "-o", "cat", f"_SYSTEMD_INVOCATION_ID={invocation}"],
                    timeout=60, check=True).stdout


def run(host_name: str, cases: list[str], timeout: float) -> dict[str, Any]:
    host = SSHHost(host_name, ssh_config=str(paths.state_dir() / "ssh_config"))
    out: dict[str, Any] = {"host": host_name, "cases": {}}
    with HostSession(host, purpose="bench/vllm_testbed.py", lock_wait=600) as s:
        if s.svc.status(BASE_UNIT).running:
            s.protect(BASE_UNIT)
            s.svc.stop(BASE_UNIT)
        for name in cases:
            t0 = time.monotonic()
            trial = s.run_variant(VLLM_UNIT, CASES[name], health_path=VLLM_HEALTH_PATH, timeout=timeout)
            o = trial.outcome
            row: dict[str, Any] = {
                "edits": CASES[name], "outcome": o.outcome, "phase": o.phase, "seconds": round(o.seconds, 1),
                "trial_seconds": round(time.monotonic() - t0, 1), "reason": o.reason,
                "exit_status": trial.exit_status,
                "timeline": [(e.phase, round(e.seconds, 1) if e.seconds is not None else None) for e in o.timeline],
            }
            if not o.ok:
                a = analyze(journal(host, o.invocation_id))
                rc, fin = a.root_cause, a.final
                row["root_cause"] = None if rc is None else {
                    "kind": rc.kind, "type": rc.exception_type, "message": " / ".join(rc.message.splitlines()[:2])[:240],
                    "phase": rc.phase}
                row["final"] = None if fin is None else {"type": fin.exception_type,
                                                          "message": (fin.message or "")[:200]}
            out["cases"][name] = row
            print(name, row["outcome"], row["phase"], row["seconds"], file=sys.stderr)
        restore_t0 = time.monotonic()
    out["restore_seconds"] = round(time.monotonic() - restore_t0, 1)
    host.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="gpu-a")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="default: all")
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    print(json.dumps(run(args.host, args.case or list(CASES), args.timeout), indent=1))


if __name__ == "__main__":
    main()
