"""Where a trial's overhead goes: every SSH round trip of one trial, timed, on the nspawn testbed.

    PYTHONPATH=. .venv/bin/python bench/trial_profile.py [--host gpu-b] [--trials 3]

One session on ``--host``, ``--trials`` trials of the seeds' failing variant (``--ep-size 8``) of the
simulated SGLang base, as ``bench/trial_overhead.py`` runs them.  ``SSHHost.run``/``stream``/``tunnel``
are wrapped for the length of this script only (nothing in the package counts): each call's start
(seconds since the trial began), its duration, the thread that made it, and the command's first
words.  The last trial is printed in full (the first one also records the base and arms the guard);
every trial's count of round trips and its overhead (wall minus the watch's ``outcome.seconds``), of which
judging the failure (``trials.judge_failure``: the invocation's journal read again, classified).
Trials run as runbooks run them (``trials.run_trial``).
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

BASE = "sglang-k26-ddtree.service"


def _label(cmd: Any) -> str:
    if isinstance(cmd, int):
        return f"port {cmd}"
    text = cmd if isinstance(cmd, str) else " ".join(str(c) for c in cmd)
    return " ".join(text.split())[:110]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="gpu-b")
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()

    from workbench import ssh, trials
    from workbench.session import HostSession
    from workbench.testbed import paths
    from workbench.trials import judge_failure

    calls: list[tuple[float, float, str, str, str]] = []
    t0 = [time.monotonic()]

    def timed(kind: str, orig: Any) -> Any:
        def wrapper(self: Any, cmd: Any, *a: Any, **kw: Any) -> Any:
            start = time.monotonic()
            try:
                return orig(self, cmd, *a, **kw)
            finally:
                calls.append((start - t0[0], time.monotonic() - start, threading.current_thread().name[:10], kind,
                              _label(cmd)))
        return wrapper

    ssh.SSHHost.run = timed("run", ssh.SSHHost.run)  # type: ignore[method-assign]
    ssh.SSHHost.stream = timed("stream", ssh.SSHHost.stream)  # type: ignore[method-assign]
    ssh.SSHHost.tunnel = timed("tunnel", ssh.SSHHost.tunnel)  # type: ignore[method-assign]

    judged: list[float] = []

    def judge(svc: Any, trial: Any) -> Any:
        start = time.monotonic()
        try:
            return judge_failure(svc, trial)
        finally:
            judged.append(time.monotonic() - start)

    trials.judge_failure = judge  # type: ignore[assignment]
    host = ssh.SSHHost(args.host, ssh_config=str(paths.state_dir() / "ssh_config"))
    per_trial = []
    with HostSession(host, purpose="bench trial profile", lock_wait=300) as s:
        for _ in range(args.trials):
            calls.clear()
            judged.clear()
            t0[0] = time.monotonic()
            rec = trials.run_trial(s, BASE, {"--ep-size": "8"}, timeout=120)  # as a runbook's trial: judged too
            wall = time.monotonic() - t0[0]
            per_trial.append((wall, rec.seconds, sum(judged), sorted(calls)))
    for i, (wall, watch, judging, got) in enumerate(per_trial):
        print(f"trial {i}: {len(got)} round trips, wall {wall:.3f} s, watch {watch:.3f} s, "
              f"overhead {wall - watch:.3f} s (judging the failure {judging:.3f} s), {rec.outcome}")
    wall, watch, _, got = per_trial[-1]
    print(f"\nlast trial (overhead {wall - watch:.3f} s):\n   at     took  thread     kind    command")
    for at, took, thread, kind, label in got:
        print(f"{at:6.3f} {took:7.3f}  {thread:10} {kind:7} {label}")


if __name__ == "__main__":
    main()
