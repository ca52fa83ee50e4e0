"""The labelled corpus of real log windows (tests/fixtures/tracebacks/corpus/README.md).

The development parts (dev and held-out 1-3, all seen by now) are asserted here; held-out 4 to 7 are
measured by ``bench/tracebacks_accuracy.py`` and reported in BENCHMARKS.md, never asserted.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "fixtures" / "tracebacks" / "corpus"
_spec = importlib.util.spec_from_file_location("tracebacks_accuracy", ROOT / "bench" / "tracebacks_accuracy.py")
assert _spec is not None and _spec.loader is not None
accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(accuracy)


def test_every_case_has_a_label_with_its_source() -> None:
    logs = sorted(CORPUS.glob("*/*.log"))
    assert len(logs) >= 140
    for log in logs:
        label = json.loads(log.with_suffix(".json").read_text())
        assert label["source"].startswith("https://"), log.name
        assert set(label) <= {"source", "root_cause", "final"}, log.name


def test_no_case_is_in_two_parts() -> None:
    parts = [{p.stem for p in (CORPUS / name).glob("*.log")} for name in ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7")]
    assert all(parts)
    assert sum(len(p) for p in parts) == len(set().union(*parts))


def test_held_out_5_comes_from_threads_no_other_part_uses() -> None:
    def sources(part: str) -> set[str]:
        return {json.loads(p.read_text())["source"] for p in (CORPUS / part).glob("*.json")}

    fifth = sources("heldout5")
    others = set().union(*(sources(p) for p in ("dev", "heldout", "heldout2", "heldout3", "heldout4")))
    assert len(fifth) == len(list((CORPUS / "heldout5").glob("*.json"))) >= 35
    assert not fifth & others


def test_held_out_6_comes_from_threads_no_other_part_uses() -> None:
    def sources(part: str) -> set[str]:
        return {json.loads(p.read_text())["source"] for p in (CORPUS / part).glob("*.json")}

    sixth = sources("heldout6")
    others = set().union(*(sources(p) for p in ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5")))
    assert len(sixth) == len(list((CORPUS / "heldout6").glob("*.json"))) >= 40
    assert not sixth & others


def test_held_out_7_comes_from_threads_no_other_part_uses() -> None:
    def sources(part: str) -> set[str]:
        return {json.loads(p.read_text())["source"] for p in (CORPUS / part).glob("*.json")}

    seventh = sources("heldout7")
    others = set().union(*(sources(p) for p in ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6")))
    assert len(seventh) == len(list((CORPUS / "heldout7").glob("*.json"))) >= 35
    assert not seventh & others


def test_held_out_8_comes_from_threads_no_other_part_uses() -> None:
    def sources(part: str) -> set[str]:
        return {json.loads(p.read_text())["source"] for p in (CORPUS / part).glob("*.json")}

    eighth = sources("heldout8")
    earlier = ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7")
    others = set().union(*(sources(p) for p in earlier))
    assert len(eighth) == len(list((CORPUS / "heldout8").glob("*.json"))) >= 45
    assert not eighth & others


def test_held_out_9_comes_from_threads_no_other_part_uses() -> None:
    def sources(part: str) -> set[str]:
        return {json.loads(p.read_text())["source"] for p in (CORPUS / part).glob("*.json")}

    ninth = sources("heldout9")
    earlier = ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7",
               "heldout8")
    others = set().union(*(sources(p) for p in earlier))
    assert len(ninth) == len(list((CORPUS / "heldout9").glob("*.json"))) >= 50
    assert not ninth & others
    cited = (CORPUS.parent / "SOURCES.md").read_text()
    assert not [s for s in ninth if re.search(re.escape(s) + r"(?![0-9])", cited)]


def test_held_out_10_comes_from_threads_no_other_part_uses() -> None:
    def sources(part: str) -> set[str]:
        return {json.loads(p.read_text())["source"] for p in (CORPUS / part).glob("*.json")}

    tenth = sources("heldout10")
    earlier = ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7",
               "heldout8", "heldout9")
    others = set().union(*(sources(p) for p in earlier))
    assert len(tenth) == len(list((CORPUS / "heldout10").glob("*.json"))) >= 50
    assert not tenth & others
    cited = (CORPUS.parent / "SOURCES.md").read_text() + (CORPUS / "README.md").read_text()
    assert not [s for s in tenth if re.search(re.escape(s) + r"(?![0-9])", cited)]


def test_held_out_11_comes_from_threads_no_other_part_uses() -> None:
    def sources(part: str) -> set[str]:
        return {json.loads(p.read_text())["source"] for p in (CORPUS / part).glob("*.json")}

    eleventh = sources("heldout11")
    earlier = ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7",
               "heldout8", "heldout9", "heldout10")
    others = set().union(*(sources(p) for p in earlier))
    assert len(eleventh) == len(list((CORPUS / "heldout11").glob("*.json"))) >= 50
    assert not eleventh & others
    cited = (CORPUS.parent / "SOURCES.md").read_text() + (CORPUS / "README.md").read_text()
    assert not [s for s in eleventh if re.search(re.escape(s) + r"(?![0-9])", cited)]



def test_held_out_12_comes_from_threads_no_other_part_uses() -> None:
    def sources(part: str) -> set[str]:
        return {json.loads(p.read_text())["source"] for p in (CORPUS / part).glob("*.json")}

    twelfth = sources("heldout12")
    earlier = ("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7",
               "heldout8", "heldout9", "heldout10", "heldout11")
    others = set().union(*(sources(p) for p in earlier))
    assert len(twelfth) == len(list((CORPUS / "heldout12").glob("*.json"))) >= 50
    assert not twelfth & others
    cited = (CORPUS.parent / "SOURCES.md").read_text() + (CORPUS / "README.md").read_text()
    assert not [s for s in twelfth if re.search(re.escape(s) + r"(?![0-9])", cited)]

def test_development_parts_meet_the_goal() -> None:
    # held-out 1-3 were measured, seen and tuned to in issue 15's second round: development now
    for part in ("dev", "heldout", "heldout2", "heldout3"):
        r = accuracy.score(part)
        assert r["matched"] / r["fields"] >= 0.95, r["missed"]
        assert r["phases_matched"] / r["phases"] >= 0.90, r["missed"]


def test_message_is_matched_as_a_key_phrase() -> None:
    assert accuracy.field_matches("message", "CUDA out of memory", "CUDA out of  memory. Tried to allocate")
    assert not accuracy.field_matches("message", "CUDA out of memory", None)
    assert not accuracy.field_matches("phase", "serving", "warmup")
