"""Testbed timings: cold root-fs build, warm `up` of N hosts, `down`.

    .venv/bin/python bench/testbed_lifecycle.py [--hosts 2] [--cold]

--cold builds the root filesystem into a fresh temporary cache (debootstrap from the
Debian mirror); without it the cached tree is reused, which is the common case.
Stops any running testbed first (it is a machine-wide singleton).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from workbench.testbed import rootfs, testbed

    quiet = lambda _msg: None  # noqa: E731
    testbed.down(progress=quiet)
    out: dict[str, object] = {"hosts": args.hosts}
    if args.cold:
        with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
            os.environ["WORKBENCH_CACHE"] = tmp
            t = time.perf_counter()
            rootfs.build(progress=quiet)
            out["cold_build_s"] = round(time.perf_counter() - t, 1)
            del os.environ["WORKBENCH_CACHE"]
    rootfs.build(progress=quiet)
    ups, downs = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        testbed.up(args.hosts, progress=quiet)
        ups.append(time.perf_counter() - t)
        t = time.perf_counter()
        testbed.down(progress=quiet)
        downs.append(time.perf_counter() - t)
    out["warm_up_s"] = [round(x, 2) for x in ups]
    out["down_s"] = [round(x, 2) for x in downs]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
