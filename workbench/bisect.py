"""Which flag edits break a working unit? A search over sets of edits that does not assume monotonicity (pure).

Given edits ``E`` under which a working base fails, find every *minimal culprit*: a subset ``S`` of
``E`` that fails with some signature ``σ`` while no proper subset of ``S`` fails with ``σ`` -- the
minimal failing sets per signature that the full factorial (all ``2^n - 1`` subsets) would give.
A signature carries the phase (the runbook keys failures on exception type + normalised message +
phase), so the same bug in ``cuda_graph_capture`` and, behind ``--disable-cuda-graph``, in
``warmup`` gives two culprits.

The search learns a *fault model* from its trials and tests until no fault it cannot see is left:

* a **rule** is "fails with σ (in phase p) when all edits of ``P`` are present and none of its
  blockers ``N``"; at a set of edits the rule of the earliest phase that holds strikes (a
  weight_loading failure masks every later phase), as in the simulator and in a real start;
* **learning**: a trial that fails with a σ no rule predicts is narrowed to a 1-minimal set (a new
  rule): the next set splits the *suspects* -- the sets of its edits that could be the culprit, as
  far as the trials inside it tell, a smaller one likelier -- and, of the sets that split them
  nearly as well, is the one the cover values most; Zeller's ddmin when no suspect is left (a
  blocker or a second rule of σ inside it), and above ``COVER_MAX`` edits.  A trial where a rule
  predicts a failure that did not come (the unit started, or failed in a later phase) has a
  blocker among its other edits, found by halving;
* **cover**: a fault missing from the model, of the shape "at most two edits present, at most one
  edit absent" (``MAX_PRESENT``), in any phase, is *open* while some set where it would show (the model predicts the set
  starts or fails later than that phase) is untested and no trial where it would have shown has
  been run.  The search tests, greedily, the set that closes the most open faults, and learns from
  any surprise.  A learned *phase skipper* (an edit that stops a rule while the rule's edits with it fail
  in a later phase: ``--disable-cuda-graph`` skips the capture) hides every fault of the phase it skips, so
  for that phase the cover also asks for the faults with the skipper absent beside the one absent edit, and
  only a set that gets past that phase shows them (one failing in it by another rule is a tie);
* **blocker probes**: "edit c stops rule R" stays open until a trial shows R's signature with c present
  (and no other rule of that signature holding, unless the trial is just R's edits and c and the other
  rule lies inside them: two rules of one signature asked of each other); it is probed only at sets
  where a blocked R would change the phase, i.e. where no other rule of R's phase or earlier surely
  strikes, and where its answer could be read (no other rule of R's signature holding, but that one);
* **sharing trials**: a set already tried (by any step, or known from the ledger) is never started
  again, and what it showed narrows at once: the narrowing starts from the smallest tried subset of
  its set that fails with the signature and counts every tried set inside it, the blocker halving
  drops from its pool what a tried set inside the failing one already settles, and a blocker probe
  takes, of the sets where it matters, the one that asks the most open "c stops R" questions of R at
  once;
* **maximal sets**: for each phase, the largest sets (by inclusion) where nothing of that phase or
  earlier strikes, also with one learned blocker absent, are started: a fault of *any* number of
  edits (a combination of three hidden behind an earlier phase) shows in one of them;
* **confirmation**: every edit is started alone first, and every culprit is started alone (the
  minimal set against the base).  Larger culprits (three edits or more) are found by the narrowing
  from the failing trials and from the maximal sets.

What is guaranteed (``Search.guarantee``): each culprit was started and failed with its signature,
and every trial agrees with the learned model; when ``complete`` is true, no fault of the shape
above (at most two edits present and one absent, and a learned phase skipper absent beside it in the
phase it skips; or any number present and none absent, or one absent that stops a known culprit), missing
from the model, could add or change a culprit without having shown in a trial.  A fault that needs two or
more edits *absent* at once (but for a learned skipper; an unlearned one, ``--disable-cuda-graph`` before any
failure moved, counts as one), a fault that only wins a tie in its phase, or an
outcome that the earliest-phase rule does not explain, is outside that guarantee: such trials are listed in ``unexplained``; with more
than ``COVER_MAX`` edits, or when ``max_starts`` cut the search, ``complete`` is false and
``untested`` lists the sets that would still need a start (only the full factorial tests every
set).  When ``E`` itself starts there is nothing to narrow and nothing is searched.

Trials already known (a ledger of earlier runs) are given as ``known`` and cost no start; with
``width > 1`` the search asks for up to ``width`` independent sets at a time (cover picks, the narrowing's
best splits or ddmin's chunks and complements, blocker halves), for a fleet of equal hosts to run at once; a host that would
idle gets what the search would start next unless the model changes (an edit alone beside the edits
together, then a maximal set, the cover's next set, an open blocker probe).

**Spares**: a batch still waits for its slowest start.  A host that ends its trial while the batch runs
asks ``Search.spare(running)`` for a set from the same sources (the sets running or not yet learned
excluded, and taken by the cover as started) and runs it beside the batch; ``Search.learn`` (the
``extras`` hook of :func:`bisect`) gives its verdict to the search between batches, into the memo and
the trial order as if the search had asked, so that set is never started again.  A spare's verdict is a
real trial of a real set, used as the memo and known trials are: the answer and the guarantee do not
depend on which spares ran, only the number of starts does.  Before its answer the search waits for the
spares still running (an empty batch) and learns them.  ``spare`` may be called from another thread
only while the search is suspended on a batch, never once it is finished (``finished``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from workbench.phases import PHASES

T = TypeVar("T")

PHASE_ORDER: tuple[str, ...] = PHASES[:6]  # nccl_init .. serving
OK_RANK = len(PHASE_ORDER)  # a start that became ready: later than any failure
UNKNOWN_RANK = -1  # a failure whose phase nothing tells: taken as the earliest (it may mask anything)
MAX_PRESENT = 2  # the cover's fault shape: at most this many edits present (and at most one absent)
COVER_MAX = 10  # the fault-model check enumerates all 2^n sets of edits up to this many edits


def phase_rank(phase: str | None) -> int:
    """Position of ``phase`` on the startup path; ``UNKNOWN_RANK`` for unknown / startup_other."""
    return PHASE_ORDER.index(phase) if phase in PHASE_ORDER else UNKNOWN_RANK


@dataclass(frozen=True)
class Verdict:
    """What one trial of a subset showed: ``ok``, or failed with ``signature`` in ``phase``."""

    ok: bool
    signature: str | None = None  # None when ok
    phase: str | None = None

    @classmethod
    def passed(cls) -> Verdict:
        return cls(True, None)

    @classmethod
    def failed(cls, signature: str, phase: str | None = None) -> Verdict:
        return cls(False, signature, phase)

    @property
    def rank(self) -> int:
        return OK_RANK if self.ok else phase_rank(self.phase)


@dataclass
class Culprit(Generic[T]):
    """A minimal failing set, its signature and phase, and the edits seen to stop its failure."""

    items: tuple[T, ...]
    signature: str
    phase: str | None = None
    blockers: tuple[T, ...] = ()


@dataclass
class Guarantee(Generic[T]):
    """What the search proved; see the module docstring."""

    complete: bool
    statement: str
    tested: int  # distinct non-empty sets with a verdict (started or known)
    total: int  # 2^n - 1: what the full factorial starts
    untested: list[tuple[T, ...]] = field(default_factory=list)
    unexplained: list[tuple[T, ...]] = field(default_factory=list)


@dataclass
class Rule:
    pos: int  # bit mask of edits that must be present
    signature: str
    rank: int
    blockers: int = 0  # bit mask: any of these present stops the rule

    def holds(self, s: int) -> bool:
        return s & self.pos == self.pos and not s & self.blockers


Ask = Generator[list[int], list[Verdict], None]


class Search(Generic[T]):
    """State and outcome of one bisection; drive it with :func:`bisect` (or ``steps()``)."""

    maximal_blockers = True  # the maximal sets also with one learned blocker absent
    SUSPECT_WEIGHT = 0.25  # how much likelier a culprit of one edit fewer is taken to be (``_narrow``)
    SPLIT_SLACK = 0.7  # ``_narrow`` takes, of the sets splitting the suspects at least this well, the cover's best

    def __init__(self, edits: Sequence[T], *, known: Iterable[tuple[Sequence[T], Verdict]] = (), width: int = 1,
                 max_starts: int | None = None, max_present: int = MAX_PRESENT, maximal: bool = True) -> None:
        self.max_present = max_present
        self.maximal = maximal
        self.edits = tuple(edits)
        self.n = len(self.edits)
        self.full = (1 << self.n) - 1
        self.width = max(1, width)
        self.max_starts = max_starts
        self.cache: dict[int, Verdict] = {0: Verdict.passed()}  # the base works: that is the premise
        self.order: list[tuple[tuple[T, ...], Verdict]] = []  # trials the oracle ran, in order
        self.rules: list[Rule] = []
        self.exceptions: set[int] = set()
        self.culprits: list[Culprit[T]] = []
        self.guarantee: Guarantee[T] | None = None
        self.cut = False
        self.finished = False  # set when the search has its answer: no spare is asked for after that
        self.spared = 0  # spares handed out (``spare``); the search waits for them before its answer
        self.drained = 0
        for subset, verdict in known:
            mask = self._mask(subset)
            if mask is not None and mask:
                self.cache.setdefault(mask, verdict)
        self.known = len(self.cache) - 1

    # -- sets as bit masks --------------------------------------------------------------------
    def _mask(self, subset: Sequence[T]) -> int | None:
        mask = 0
        for item in subset:
            hit = [i for i, e in enumerate(self.edits) if e == item]
            if not hit:
                return None
            mask |= 1 << hit[0]
        return mask

    def items(self, mask: int) -> tuple[T, ...]:
        return tuple(e for i, e in enumerate(self.edits) if mask >> i & 1)

    @property
    def starts(self) -> int:
        """Trials that needed the oracle (the memo, known trials and the empty set excluded)."""
        return len(self.order)

    # -- asking the oracle ---------------------------------------------------------------------
    def _ask(self, masks: Sequence[int]) -> Ask:
        todo = list(dict.fromkeys(m for m in masks if m not in self.cache))
        while True:
            todo = [m for m in todo if m not in self.cache]  # a spare learned meanwhile is not started again
            if self.max_starts is not None:
                room = self.max_starts - self.starts
                if room < len(todo):
                    self.cut = True
                    todo = todo[:max(room, 0)]
            if not todo:
                return
            batch = todo[:self.width]
            if len(batch) < self.width and self.n <= COVER_MAX:
                room = self.width - len(batch)
                if self.max_starts is not None:
                    room = min(room, self.max_starts - self.starts - len(batch))
                batch += self._fill(batch, room)
            verdicts = yield batch
            for m, v in zip(batch, verdicts, strict=True):
                if m not in self.cache:  # else a spare of the same set was learned first: one verdict per set
                    self.cache[m] = v
                    self.order.append((self.items(m), v))

    def learn(self, subset: Sequence[T], verdict: Verdict) -> bool:
        """Take the verdict of a trial run beside the batches (a spare, see :meth:`spare`) as if the search had
        asked for it: it is in ``cache`` and ``order`` and is never started again.  False when the set is not
        one of the edits' or already has a verdict (then nothing changes)."""
        mask = self._mask(subset)
        if not mask or mask in self.cache:
            return False
        self.cache[mask] = verdict
        self.order.append((self.items(mask), verdict))
        return True

    def spare(self, running: Collection[Sequence[T]] = ()) -> tuple[T, ...] | None:
        """A set worth starting on a host that would idle while the batch runs (None: nothing).

        From the same sources as a batch's empty slots (``_fill``): an edit alone while the edits together
        are out, then a maximal set, the cover's next set (the sets in ``running`` taken as already started),
        an open blocker probe -- never a set with a verdict or one in ``running`` (the batch's sets, other
        spares in flight or not yet learned).  Its verdict, handed back with :meth:`learn`, is a real trial
        of a real set, used as the memo is: exactness does not depend on it.  Call it only while the search
        is suspended on a batch (``steps()`` waits for verdicts), never once it is finished."""
        if self.finished or self.n > COVER_MAX:
            return None
        busy = {m for m in (self._mask(s) for s in running) if m}
        if self.max_starts is not None and self.starts + len(busy - self.cache.keys()) >= self.max_starts:
            return None
        for source in self._idle_sources(1, sorted(busy - self.cache.keys())):
            for p in source():
                if p and p not in self.cache and p not in busy:
                    self.spared += 1
                    return self.items(p)
        return None

    def _fill(self, batch: list[int], room: int) -> list[int]:
        """Sets for hosts that would idle beside ``batch``: what the search would start next unless the
        model changes -- an edit alone while the edits together are out (every edit is started alone
        anyway), then the maximal sets, the cover's next sets, the open blocker probes."""
        if room <= 0:
            return []
        out: list[int] = []
        for source in self._idle_sources():
            out += [p for p in source() if p not in batch and p not in self.cache and p not in out]
            if len(out) >= room:
                break
        return out[:room]

    def _idle_sources(self, count: int | None = None, pending: Sequence[int] = ()) -> list[Callable[[], list[int]]]:
        """Where sets for otherwise idle hosts come from, in order (``_fill`` and ``spare``): each edit alone
        while the edits together are out (every edit is started alone anyway), else the maximal sets, the
        cover's next ``count`` sets, the open blocker probes (as the search's own order); ``pending`` sets
        count as started."""
        if self.full not in self.cache:
            return [lambda: [1 << i for i in range(self.n)]]
        return [self._maximal_picks, lambda: self._cover_picks(count, pending),
                lambda: self._blocker_picks(count, pending)]

    def _first(self, cands: Sequence[int], pred: Callable[[int], bool]) -> Generator[list[int], list[Verdict], int | None]:
        """The first candidate (in order) satisfying ``pred``; up to ``width`` asked at once.  A candidate
        already tried that satisfies it is taken before any start (the memo and known trials are free)."""
        for c in cands:
            if c in self.cache and pred(c):
                return c
        i = 0
        while i < len(cands):
            c = cands[i]
            if c in self.cache:
                if pred(c):
                    return c
                i += 1
                continue
            yield from self._ask([x for x in cands[i:] if x not in self.cache][:self.width])
            if c not in self.cache:
                return None  # out of starts
        return None

    # -- the model ------------------------------------------------------------------------------
    def predict(self, s: int) -> tuple[int, frozenset[str], list[Rule]]:
        """(rank, possible signatures, striking rules) at ``s``: the earliest phase among the rules that hold."""
        holding = [r for r in self.rules if r.holds(s)]
        if not holding:
            return OK_RANK, frozenset(), []
        rank = min(r.rank for r in holding)
        top = [r for r in holding if r.rank == rank]
        return rank, frozenset(r.signature for r in top), top

    def _check(self, s: int) -> tuple[str, Rule | None] | None:
        """How the trial of ``s`` disagrees with the model (None: it agrees)."""
        v = self.cache[s]
        rank, sigs, top = self.predict(s)
        if v.ok:
            return ("blocked", top[0]) if top else None
        if v.signature in sigs:
            return None
        if v.rank > rank:
            return "blocked", top[0]
        return "unexplained", None

    def _inconsistent(self) -> tuple[int, str, Rule | None] | None:
        for s in sorted(self.cache, key=lambda m: (bin(m).count("1"), m)):
            if not s or s in self.exceptions:
                continue
            bad = self._check(s)
            if bad is not None:
                return s, bad[0], bad[1]
        return None

    def _learn(self) -> Ask:
        while True:
            bad = self._inconsistent()
            if bad is None:
                return
            s, kind, rule = bad
            v = self.cache[s]
            if kind == "unexplained":
                sig = v.signature or ""
                m = yield from (self._narrow(s, sig) if self.n <= COVER_MAX else self._ddmin(s, sig))
                if m is None:
                    return  # out of starts
                if any(r.pos == m and r.signature == sig for r in self.rules):
                    self.exceptions.add(s)  # a rule blocked here fires here: beyond the model
                else:
                    self.rules.append(Rule(m, sig, self.cache[m].rank))
            else:
                assert rule is not None
                b = yield from self._blocker(rule, s)
                if b is None:
                    if self.cut:
                        return
                    self.exceptions.add(s)
                else:
                    rule.blockers |= 1 << b

    def _fails_with(self, sig: str) -> Callable[[int], bool]:
        def pred(m: int) -> bool:
            v = self.cache.get(m)
            return v is not None and not v.ok and v.signature == sig
        return pred

    def _narrow(self, start: int, sig: str) -> Generator[list[int], list[Verdict], int | None]:
        """A 1-minimal subset of ``start`` failing with ``sig``: the smallest tried set inside ``start`` that fails
        with it, once every set without one of its edits was tried and does not.  Until then the next sets are
        those that best split the *suspects* -- the sets of edits inside it that could be the culprit, as far
        as the trials inside ``start`` tell (one rule of that signature, no blocker among them), a smaller
        suspect likelier (``SUSPECT_WEIGHT`` per edit) -- of those within ``SPLIT_SLACK`` of the best split,
        the one the cover would value most, so that the narrowing's sets also close faults.  When no suspect
        is left (a blocker or a second rule of the signature inside ``start``) ddmin narrows instead."""
        pred = self._fails_with(sig)
        rank = self.cache[start].rank
        while True:
            inside = [t for t in self.cache if t and t & start == t]
            best = min((t for t in inside if pred(t)), key=lambda m: (bin(m).count("1"), m))
            rests = [best & ~(1 << i) for i in range(self.n) if best >> i & 1]
            todo = [r for r in rests if r and r not in self.cache]
            if not todo:
                return best
            subs = np.array([m for m in range(1, best + 1) if m & best == m], dtype=np.int64)
            alive = np.ones(len(subs), dtype=bool)
            for t in inside:
                v = self.cache[t]
                holds = (subs & t) == subs
                if pred(t):
                    alive &= holds  # a suspect is inside every set that failed with the signature
                elif v.ok or v.rank > rank:
                    alive &= ~holds  # ... and in none that started or failed later
            suspects = subs[alive]
            if not len(suspects):
                return (yield from self._ddmin(best, sig))
            if len(suspects) == 1:  # the one suspect itself, then the certificate's own sets
                asked = todo if int(suspects[0]) == best else [int(suspects[0])]
                yield from self._ask(asked)
                if any(r not in self.cache for r in asked):
                    return None  # out of starts
                continue
            weight = self.SUSPECT_WEIGHT ** np.array([bin(int(p)).count("1") for p in suspects])
            cands = np.array([int(x) for x in subs if int(x) not in self.cache and self.predict(int(x))[0] >= rank]
                             + [r for r in todo if self.predict(r)[0] < rank], dtype=np.int64)
            if not len(cands):
                return (yield from self._ddmin(best, sig))
            inside_w = (((cands[:, None] & suspects[None, :]) == suspects[None, :]) * weight[None, :]).sum(axis=1)
            split = np.minimum(inside_w, weight.sum() - inside_w)
            if split.max() <= 0:  # no untested set tells the suspects apart (the trials inside disagree)
                return (yield from self._ddmin(best, sig))
            near = np.nonzero(split >= self.SPLIT_SLACK * split.max())[0]
            cover = self._cover_scores()
            order = sorted(near, key=lambda i: (-int(cover[cands[i] - 1]), -split[i], bin(int(cands[i])).count("1")))
            asked = [int(cands[i]) for i in order[:self.width]]
            yield from self._ask(asked)
            if asked[0] not in self.cache:
                return None  # out of starts

    def _ddmin(self, start: int, sig: str) -> Generator[list[int], list[Verdict], int | None]:
        """Zeller & Hildebrandt's ddmin: a 1-minimal subset of ``start`` failing with ``sig``."""
        current = [i for i in range(self.n) if start >> i & 1]
        pred = self._fails_with(sig)
        k = 2
        while len(current) >= 2:
            whole = _bits(current)
            sub = [m for m in self.cache if m and m & whole == m and m != whole and pred(m)]
            if sub:  # a trial already run inside the current set fails with the signature: narrow to it
                best = min(sub, key=lambda m: bin(m).count("1"))
                current = [i for i in current if best >> i & 1]
                k = 2
                continue
            chunks = _split(current, k)
            masks = [_bits(c) for c in chunks]
            whole = _bits(current)
            rests = [whole & ~m for m in masks] if k > 2 else []
            hit = yield from self._first(masks + [r for r in rests if r], pred)
            if self.cut and hit is None:
                return None
            if hit is not None:
                current = [i for i in current if hit >> i & 1]
                k = 2 if hit in masks else max(k - 1, 2)
                continue
            if k >= len(current):
                break
            k = min(len(current), 2 * k)
        return _bits(current)

    def _blocker(self, rule: Rule, s: int) -> Generator[list[int], list[Verdict], int | None]:
        """An edit of ``s`` outside the rule's edits whose presence stops the rule, by halving."""
        def blocked(m: int) -> bool:
            v = self.cache.get(m)
            return v is not None and v.rank > rule.rank

        def fires(m: int) -> bool:
            v = self.cache.get(m)
            return v is not None and v.signature == rule.signature

        pool = [i for i in range(self.n) if (s & ~rule.pos) >> i & 1]

        def narrow(pool: list[int]) -> list[int]:
            # trials already run inside s that hold the rule's edits narrow the pool, as the halving's own would
            for t in sorted(self.cache, key=lambda m: bin(m).count("1")):
                if t & rule.pos != rule.pos or t & rule.blockers or t & ~s:
                    continue
                x = [i for i in pool if t >> i & 1]
                if blocked(t) and x and len(x) < len(pool):
                    pool = x
                elif fires(t) and x and len(x) < len(pool):
                    pool = [i for i in pool if not t >> i & 1]
            return pool

        pool = narrow(pool)
        while len(pool) > 2 * self.width:
            h1, h2 = pool[:len(pool) // 2], pool[len(pool) // 2:]
            m1, m2 = rule.pos | _bits(h1), rule.pos | _bits(h2)
            yield from self._ask([m1, m2][:self.width] if self.width > 1 else [m1])
            if m1 not in self.cache:
                return None
            if blocked(m1):
                pool = h1
                continue
            if fires(m1):
                pool = h2
                continue
            yield from self._ask([m2])  # m1 failed earlier (masked): look at the other half
            if blocked(m2):
                pool = h2
            elif fires(m2):
                pool = h1
            else:
                break  # both halves masked: try every edit alone
        hit = yield from self._first([rule.pos | 1 << i for i in pool], blocked)
        return None if hit is None else (hit & ~rule.pos).bit_length() - 1

    # -- the cover: faults the model does not have, that no trial has excluded ---------------------
    def _skippers(self) -> dict[int, int]:
        """Learned phase skippers: edit -> the rank of the phase it skips.  An edit that stops a rule while the rule's
        edits with it fail later (the failure moved: ``--disable-cuda-graph`` skips the capture) hides every fault of
        that phase, so the cover also asks for such faults with the skipper absent beside the one edit absent."""
        out: dict[int, int] = {}
        for r in self.rules:
            for d in range(self.n):
                if r.blockers >> d & 1 and any(o.rank > r.rank and o.pos >> d & 1 and r.pos & ~o.pos == 0
                                               for o in self.rules):
                    out[d] = max(out.get(d, -1), r.rank)
        return out

    def _set_values(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sets, tested, value): every non-empty set, whether it has a verdict, and its rank (the verdict's where
        tried, the model's prediction elsewhere)."""
        sets = np.arange(1, self.full + 1, dtype=np.int64)
        tested = np.array([int(s) in self.cache for s in sets])
        value = np.array([self.cache[int(s)].rank if int(s) in self.cache else self.predict(int(s))[0]
                          for s in sets], dtype=np.int64)
        return sets, tested, value

    def _cover_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(sets, tested, value, covers, low, vis, capped): per fault of the cover's shape (rows) and set (columns)
        whether the set holds it, the value each set says of it (its rank, capped just past a skipped phase for a
        fault asked with its skipper absent: only a set that gets past that phase shows it; one that fails in it by
        another rule is a tie, which shows nothing of it), and per fault the best tested and untested values."""
        n = self.n
        sets, tested, value = self._set_values()
        pos_list, neg_list, cap_list = [], [], []
        negs = [(0 if c < 0 else 1 << c, OK_RANK) for c in [-1, *range(n)]]
        negs += [((1 << c) | (1 << d), cap + 1) for d, cap in self._skippers().items() for c in range(n) if c != d]
        for neg, cap in negs:
            free = self.full & ~neg
            sub = free
            while sub:
                if bin(sub).count("1") <= self.max_present:
                    pos_list.append(sub)
                    neg_list.append(neg)
                    cap_list.append(cap)
                sub = (sub - 1) & free
        pos = np.array(pos_list, dtype=np.int64)[:, None]
        neg = np.array(neg_list, dtype=np.int64)[:, None]
        capped = np.minimum(value[None, :], np.array(cap_list, dtype=np.int64)[:, None])
        covers = ((sets[None, :] & pos) == pos) & ((sets[None, :] & neg) == 0)
        low = np.where(covers & tested[None, :], capped, -2).max(axis=1)
        vis = np.where(covers & ~tested[None, :], capped, -2).max(axis=1)
        return sets, tested, value, covers, np.maximum(low, 0), vis, capped

    def _cover_scores(self) -> np.ndarray:
        """The cover's score of every set (index ``s - 1``): how much its trial would close, as ``_cover_picks``."""
        _sets, tested, _value, covers, low, vis, capped = self._cover_state()
        open_ = low < vis
        gain = np.clip(np.minimum(capped, vis[:, None]) - low[:, None], 0, None)
        score = np.where(covers & open_[:, None] & ~tested[None, :], gain, 0).sum(axis=0)
        closes = covers & open_[:, None] & ~tested[None, :] & (capped >= vis[:, None])
        return np.asarray(closes.sum(axis=0) * 1000 + score)

    def _cover_picks(self, count: int | None = None, pending: Sequence[int] = ()) -> list[int]:
        """The cover's next ``count`` sets (``width``), greedily; ``pending`` sets (on their way, no verdict
        yet) are taken as started with the phase the model predicts, as the greedy takes its own picks."""
        sets, tested, _value, covers, low, vis, capped = self._cover_state()
        picks: list[int] = []
        low = low.copy()
        for p in pending:
            if 0 < p <= self.full and not tested[p - 1]:
                low = np.where(covers[:, p - 1], np.maximum(low, capped[:, p - 1]), low)
        for _ in range(self.width if count is None else count):
            open_ = low < vis
            if not open_.any():
                break
            gain = np.clip(np.minimum(capped, vis[:, None]) - low[:, None], 0, None)
            score = np.where(covers & open_[:, None] & ~tested[None, :], gain, 0).sum(axis=0)
            # first the faults a set closes outright (its predicted phase is as late as any where they show)
            closes = covers & open_[:, None] & ~tested[None, :] & (capped >= vis[:, None])
            score = closes.sum(axis=0) * 1000 + score
            for p in [*picks, *pending]:
                score[p - 1] = 0
            best = int(score.argmax())
            if score[best] <= 0:
                break
            picks.append(int(sets[best]))
            low = np.where(covers[:, best], np.maximum(low, capped[:, best]), low)
        return picks

    def _blocker_picks(self, count: int | None = None, pending: Sequence[int] = ()) -> list[int]:
        """Sets that test an open blocker hypothesis: "edit c stops rule R" where R is predicted to strike
        (and so masks what a blocked R would let through) and no trial showed R firing with c present."""
        if self.n > COVER_MAX:
            return []
        picks: list[int] = []
        untested = [s for s in range(1, self.full + 1) if s not in self.cache and s not in pending]
        untested.sort(key=lambda m: (bin(m).count("1"), m))
        closed = {(id(rule), c) for rule in self.rules for c in range(self.n) if self._seen_through(rule, c)}

        scores: np.ndarray | None = None

        def surely(r: Rule, s: int) -> bool:  # r holds at s and no edit of s could stop it
            return r.holds(s) and all((id(r), c) in closed for c in range(self.n) if (s & ~r.pos) >> c & 1)

        def hides(r: Rule, s: int, rule: Rule, need: int) -> bool:
            # r strikes at s for sure in R's phase or earlier, or shows R's signature there, so that R's failure
            # would not answer the question ``need`` asks
            return r is not rule and ((r.rank <= rule.rank and surely(r, s))
                                      or (r.signature == rule.signature and r.holds(s) and _other(r, s, need)))

        for rule in self.rules:
            for c in range(self.n):
                bit = 1 << c
                if (rule.pos | rule.blockers) & bit or (id(rule), c) in closed:
                    continue  # R fired with c present, nothing else could have: c does not stop it
                need = rule.pos | bit
                fits = [s for s in untested if s & need == need and not s & rule.blockers and s not in picks
                         and rule in self.predict(s)[2] and not any(hides(r, s, rule, need) for r in self.rules)]
                # a blocked R matters there: no other rule of its phase or earlier surely strikes.  Of those, the set
                # that asks the most such questions of R at once (each edit of it whose stopping R is open)
                if fits:
                    if scores is None:
                        scores = self._cover_scores()
                    sc = scores
                    picks.append(max(fits, key=lambda s: (sum(1 for d in range(self.n) if (s & ~rule.pos) >> d & 1
                                                               and (id(rule), d) not in closed
                                                               and not rule.blockers >> d & 1),
                                                           int(sc[s - 1]), -bin(s).count("1"))))
                if len(picks) >= (self.width if count is None else count):
                    return picks
        return picks

    def _seen_through(self, rule: Rule, c: int) -> bool:
        """A trial showed ``rule`` firing with edit ``c`` present, where nothing else could have struck."""
        need = rule.pos | 1 << c
        return any(t & need == need and not t & rule.blockers and not v.ok and v.signature == rule.signature
                   and not any(r is not rule and r.signature == rule.signature and r.holds(t) and _other(r, t, need)
                               for r in self.rules)
                   for t, v in self.cache.items())

    def _maximal_picks(self) -> list[int]:
        """Untested sets a fault of any number of edits would need to show in, with none of its edits absent
        or one that stops a known culprit (a learned blocker).

        For each phase ``p`` and each such absent edit ``c`` (or none): the maximal sets (by inclusion)
        without ``c`` where nothing of phase ``p`` or earlier strikes (a trial's verdict where tried, the
        model's prediction elsewhere).  A fault "fails in ``p`` when all of ``P`` are present (and ``c``
        absent)" that would change a verdict somewhere shows at one of them: every set where it could
        show lies inside one.  The cover's faults of at most two edits miss a combination of three hidden
        behind an earlier phase (``{a, b, c}`` in ``cuda_graph_capture`` while ``{d, e}`` fails in
        ``nccl_init`` wherever all five are); these sets find it without the factorial.
        """
        if not self.maximal or self.n > COVER_MAX:
            return []
        sets, tested, value = self._set_values()
        size = self.full + 1
        val = np.full(size, UNKNOWN_RANK - 1, dtype=np.int64)
        val[sets] = value
        done = np.zeros(size, dtype=bool)
        done[sets] = tested
        picks: list[int] = []
        idx = np.arange(size)
        blockers = 0
        for r in self.rules:
            blockers |= r.blockers
        absent = [0] + [1 << c for c in range(self.n) if blockers >> c & 1 and self.maximal_blockers]
        for p, a in ((p, a) for p in range(UNKNOWN_RANK, OK_RANK - 2) for a in absent):
            # up to warmup: a serving fault never shows at a start
            fam = (val > p) & ((idx & a) == 0)
            fam[0] = False
            sup = fam.copy()  # sup[s]: s or a superset of it is in the family
            for b in range(self.n):
                bit = 1 << b
                low = idx[(idx & bit) == 0]
                sup[low] |= sup[low | bit]
            strict = np.zeros(size, dtype=bool)
            for b in range(self.n):
                bit = 1 << b
                low = idx[(idx & bit) == 0]
                strict[low] |= sup[low | bit]
            for s in np.nonzero(fam & ~strict & ~done)[0]:
                if int(s) not in picks:
                    picks.append(int(s))
        picks.sort(key=lambda m: (-bin(m).count("1"), m))
        return picks

    def _open_sets(self, limit: int = 64) -> list[int]:
        sets, tested, _value, covers, low, vis, capped = self._cover_state()
        open_ = low < vis
        need = (covers[open_] & (capped[open_] > low[open_][:, None]) & ~tested[None, :]).any(axis=0)
        return [int(s) for s in sets[need]][:limit]

    # -- the answer -----------------------------------------------------------------------------
    def _minimal(self) -> dict[str, list[int]]:
        """Minimal sets per signature over trials where run and the model elsewhere (ties: every signature)."""
        out: dict[str, list[int]] = {}
        limit = self.full if self.n <= 16 else 0
        masks = sorted(range(1, limit + 1), key=lambda m: bin(m).count("1")) if limit else sorted(
            (m for m in self.cache if m), key=lambda m: bin(m).count("1"))
        for s in masks:
            if s in self.cache:
                v = self.cache[s]
                sigs = frozenset() if v.ok or v.signature is None else frozenset({v.signature})
            else:
                sigs = self.predict(s)[1]
            for sig in sigs:
                found = out.setdefault(sig, [])
                if not any(m & s == m for m in found):
                    found.append(s)
        return out

    def steps(self) -> Generator[list[tuple[T, ...]], list[Verdict], None]:
        """The search as a coroutine: yields the subsets to try next, takes their verdicts in order."""
        gen = self._steps()
        try:
            masks = next(gen)
            while True:
                verdicts = yield [self.items(m) for m in masks]
                masks = gen.send(verdicts)
        except StopIteration:
            return

    def _steps(self) -> Ask:
        yield from self._ask([self.full])
        if self.full not in self.cache:
            yield from self._drain()
            self._finish()
            return
        if self.cache[self.full].ok:
            yield from self._drain()
            self._finish()
            return
        if self.n <= COVER_MAX:  # every edit alone: each one-edit culprit at once, whatever blocks it elsewhere
            yield from self._ask([1 << i for i in range(self.n)])
        while not self.cut:
            yield from self._learn()
            if self.cut:
                break
            # the maximal sets first: each closes much of the cover at once and shows a fault of any
            # size early, before the cover spends starts on a model that fault would change
            picks = self._maximal_picks()[:self.width]
            picks = picks or (self._cover_picks() if self.n <= COVER_MAX else [])
            picks = picks or self._blocker_picks()
            if picks:
                yield from self._ask(picks)
                continue
            minimal = self._minimal()
            need = sorted({m for ms in minimal.values() for m in ms if m not in self.cache},
                          key=lambda m: bin(m).count("1"))
            if not need:
                if self.spared > self.drained:  # spares still out may change the answer: learn them first
                    yield from self._drain()
                    continue
                break
            yield from self._ask(need[:self.width])
        yield from self._drain()
        self._finish()

    def _drain(self) -> Ask:
        """Before the answer: wait for the spares handed out (an empty batch; the driver learns them)."""
        if self.spared > self.drained:
            self.drained = self.spared
            yield []

    def _finish(self) -> None:
        self.finished = True
        self.exceptions = {s for s in self.exceptions if self._check(s) is not None}
        total = self.full
        tested = sum(1 for m in self.cache if m)
        unexplained = [self.items(m) for m in sorted(self.exceptions)]
        if self.cache.get(self.full, Verdict.passed()).ok and self.full in self.cache:
            self.guarantee = Guarantee(True, "All the edits together start: nothing to narrow, nothing searched.",
                                       tested, total)
            return
        minimal = self._minimal()
        for sig, ms in minimal.items():
            for m in ms:
                if m not in self.cache:
                    continue  # only sets that were started become culprits
                blockers = 0
                for r in self.rules:
                    if r.signature == sig and r.pos & m == r.pos:
                        blockers |= r.blockers
                self.culprits.append(Culprit(self.items(m), sig, self.cache[m].phase, self.items(blockers)))
        self.culprits.sort(key=lambda c: (phase_rank(c.phase), len(c.items), str(c.signature)))
        if self.n > COVER_MAX:
            self.guarantee = Guarantee(
                False, f"{self.n} edits: over the {COVER_MAX} up to which the fault-model check runs; each culprit "
                "was started alone and is 1-minimal (every set without one of its edits was tried), but other "
                "culprits may hide in the sets not started (only the full factorial tests them all).",
                tested, total, untested=[], unexplained=unexplained)
            return
        untested = [self.items(m) for m in dict.fromkeys(self._open_sets() + self._maximal_picks())][:64] \
            if self.cut else []
        unconfirmed = [m for ms in minimal.values() for m in ms if m not in self.cache]
        complete = not self.cut and not self.exceptions and not unconfirmed
        if complete:
            statement = (f"Complete for faults of the shape 'at most {self.max_present} edits present, at most one "
                         "absent' in any phase, with a learned phase skipper absent as well in the phase it skips "
                         "(the earliest phase strikes), and for faults of any number of edits present with none absent "
                         "or one absent that stops a culprit: any such fault not among the culprits would have shown "
                         "in one of the trials; each culprit was started alone and failed with its signature; every "
                         "trial agrees with the culprits and their blockers.")
        else:
            why = []
            if self.cut:
                why.append(f"the start budget ({self.max_starts}) ran out; the sets in 'untested' could still "
                           "show a culprit")
            if self.exceptions:
                why.append(f"{len(self.exceptions)} trial(s) no fault of that shape explains (a fault needing "
                           "two or more edits absent, or a flaky start): see 'unexplained'")
            if unconfirmed:
                why.append(f"{len(unconfirmed)} predicted culprit(s) not started")
            statement = "Not complete: " + "; ".join(why) + ". Only the full factorial would test every set."
        self.guarantee = Guarantee(complete, statement, tested, total, untested, unexplained)


def _other(r: Rule, t: int, need: int) -> bool:
    """Whether ``r``, holding at ``t`` with the signature of the rule a probe asks about (``need``: its edits and the
    edit asked), leaves the answer open there: unless ``t`` is exactly ``need`` and ``r`` lies inside it, a failure
    with that signature may be ``r``'s.  At ``need`` itself it answers the question the two rules ask of each other
    (they do not both stop each other: a mutual fix); that one rule stops the other and not back matters only where a
    third edit stops the other, a set a probe of that edit asks about."""
    return t != need or bool(r.pos & ~need)


def _bits(idx: Iterable[int]) -> int:
    m = 0
    for i in idx:
        m |= 1 << i
    return m


def _split(items: list[int], n: int) -> list[list[int]]:
    size, extra = divmod(len(items), n)
    out, i = [], 0
    for k in range(n):
        step = size + (1 if k < extra else 0)
        if step:
            out.append(items[i:i + step])
        i += step
    return out


def bisect(edits: Sequence[T], test: Callable[[tuple[T, ...]], Verdict] | None = None, *,
           test_many: Callable[[list[tuple[T, ...]]], list[Verdict]] | None = None, width: int = 1,
           known: Iterable[tuple[Sequence[T], Verdict]] = (), max_starts: int | None = None,
           maximal: bool = True, started: Callable[[Search[T]], None] | None = None,
           extras: Callable[[bool], Iterable[tuple[Sequence[T], Verdict]]] | None = None) -> Search[T]:
    """Run the search; ``result.culprits`` holds one entry per minimal failing set, ``result.guarantee``
    what was proven.  ``test`` tries one subset; ``test_many`` (for a fleet) tries up to ``width`` at once.

    Spares (a fleet's hosts that would idle while a batch runs): ``started(search)`` is called once before
    the first batch (a fleet hands ``search.spare`` to its idle hosts, asked only while ``test_many`` waits);
    ``extras(wait)``, called after each batch, gives the (subset, verdict) of the spares finished since,
    learned (:meth:`Search.learn`) before the search goes on; before its answer the search asks for an
    empty batch, and ``extras(True)`` then waits for the spares still running (their verdicts may change
    the answer; a fleet waits for them anyway before it restores).  Without spares nothing changes."""
    if test is None and test_many is None:
        raise ValueError("bisect needs test or test_many")
    search: Search[T] = Search(edits, known=known, width=width, max_starts=max_starts, maximal=maximal)
    run_many = test_many or (lambda subsets: [test(s) for s in subsets])  # type: ignore[misc]
    if started is not None:
        started(search)
    steps = search.steps()
    try:
        batch = next(steps)
        while True:
            verdicts = run_many(batch) if batch else []
            if extras is not None:
                for subset, verdict in extras(not batch):
                    search.learn(subset, verdict)
            batch = steps.send(verdicts)
    except StopIteration:
        pass
    return search


# -- baselines for the benchmarks ---------------------------------------------


def one_at_a_time(edits: Sequence[T], test: Callable[[tuple[T, ...]], Verdict]) -> tuple[int, list[Culprit[T]]]:
    """Baseline: add edits one by one in order until the unit fails; blame the last one added."""
    starts = 0
    for k in range(1, len(edits) + 1):
        v = test(tuple(edits[:k]))
        starts += 1
        if not v.ok:
            return starts, [Culprit((edits[k - 1],), v.signature or "", v.phase)]
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
            culprits.append(Culprit(tuple(edits[i] for i in sorted(idx)), v.signature or "", v.phase))
    return 2 ** n - 1, culprits
