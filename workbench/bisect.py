"""Which flag edits break a working unit? Delta debugging over sets of edits (pure; no I/O).

Given edits ``E`` under which a working base fails, find every *minimal culprit*:
a subset ``S`` of ``E`` that fails with some signature ``σ`` while no proper
subset of ``S`` fails with ``σ``.  Failures are told apart by signature (the
seeds: EP8 alone -> NoneType, EP8 + NVLS -> CUBLAS), so one search can end
with several culprits.

The search, driven by an oracle ``test(subset) -> Verdict``:

1. test ``E`` itself; it must fail (else there is nothing to find);
2. for each failure signature σ met, with a failing set ``F_σ``: Zeller's ddmin
   on ``F_σ`` with the predicate "fails with σ" gives a 1-minimal ``M``; a trial
   that fails with another signature σ' becomes the starting set of σ';
3. other culprits of σ that avoid ``M``: for each ``m`` in ``M`` test
   ``F_σ \\ {m}``; if that still fails with σ, search it too (each culprit
   found must differ from the known ones in at least one element).

Verdicts are memoised, and the oracle may answer from a ledger of earlier
trials, so a rerun costs no start.  With ``n`` edits and one culprit of size
``k`` ddmin needs ``O(k log n)`` starts; the full factorial needs ``2^n - 1``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Verdict:
    """What one trial of a subset showed: ``ok``, or failed with ``signature``."""

    ok: bool
    signature: str | None = None  # None when ok

    @classmethod
    def passed(cls) -> Verdict:
        return cls(True, None)

    @classmethod
    def failed(cls, signature: str) -> Verdict:
        return cls(False, signature)


@dataclass
class Culprit(Generic[T]):
    items: tuple[T, ...]
    signature: str


@dataclass
class Search(Generic[T]):
    """State and outcome of one bisection."""

    edits: tuple[T, ...]
    test: Callable[[tuple[T, ...]], Verdict]
    cache: dict[frozenset[int], Verdict] = field(default_factory=dict)
    order: list[tuple[tuple[T, ...], Verdict]] = field(default_factory=list)
    culprits: list[Culprit[T]] = field(default_factory=list)

    # -- oracle with memo (keys are index sets so unhashable edits work) ------
    def run(self, idx: Sequence[int]) -> Verdict:
        key = frozenset(idx)
        if key not in self.cache:
            subset = tuple(self.edits[i] for i in sorted(key))
            verdict = Verdict.passed() if not key else self.test(subset)
            self.cache[key] = verdict
            self.order.append((subset, verdict))
        return self.cache[key]

    # -- ddmin with a signature predicate -----------------------------------
    def ddmin(self, start: list[int], signature: str) -> list[int]:
        """Zeller & Hildebrandt's ddmin: a 1-minimal subset of ``start`` failing with ``signature``."""
        current = list(start)
        n = 2
        while len(current) >= 2:
            chunks = _split(current, n)
            reduced = False
            for chunk in chunks:  # reduce to a subset
                if self._fails_with(chunk, signature):
                    current, n, reduced = chunk, 2, True
                    break
            if not reduced:
                for chunk in chunks:  # reduce to a complement
                    rest = [i for i in current if i not in chunk]
                    if rest and self._fails_with(rest, signature):
                        current, n, reduced = rest, max(n - 1, 2), True
                        break
            if not reduced:
                if n >= len(current):
                    break
                n = min(len(current), 2 * n)
        return current

    def _fails_with(self, idx: list[int], signature: str) -> bool:
        v = self.run(idx)
        return not v.ok and v.signature == signature

    # -- all culprits ---------------------------------------------------------
    def solve(self) -> list[Culprit[T]]:
        """Every minimal culprit, for every signature met, until no failing trial is unexplained."""
        self._found: dict[str, set[frozenset[int]]] = {}
        self._seen: dict[str, set[frozenset[int]]] = {}
        if self.run(list(range(len(self.edits)))).ok:
            return []
        while True:
            work = self._unexplained()
            if work:
                for signature, sets in work.items():
                    self._all_for(signature, sets)
                continue
            # Failures of a later phase hide behind earlier ones: try the largest sets that hold
            # no culprit found so far; one that still fails shows something new.
            if not any(not self.run(s).ok for s in self._avoiding_culprits()):
                return self.culprits

    def _avoiding_culprits(self, limit: int = 64) -> list[list[int]]:
        """The largest subsets of the edits containing no found culprit (all edits minus one
        minimal hitting set of the culprits), not tried yet; at most ``limit``."""
        culprits = [sorted(c) for sets in self._found.values() for c in sets]
        hitting: set[frozenset[int]] = set()
        for pick in itertools.islice(itertools.product(*culprits), 4096):
            hitting.add(frozenset(pick))
        minimal = [h for h in hitting if not any(o < h for o in hitting)]
        out = []
        for h in sorted(minimal, key=lambda x: (len(x), sorted(x))):
            rest = [i for i in range(len(self.edits)) if i not in h]
            if rest and frozenset(rest) not in self.cache:
                out.append(rest)
            if len(out) >= limit:
                break
        return out

    def _unexplained(self) -> dict[str, list[list[int]]]:
        """Failing sets, by signature, that contain no culprit found for it yet and were not searched."""
        out: dict[str, list[list[int]]] = {}
        for key, verdict in list(self.cache.items()):
            sig = verdict.signature
            if verdict.ok or sig is None or key in self._seen.get(sig, set()):
                continue
            if any(c <= key for c in self._found.get(sig, set())):
                continue
            out.setdefault(sig, []).append(sorted(key))
        return out

    def _all_for(self, signature: str, starts: list[list[int]]) -> None:
        found = self._found.setdefault(signature, set())
        seen = self._seen.setdefault(signature, set())
        everything = list(range(len(self.edits)))
        todo = [(s, True) for s in reversed(starts)]
        while todo:
            failing, recorded = todo.pop()
            key = frozenset(failing)
            if key in seen or (recorded and any(c <= key for c in found)):
                continue  # searched already, or a failing trial that a culprit found meanwhile explains
            seen.add(key)
            m = self.ddmin(failing, signature)
            if frozenset(m) not in found:
                found.add(frozenset(m))
                self.culprits.append(Culprit(tuple(self.edits[i] for i in sorted(m)), signature))
            # Any other culprit of this signature misses some element of m: look for it among all
            # the edits without that element first; where that does not fail this way (another
            # failure masks it, or a flag that undoes it is there), among this failing set without it.
            for i in m:
                everywhere = [j for j in everything if j != i]
                if everywhere and frozenset(everywhere) not in seen and self._fails_with(everywhere, signature):
                    todo.append((everywhere, False))
                    continue
                rest = [j for j in failing if j != i]
                if rest and frozenset(rest) not in seen and self._fails_with(rest, signature):
                    todo.append((rest, False))

    @property
    def starts(self) -> int:
        """Trials that needed the oracle (the memo and the empty set excluded)."""
        return sum(1 for subset, _ in self.order if subset)


