"""Each host's clock offset, measured NTP-style over SSH (``date +%s.%N`` round trips).

offset = remote - (sent + received) / 2 of the round trip with the smallest delay; its error is at
most half that delay, which is reported with it.  Positive: the host's clock runs ahead of ours.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from workbench.errors import ParseError
from workbench.hosts import Host

PROBE = ["date", "+%s.%N"]


@dataclass(frozen=True)
class ClockSample:
    sent: float
    remote: float
    received: float

    @property
    def delay(self) -> float:
        return self.received - self.sent

    @property
    def offset(self) -> float:
        return self.remote - (self.sent + self.received) / 2


@dataclass(frozen=True)
class ClockOffset:
    host: str
    offset: float  # seconds the host is ahead of this machine
    error: float  # +- seconds (half the best round trip)
    samples: int

    def describe(self) -> str:
        return f"{self.host}: clock {self.offset:+.3f} s (+-{self.error:.3f} s, best of {self.samples})"

    @property
    def correction(self) -> float:
        """What to take off the host's times when ordering failures across hosts: the offset where it
        is larger than its own error, else nothing (a relayed failure is ms apart; an offset inside
        the error of its round trip is no offset)."""
        return self.offset if abs(self.offset) > self.error else 0.0


def parse_probe(text: str, source: str = "date") -> float:
    """Seconds since the epoch from ``date +%s.%N`` output."""
    value = text.strip()
    try:
        return float(value)
    except ValueError:
        raise ParseError(f"{source}: not an epoch time: {value[:60]!r}", source=source, line=1) from None


def estimate(host: str, samples: Sequence[ClockSample]) -> ClockOffset:
    if not samples:
        raise ValueError("no clock samples")
    best = min(samples, key=lambda s: s.delay)
    return ClockOffset(host, best.offset, best.delay / 2, len(samples))


def measure_offset(host: Host, *, rounds: int = 5, now: Callable[[], float] = time.time) -> ClockOffset:
    """``rounds`` round trips to ``host``; the offset of the tightest one."""
    samples = []
    for _ in range(rounds):
        sent = now()
        res = host.run(PROBE, timeout=30, check=True)
        received = now()
        samples.append(ClockSample(sent, parse_probe(res.stdout, f"{host.name}: date"), received))
    return estimate(host.name, samples)


def measure_offsets(hosts: Mapping[str, Host], *, rounds: int = 5) -> dict[str, ClockOffset]:
    """:func:`measure_offset` of each host, keyed as given (a deployment's node labels)."""
    return {label: measure_offset(host, rounds=rounds) for label, host in hosts.items()}
