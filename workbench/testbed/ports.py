"""Ports for the testbed's servers, free now and kept out of the kernel's ephemeral range.

A port found by binding port 0 comes from the ephemeral range, the one the kernel also hands to
every outgoing connection and every other ``bind(0)``.  Between choosing such a port and the server
binding it (a Slurm job's rendezvous is bound minutes after the cluster wrote it into the job
script), any client on the machine may take it as its own source port, and the server's bind then
fails with EADDRINUSE.  A port outside ``net.ipv4.ip_local_port_range`` is only ever taken by a
program that names it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_DEFAULT = (32768, 60999)
LOWEST = 10000  # below this, the ports of well-known services


def ephemeral_range(path: Path = RANGE_FILE) -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default where it cannot be read)."""
    try:
        lo, hi = (int(w) for w in path.read_text().split())
    except (OSError, ValueError):
        return LINUX_DEFAULT
    return lo, hi


def candidates(lo: int, hi: int) -> list[int]:
    """The ports outside ``[lo, hi]`` a testbed server may take: above the range, else below it."""
    above = list(range(hi + 1, 65536))
    return above if len(above) >= 1000 else [p for p in range(LOWEST, 65536) if not lo <= p <= hi]


def free_port(host: str = "", tries: int = 200) -> int:
    """A port nothing on this machine holds now (bound on ``host``; all addresses by default),
    chosen at random outside the ephemeral range."""
    pool = candidates(*ephemeral_range())
    tried = random.sample(pool, min(tries, len(pool)))
    for port in tried:
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port among {len(tried)} tried outside the ephemeral range")