def _split(items: list[int], n: int) -> list[list[int]]:
    size, extra = divmod(len(items), n)
    out, i = [], 0
    for k in range(n):
        step = size + (1 if k < extra else 0)
        if step:
            out.append(items[i:i + step])
        i += step
    return out


def bisect(edits: Sequence[T], test: Callable[[tuple[T, ...]], Verdict]) -> Search[T]:
    """Run the search; ``result.culprits`` holds one entry per minimal failing subset."""
    search: Search[T] = Search(tuple(edits), test)
    search.solve()
    return search


# -- baselines for the benchmarks ---------------------------------------------


def one_at_a_time(edits: Sequence[T], test: Callable[[tuple[T, ...]], Verdict]) -> tuple[int, list[Culprit[T]]]:
    """Baseline: add edits one by one in order until the unit fails; blame the last one added."""
    starts = 0
    for k in range(1, len(edits) + 1):
        v = test(tuple(edits[:k]))
        starts += 1
        if not v.ok:
            return starts, [Culprit((edits[k - 1],), v.signature or "")]
    return starts, []


def full_factorial(edits: Sequence[T], test: Callable[[tuple[T, ...]], Verdict]) -> tuple[int, list[Culprit[T]]]:
    """Baseline: every non-empty subset; the minimal failing ones per signature."""
    n = len(edits)
    verdicts: dict[frozenset[int], Verdict] = {}
    for mask in range(1, 2 ** n):
        idx = frozenset(i for i in range(n) if mask >> i & 1)
        verdicts[idx] = test(tuple(edits[i] for i in sorted(idx)))
    culprits = []
    for idx, v in verdicts.items():
        if v.ok:
            continue
        if not any(o < idx and not w.ok and w.signature == v.signature for o, w in verdicts.items()):
            culprits.append(Culprit(tuple(edits[i] for i in sorted(idx)), v.signature or ""))
    return 2 ** n - 1, culprits
