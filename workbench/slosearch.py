"""The highest concurrency (or request rate) that still meets the SLOs: a bounded bisection over
an oracle (pure; the oracle does the measuring) — what ``vllm bench sweep serve_sla`` answers,
found inside the sweep's ladder.

The ladder's points are measured first; :func:`bracket` reads from every point measured so far
the lowest value that missed the SLOs (``failing``) and the highest value below it that met them
(``passing``).  :func:`next_probe` halves that bracket (an integer for concurrency; a value that
was measured is never measured again) until it is at most ``tolerance`` of ``failing`` wide (and,
for concurrency, no integer lies between), and :func:`search` asks the oracle for at most
``max_points`` probes, each measured with the sweep's repeats.  Nothing below the ladder's lowest
point is known to pass, so a failing lowest point is bisected down towards zero (concurrency: to 1).
Where every point met the SLOs the ladder's top is a lower bound: the search does not go above
what the user asked to run.

``serve_sla`` starts from 1 and 65536 and solves a PCHIP fit of the SLO margin for its root; here
the user's ladder gives the first bracket and plain bisection the next point — the points stay
where a reader of the ladder expects them, and the number of server runs is bounded in advance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Variable = Literal["concurrency", "rate"]
Bound = Literal["exact", "within", "at_least", "none"]


@dataclass(frozen=True)
class SloLimit:
    """Where the SLOs stop holding, as measured: the answer, how sure it is, and the probes it took."""

    variable: Variable
    passing: float | None  # the highest value measured that met the SLOs below ``failing`` (None: none did)
    failing: float | None  # the lowest value measured that missed them (None: every point met them)
    bound: Bound  # exact: the bracket is resolved; within: the probes ran out first; at_least: the
    #              ladder's top met them (the limit is above); none: no value measured met them
    probes: tuple[float, ...] = field(default=())  # the values the search added, in the order measured

    def words(self, slo_words: str) -> str:
        unit = "c=" if self.variable == "concurrency" else ""
        per = "" if self.variable == "concurrency" else " req/s"

        def v(x: float | None) -> str:
            return f"{unit}{_fmt(x)}{per}"

        spent = f" ({len(self.probes)} search points)" if self.probes else ""
        if self.bound == "none":
            return f"no {self.variable} measured met {slo_words}: even {v(self.failing)} missed{spent}"
        if self.bound == "at_least":
            return (f"{slo_words} held up to {v(self.passing)}, the ladder's top: the limit is higher "
                    f"(raise the ladder to find it)")
        if self.bound == "within":
            return f"{slo_words} held up to {v(self.passing)}, missed at {v(self.failing)}: the search points ran out " \
                   f"before the gap closed{spent}"
        return f"{slo_words} held up to {v(self.passing)} and missed at {v(self.failing)}{spent}"


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return str(int(x)) if float(x).is_integer() else f"{x:.3g}"


def bracket(measured: Mapping[float, bool]) -> tuple[float | None, float | None]:
    """(highest value that met the SLOs below the lowest that missed, lowest that missed)."""
    failing = min((v for v, met in measured.items() if not met), default=None)
    passing = max((v for v, met in measured.items() if met and (failing is None or v < failing)), default=None)
    return passing, failing


def next_probe(measured: Mapping[float, bool], variable: Variable, tolerance: float) -> float | None:
    """The bracket's middle, or None when the bracket is resolved (or open above: every point met)."""
    passing, failing = bracket(measured)
    if failing is None:
        return None
    lo = passing if passing is not None else 0.0
    if failing - lo <= tolerance * failing:
        return None
    if variable == "concurrency":
        mid: float = float((int(lo) + int(failing)) // 2)
        if mid <= lo or mid < 1:
            return None
    else:
        mid = round((lo + failing) / 2, 4)
        if not lo < mid < failing:
            return None
    return None if mid in measured else mid


def limit_of(measured: Mapping[float, bool], variable: Variable, tolerance: float,
             probes: tuple[float, ...] = ()) -> SloLimit:
    """What ``measured`` says about the limit (the bound read from the bracket)."""
    passing, failing = bracket(measured)
    if passing is None:
        bound: Bound = "none"
    elif failing is None:
        bound = "at_least"
    else:
        bound = "exact" if next_probe(measured, variable, tolerance) is None else "within"
    return SloLimit(variable, passing, failing, bound, probes)


def search(measured: Mapping[float, bool], probe: Callable[[float], bool], *, variable: Variable,
           max_points: int, tolerance: float = 0.0) -> SloLimit:
    """Bisect from the ladder's points (``measured``: value -> SLOs met) with at most ``max_points``
    calls of ``probe(value) -> met``; the limit found."""
    if max_points < 0 or not 0 <= tolerance < 1:
        raise ValueError("max_points must be >= 0 and tolerance in [0, 1)")
    seen = {float(v): bool(m) for v, m in measured.items()}
    probes: list[float] = []
    while len(probes) < max_points:
        value = next_probe(seen, variable, tolerance)
        if value is None:
            break
        seen[value] = bool(probe(int(value) if variable == "concurrency" else value))
        probes.append(value)
    return limit_of(seen, variable, tolerance, tuple(probes))
