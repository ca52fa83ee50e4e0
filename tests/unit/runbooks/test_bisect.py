import itertools
import random

import pytest

from workbench.bisect import Verdict, bisect, full_factorial, one_at_a_time

EP, NVLS, FUSION = "--ep-size 8", "--enable-nccl-nvls", "--enable-flashinfer-allreduce-fusion"


def seeds_oracle(subset):
    s = set(subset)
    if EP in s and NVLS in s:
        return Verdict.failed("cublas")
    if EP in s:
        return Verdict.failed("nonetype")
    return Verdict.passed()


def test_seeds_scenario_finds_both_culprits():
    result = bisect([EP, NVLS, FUSION], seeds_oracle)
    got = {(c.items, c.signature) for c in result.culprits}
    assert got == {((EP,), "nonetype"), ((EP, NVLS), "cublas")}
    # Without phases every failure may mask anything: the guarantee then needs every set of 3 edits.
    assert result.starts <= 7 and result.guarantee.complete


def test_nothing_to_find_when_everything_works():
    result = bisect([EP, NVLS], lambda s: Verdict.passed())
    assert result.culprits == [] and result.starts == 1


def test_memo_never_tests_a_subset_twice():
    calls = []

    def oracle(subset):
        calls.append(frozenset(subset))
        return seeds_oracle(subset)

    bisect([EP, NVLS, FUSION, "--a", "--b"], oracle)
    assert len(calls) == len(set(calls))


def random_faults(rng, n):
    """A random monotone fault set: a few (subset -> signature) rules; the first matching rule wins."""
    rules = []
    for k in range(rng.randint(1, 3)):
        size = rng.randint(1, min(3, n))
        rules.append((frozenset(rng.sample(range(n), size)), f"sig{k}"))
    rules.sort(key=lambda r: -len(r[0]))  # more specific rules strike first

    def oracle(subset):
        s = frozenset(subset)
        for cond, sig in rules:
            if cond <= s:
                return Verdict.failed(sig)
        return Verdict.passed()

    return oracle


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_the_full_factorial_on_random_fault_sets(seed):
    rng = random.Random(seed)
    n = rng.choice([3, 4, 5, 6])
    oracle = random_faults(rng, n)
    edits = list(range(n))
    result = bisect(edits, oracle)
    _, truth = full_factorial(edits, oracle)
    assert {(c.items, c.signature) for c in result.culprits} == {(c.items, c.signature) for c in truth}
    assert result.starts <= 2 ** n - 1


def test_one_at_a_time_baseline_blames_the_first_failure():
    starts, culprits = one_at_a_time([NVLS, FUSION, EP], seeds_oracle)
    assert starts == 3 and culprits[0].items == (EP,)


def test_single_culprit_among_many_is_logarithmic():
    n = 16
    oracle = lambda s: Verdict.failed("x") if 11 in s else Verdict.passed()  # noqa: E731
    result = bisect(list(range(n)), oracle)
    assert [c.items for c in result.culprits] == [(11,)]
    assert result.starts <= 2 * 4 + 2


def test_subsets_helper_exhaustive_small():
    for n in range(1, 5):
        assert sum(1 for _ in itertools.product([0, 1], repeat=n)) - 1 == full_factorial(list(range(n)), lambda s: Verdict.passed())[0]


def sim_like_faults(rng, n):
    """Faults as the simulator applies them: the matching fault of the earliest phase strikes (ties:
    file order), and faults of one kind share a signature — so failures mask each other."""
    faults = []
    for i in range(rng.randint(1, 4)):
        cond = frozenset(rng.sample(range(n), rng.randint(1, min(2, n))))
        faults.append((cond, rng.randint(0, 3), rng.choice(["oom", "nccl", "cublas"]), i))

    def oracle(subset):
        s = frozenset(subset)
        hits = sorted((phase, i, kind) for cond, phase, kind, i in faults if cond <= s)
        return Verdict.failed(f"{hits[0][2]}@{hits[0][0]}") if hits else Verdict.passed()

    return oracle


@pytest.mark.parametrize("seed", range(60))
def test_agrees_with_the_full_factorial_when_failures_mask_each_other(seed):
    rng = random.Random(10_000 + seed)
    n = rng.choice([3, 4, 5, 6])
    oracle = sim_like_faults(rng, n)
    result = bisect(list(range(n)), oracle)
    _, truth = full_factorial(list(range(n)), oracle)
    assert {(c.items, c.signature) for c in result.culprits} == {(c.items, c.signature) for c in truth}
