"""Where a trial's overhead goes: every SSH round trip of one trial, timed, on the nspawn testbed.

    PYTHONPATH=. .venv/bin/python bench/trial_profile.py [--host gpu-b] [--trials 3]

One session on ``--host``, ``--trials`` trials of the seeds' failing variant (``--ep-size 8``) of the
simulated SGLang base, as ``bench/trial_overhead.py`` runs them.  ``SSHHost.run``/``stream``/``tunnel``
are wrapped for the length of this script only (nothing in the package counts): each call's start
(seconds since the trial began), its duration, the thread that made it, and the command's first
words.  The last trial is printed in full (the first one also records the base and arms the guard);
every trial's count of round trips and its overhead (wall minus the watch's ``outcome.seconds``), of which
judging the failure (``trials.judge_failure``: the invocation's journal read and classified).
Trials run as runbooks run them (``trials.run_trial``).  Trials alternate between the two ways of
reading the failed invocation's journal, in one session: ``beside`` (``run_variant(read_log=True)``,
as ``run_trial`` does: read on a second channel while the variant is removed) and ``after`` (read by
``judge_failure`` once the variant is gone, as before); the medians of each are printed side by side.
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
    mode = ["beside"]
    run_variant = HostSession.run_variant

    def run_variant_as(self: Any, *a: Any, read_log: bool = False, **kw: Any) -> Any:
        return run_variant(self, *a, read_log=read_log and mode[0] == "beside", **kw)

    HostSession.run_variant = run_variant_as  # type: ignore[method-assign]
    host = ssh.SSHHost(args.host, ssh_config=str(paths.state_dir() / "ssh_config"))
    per_trial = []
    with HostSession(host, purpose="bench trial profile", lock_wait=300) as s:
        for i in range(args.trials):
            for mode[0] in (("beside", "after") if i % 2 == 0 else ("after", "beside")):
                calls.clear()
                judged.clear()
                t0[0] = time.monotonic()
                rec = trials.run_trial(s, BASE, {"--ep-size": "8"}, timeout=120)  # as a runbook's trial: judged too
                wall = time.monotonic() - t0[0]
                per_trial.append((mode[0], wall, rec.seconds, sum(judged), sorted(calls)))
    for i, (how, wall, watch, judging, got) in enumerate(per_trial):
        print(f"trial {i} ({how}): {len(got)} round trips, wall {wall:.3f} s, watch {watch:.3f} s, "
              f"overhead {wall - watch:.3f} s (judging the failure {judging:.3f} s), {rec.outcome}")
    later = per_trial[2:]  # the first two record the base and arm the guard
    for how in ("after", "beside"):
        over = sorted(w - watch for m, w, watch, _, _ in later if m == how)
        judged_s = sorted(j for m, _, _, j, _ in later if m == how)
        if over:
            print(f"{how:6}: median overhead {over[len(over) // 2]:.3f} s (min {over[0]:.3f}, max {over[-1]:.3f}), "
                  f"median judging {judged_s[len(judged_s) // 2]:.3f} s, {len(over)} trials")
    _, wall, watch, _, got = per_trial[-1]
    print(f"\nlast trial (overhead {wall - watch:.3f} s):\n   at     took  thread     kind    command")
    for at, took, thread, kind, label in got:
        print(f"{at:6.3f} {took:7.3f}  {thread:10} {kind:7} {label}")


if __name__ == "__main__":
    main()
