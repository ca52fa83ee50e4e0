"""``logformats.finds``: a pattern's presence run by RE2 where RE2 gives ``re``'s answer, ``re`` elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

from workbench import phases
from workbench.logformats import _without_lookarounds, finds

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "tracebacks" / "corpus"


def test_it_answers_as_re_on_every_line_of_the_corpus_for_the_phrase_tables() -> None:
    """The long phrase tables (lookaheads, re.I and scoped flags), every line of the labelled corpus: ASCII
    lines through RE2, Chinese, Japanese and odd-space lines through ``re``, the same answer each time."""
    lines = [line for log in sorted(CORPUS.glob("*/*.log")) for line in log.read_text(errors="replace").split("\n")]
    assert len(lines) > 40_000
    for pattern in (phases._TEXT_SERVING, phases._TEXT_STARTUP, phases._TEXT_RULE_ANY):
        found = finds(pattern)
        hits = 0
        for line in lines:
            want = pattern.search(line) is not None
            assert found(line) is want, (pattern.pattern[:40], line)
            hits += want
        assert hits > 100


def test_a_lookahead_is_confirmed_by_re_and_flags_go_with_the_pattern() -> None:
    found = finds(re.compile(r"[Ff]ailed to (?:start(?! (?:put|get)\b)|init)|CUDA error", re.I))
    assert found("Failed to start engine") and found("cuda ERROR: x")
    assert not found("Failed to start put operation")  # RE2's copy finds it, re says no
    assert not found("all good")


def test_non_ascii_and_odd_spaces_go_to_re() -> None:
    """RE2's \\b and \\w are ASCII: before a CJK letter it sees a word boundary where re sees none."""
    pattern = re.compile(r"\bRequest failed\b")
    found = finds(pattern)
    assert not found("请求Request failed") and pattern.search("请求Request failed") is None
    assert found("x\x1cRequest failed") is (pattern.search("x\x1cRequest failed") is not None)


def test_lookarounds_are_cut_out_with_their_brackets() -> None:
    assert _without_lookarounds(r"a(?! (?:put|get)\b)|b(?=x)c|(?<!y)d\(e") == r"a|bc|d\(e"
    assert _without_lookarounds(r"a(?![)(]x)b") == "ab"
