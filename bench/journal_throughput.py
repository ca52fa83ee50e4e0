"""Journal retrieval throughput: a 1,000,000-line invocation fetched over SSH into a JournalFrame,
side by side with ``ssh HOST journalctl -u UNIT -o cat > /dev/null`` (the transfer limit).

    .venv/bin/python bench/journal_throughput.py [--host gpu-a] [--lines 1000000] [--rounds 3]

Runs ``jtest-bench-*.service`` (tests/fixtures/journal/emit.py ``big N``: SGLang-like lines)
once, with ``LogRateLimitBurst=`` raised so journald keeps every line (on systemd 252
``LogRateLimitIntervalSec=0`` on a unit does *not* turn rate limiting off: PID 1 does not
pass 0 on to journald, which then applies its default), then times, interleaved per round:

* ``raw``: OpenSSH running ``journalctl -u UNIT -o cat`` into /dev/null;
* ``read``: ``journal_read.read(svc, UNIT, invocation="last")`` as it is now: the stream lines
  as ``-o short-unix`` text (journal_text), the rest through ``-o export``; the slices it
  chooses by itself (``jobs=None``), one slice (``read_one``) and ``--jobs`` slices;
* ``read_export``: the same read all through ``-o export`` (``text=False``: the reader before
  issue 14), one slice and ``--jobs`` slices;
* context: the host alone producing ``-o short-unix``, ``-o export`` and ``-o json`` into
  /dev/null, and the client steps of one export read (fetch, export parse, frame assembly)
  with their CPU seconds.

Prints a Markdown table (lines/s, ratio to raw) and the JSON of all samples.  The unit's
1M entries stay in the host's journal (about 0.5 GB); nothing else is left behind.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from workbench.journal import export_argv, invocation_matches
from workbench.journal import read as journal_read
from workbench.journal import systemd as journal_systemd
from workbench.journal.fetch import fetch
from workbench.journal.frame import Lost, build_frame
from workbench.services import SystemdServices
from workbench.ssh import SSHHost

EMIT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "journal" / "emit.py"
DEFAULT_SSH_CONFIG = Path.home() / ".cache" / "workbench" / "testbed" / "ssh_config"


def ssh_seconds(ssh_config: str, host: str, command: str) -> float:
    started = time.perf_counter()
    subprocess.run(["ssh", "-F", ssh_config, host, command], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def steps(svc: SystemdServices, unit: str) -> dict[str, float]:
    """The client-side steps of one read of the last invocation, with wall and CPU seconds."""
    table = journal_read.invocations(svc, unit)
    inv = str(table["invocation"].iloc[-1])
    out: dict[str, float] = {}
    secs, out["fetch_wall"], out["fetch_cpu"] = timed(
        fetch, svc.host, [("main", export_argv(invocation_matches([inv])))], timeout=900)
    (raw, binary), out["parse_wall"], out["parse_cpu"] = timed(journal_systemd.export_table, secs["main"].data)
    out["export_bytes"] = len(secs["main"].data)
    _, out["frame_wall"], out["frame_cpu"] = timed(build_frame, journal_read._raw(raw), unit=unit,
                                                    lost=Lost(binary=binary))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="gpu-a")
    ap.add_argument("--ssh-config", default=str(DEFAULT_SSH_CONFIG))
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=4, help="time slices for the read_jobs path (default 4)")
    ap.add_argument("--skip-json", action="store_true", help="skip the host-alone JSON figure (slow)")
    ap.add_argument("--unit", help="reuse a unit that already logged the lines (skips the writing)")
    ap.add_argument("--json-out", help="also write the samples here")
    ap.add_argument("--paths", help="comma-separated subset of the timed paths (default: all), e.g. "
                    "raw,read,read_jobs,host_short_unix")
    args = ap.parse_args()
    host = SSHHost(args.host, ssh_config=args.ssh_config)
    svc = SystemdServices(host)
    unit = args.unit or f"jtest-bench-{uuid.uuid4().hex[:6]}.service"
    if not args.unit:
        host.put(EMIT.read_bytes(), "/opt/jtest/emit.py")
        _, wrote, _ = timed(host.run, ["systemd-run", f"--unit={unit}", "--wait", "-q",
                                       "-pLogRateLimitIntervalSec=1s", "-pLogRateLimitBurst=100000000",
                                       "python3", "/opt/jtest/emit.py", "big", str(args.lines)], timeout=1800)
        host.run(["journalctl", "--sync"], timeout=300)
        host.run(["rm", "-rf", "/opt/jtest"])
        print(f"wrote {args.lines} lines through journald in {wrote:.1f} s")
    q = shlex.quote(unit)
    counted = int(host.run(f"journalctl -u {q} -o cat --no-pager | wc -l", timeout=900).stdout)
    samples: dict[str, list[float]] = {"raw": [], "read": [], "read_one": [], "read_jobs": [], "read_export": [],
                                       "read_export_jobs": [], "host_short_unix": [], "host_export": [],
                                       "host_json": []}
    rows = 0
    only = set(args.paths.split(",")) if args.paths else set(samples)

    def want(key: str) -> bool:
        return key in only

    def note(key: str, secs: float) -> None:
        samples[key].append(secs)
        print(f"  {key}: {secs:.1f} s ({counted / secs:,.0f} lines/s)", flush=True)

    for r in range(args.rounds):
        print(f"round {r + 1}", flush=True)
        note("raw", ssh_seconds(args.ssh_config, args.host, f"journalctl -u {q} -o cat --no-pager"))
        if want("read"):
            frame, secs, _ = timed(journal_read.read, svc, unit, invocation="last", timeout=1800)
            rows = int((frame["origin"] == "unit").sum())
            del frame
            note("read", secs)
        if want("read_one"):
            note("read_one", timed(journal_read.read, svc, unit, invocation="last", timeout=1800, jobs=1)[1])
        if want("read_jobs"):
            note("read_jobs", timed(journal_read.read, svc, unit, invocation="last", timeout=1800, jobs=args.jobs)[1])
        if want("read_export"):
            note("read_export", timed(journal_read.read, svc, unit, invocation="last", timeout=1800, text=False)[1])
        if want("read_export_jobs"):
            note("read_export_jobs", timed(journal_read.read, svc, unit, invocation="last", timeout=1800,
                                           text=False, jobs=args.jobs)[1])
        if want("host_short_unix"):
            note("host_short_unix", ssh_seconds(args.ssh_config, args.host,
                                                f"journalctl -u {q} -o short-unix --all --no-pager"))
        if want("host_export"):
            note("host_export", ssh_seconds(args.ssh_config, args.host, f"journalctl -u {q} -o export --no-pager"))
    if not args.skip_json and want("host_json"):
        note("host_json", ssh_seconds(args.ssh_config, args.host, f"journalctl -u {q} -o json --all --no-pager"))
    detail = steps(svc, unit) if not args.paths else {}
    host.run(f"systemctl reset-failed {q} 2>/dev/null; true")
    host.close()
    med = {k: statistics.median(v) for k, v in samples.items() if v}
    raw_rate = counted / med["raw"]
    print(f"\nhost {args.host}, unit {unit}: {counted} journal lines ({rows} of the server), "
          f"client load average {os.getloadavg()[0]:.1f}, medians of {args.rounds} interleaved rounds\n")
    print("| path | seconds | lines/s | vs raw |")
    print("|---|---:|---:|---:|")
    names = {"raw": "`ssh host journalctl -u UNIT -o cat > /dev/null` (raw)",
             "read": "`journal_read.read(..., invocation=\"last\")` -> JournalFrame (default: slices chosen)",
             "read_one": "same, `jobs=1` (one slice)",
             "read_jobs": f"same, `jobs={args.jobs}` time slices at once",
             "read_export": "old: the same read all through `-o export` (`text=False`)",
             "read_export_jobs": f"old, `jobs={args.jobs}`",
             "host_short_unix": "host alone: `journalctl -u UNIT -o short-unix --all > /dev/null` over ssh",
             "host_export": "host alone: `journalctl -u UNIT -o export > /dev/null` over ssh",
             "host_json": "host alone: `journalctl -u UNIT -o json --all > /dev/null` over ssh (1 run)"}
    for key, label in names.items():
        if key not in med:
            continue
        rate = counted / med[key]
        print(f"| {label} | {med[key]:.1f} | {rate:,.0f} | {rate / raw_rate:.2f} |")
    if detail:
        print("\none read, step by step (wall / CPU s): " + ", ".join(
            f"{k[:-5]} {detail[k]:.1f}/{detail[k[:-5] + '_cpu']:.1f}" for k in detail if k.endswith("_wall"))
            + f"; export bytes {detail['export_bytes'] / 1e6:.0f} MB")
    doc = {"host": args.host, "unit": unit, "lines": counted, "server_rows": rows, "samples": samples, "steps": detail}
    print(json.dumps(doc))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
