"""journald's rate limit, replayed over the lines a unit got into the journal (pure).

journald reports what it dropped ("Suppressed N messages from UNIT") only when the unit's
next line is accepted after the interval ends; a unit that floods and then logs nothing
more (or dies) gets no report at all.  What is left is the limit's footprint, which this
module recognises: journald counts a unit's lines per priority pool in windows of
``RateLimitIntervalSec`` that open at the first line after the last window, and keeps at
most ``burst_modulate(RateLimitBurst, free space)`` lines per window (systemd's
``journald-rate-limit.c``: the burst is scaled by log2 of the journal's free space, x1 at
<= 1 MB up to x4 at 4 GB and more).  A window that holds exactly such a number of lines,
at least the unit's burst, reached the limit: what the unit wrote after it in that window
is gone.  The limits come from the unit (``LogRateLimitIntervalUSec``/``Burst``; 0 means
journald's own, from ``journald.conf``: 30 s and 10,000 by default).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_BURST", "DEFAULT_INTERVAL_USEC", "Limits", "burst_values", "limits_argv", "parse_limits",
           "reached"]

DEFAULT_INTERVAL_USEC = 30_000_000
DEFAULT_BURST = 10_000
# journald's pools by syslog priority: emerg/alert/crit, err, warning, notice/info, debug.
_POOL = np.array([0, 0, 0, 1, 2, 3, 3, 4], np.int64)
_TIME_UNITS = {"us": 1, "usec": 1, "ms": 1_000, "msec": 1_000, "s": 1_000_000, "sec": 1_000_000,
               "min": 60_000_000, "m": 60_000_000, "h": 3_600_000_000, "hr": 3_600_000_000}
_SPAN = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")


@dataclass(frozen=True)
class Limits:
    """The rate limit journald applies to a unit's lines."""

    interval_usec: int
    burst: int

    def describe(self) -> str:
        return f"{self.burst} lines per {self.interval_usec / 1e6:g} s, scaled by the journal's free space"


def limits_argv(unit: str) -> list[str]:
    """The unit's own limits and journald's configured ones, in one command."""
    return ["sh", "-c", 'systemctl show -p LogRateLimitIntervalUSec -p LogRateLimitBurst -p LoadState -- "$1"; '
            "echo @@journald; systemd-analyze cat-config systemd/journald.conf 2>/dev/null; true", "limits", unit]


def _usec(text: str) -> int | None:
    """A systemd time span (``30s``, ``1min 30s``, ``500ms``, ``0``) in µs."""
    text = text.strip()
    if not text or text == "infinity":
        return None
    total = 0.0
    for number, unit in _SPAN.findall(text):
        total += float(number) * _TIME_UNITS.get(unit or "s", 1_000_000)
    return int(total)


def parse_limits(text: str) -> tuple[Limits, str]:
    """(the unit's effective limits, its LoadState) from :func:`limits_argv`'s output."""
    unit_part, _, conf = text.partition("@@journald")
    props = dict(line.split("=", 1) for line in unit_part.splitlines() if "=" in line)
    interval, burst = DEFAULT_INTERVAL_USEC, DEFAULT_BURST
    for line in conf.splitlines():  # later lines win, as journald reads its drop-ins
        key, _, value = line.strip().partition("=")
        if key in ("RateLimitIntervalSec", "RateLimitInterval"):
            interval = _usec(value) or 0
        elif key == "RateLimitBurst" and value.strip().isdigit():
            burst = int(value)
    own_interval = _usec(props.get("LogRateLimitIntervalUSec", "0")) or 0
    own_burst = int(props["LogRateLimitBurst"]) if props.get("LogRateLimitBurst", "").isdigit() else 0
    # PID 1 passes each of a unit's limits to journald only when it is set (0: journald's own).
    return Limits(own_interval or interval, own_burst or burst), props.get("LoadState", "")


def burst_values(burst: int) -> set[int]:
    """Every burst journald may apply: ``burst`` scaled by log2 of the free space (k = 21..64)."""
    return {burst} | {burst * (k - 16) // 4 for k in range(21, 65)}


def reached(usec: np.ndarray, priority: np.ndarray, limits: Limits) -> list[tuple[int, int, int]]:
    """The windows in which journald's limit was reached: (window start µs, lines kept, pool).

    ``usec``/``priority``: the unit's own lines (journald's receive time, syslog priority),
    in journal order.  A limit of 0 (interval or burst) means no rate limiting."""
    if limits.interval_usec <= 0 or limits.burst <= 0 or not len(usec):
        return []
    allowed = burst_values(limits.burst)
    pools = _POOL[np.clip(np.nan_to_num(priority, nan=6).astype(np.int64), 0, 7)]
    out = []
    for pool in np.unique(pools).tolist():
        times = np.sort(usec[pools == pool])
        if len(times) < limits.burst:
            continue
        i = 0
        while i < len(times):
            end = int(np.searchsorted(times, times[i] + limits.interval_usec, side="right"))
            if end - i in allowed and end - i >= limits.burst:
                out.append((int(times[i]), end - i, int(pool)))
            i = end
    return sorted(out)
