"""The labelled corpus of real log windows (tests/fixtures/tracebacks/corpus/README.md).

The development parts (dev and held-out 1-3, all seen by now) are asserted here; held-out 4 and later
are measured by ``bench/tracebacks_accuracy.py`` and reported in BENCHMARKS.md, never asserted.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "fixtures" / "tracebacks" / "corpus"
CAPTURED = "tests/fixtures/captured/"  # a capture file of this repository, as a held-out part's source
_spec = importlib.util.spec_from_file_location("tracebacks_accuracy", ROOT / "bench" / "tracebacks_accuracy.py")
assert _spec is not None and _spec.loader is not None
accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(accuracy)


def test_every_case_has_a_label_with_its_source() -> None:
    logs = sorted(CORPUS.glob("*/*.log"))
    assert len(logs) >= 140
    for log in logs:
        label = json.loads(log.with_suffix(".json").read_text())
        # (a few pages outside GitHub have no TLS; held-out 190 is real failures this project captured on a GPU)
        assert label["source"].startswith(("https://", "http://", CAPTURED)), log.name
        assert set(label) <= {"source", "root_cause", "final"}, log.name


def test_a_captured_window_is_whole_lines_of_its_capture_file() -> None:
    windows = [log for log in sorted(CORPUS.glob("*/*.log"))
               if json.loads(log.with_suffix(".json").read_text())["source"].startswith(CAPTURED)]
    assert len(windows) >= 14
    for log in windows:
        capture = (ROOT / json.loads(log.with_suffix(".json").read_text())["source"]).read_bytes()
        text = log.read_bytes()
        at = capture.find(text)
        ends = text.endswith(b"\n") or at + len(text) == len(capture)  # (a capture's last line may lack its newline)
        assert at >= 0 and (at == 0 or capture[at - 1:at] == b"\n") and ends, log.name


def test_every_key_phrase_is_in_its_own_log() -> None:
    """A label's message is a key phrase of the window's own text (case and runs of blanks ignored, as the
    scorer compares it): one that is not (a retyped quote) could never be matched."""
    def norm(text: str) -> str:
        return re.sub(r"\s+", " ", text).lower()

    for log in sorted(CORPUS.glob("*/*.log")):
        label = json.loads(log.with_suffix(".json").read_text())
        text = norm(log.read_text(encoding="utf-8", errors="replace"))
        for part in ("root_cause", "final"):
            phrase = (label.get(part) or {}).get("message")
            assert not phrase or norm(phrase) in text, (log.name, part, phrase)


PARTS = ("dev", "heldout", *(f"heldout{k}" for k in range(2, 224)))  # in the order they were collected
# each part from held-out 5 on was collected from threads no earlier part used: (fewest cases, files that
# must not cite its sources -- checked from the part whose collection first promised it)
NEW_THREADS = {"heldout5": (35, ()), "heldout6": (40, ()), "heldout7": (35, ()), "heldout8": (45, ()),
               "heldout9": (50, ("SOURCES.md",)),
               **{f"heldout{k}": (50, ("SOURCES.md", "corpus/README.md")) for k in range(10, 20)},
               "heldout19": (39, ("SOURCES.md", "corpus/README.md")),  # collected short of 50 (time limit)
               "heldout20": (33, ("SOURCES.md", "corpus/README.md")),  # collected short of 50 (time limit)
               "heldout21": (50, ("SOURCES.md", "corpus/README.md")),
               "heldout22": (41, ("SOURCES.md", "corpus/README.md")),  # collected short of 50 (time limit)
               "heldout23": (50, ("SOURCES.md", "corpus/README.md")),
               "heldout24": (50, ("SOURCES.md", "corpus/README.md")),
               # three threads held-out 24 took first (the two were collected at once) and two SOURCES.md cites as
               # "owner/repo#N" left out
               "heldout25": (45, ("SOURCES.md", "corpus/README.md")),
               "heldout26": (50, ("SOURCES.md", "corpus/README.md")),
               "heldout27": (50, ("SOURCES.md", "corpus/README.md")),
               "heldout28": (50, ("SOURCES.md", "corpus/README.md")),
               "heldout29": (50, ("SOURCES.md", "corpus/README.md")),
               "heldout30": (51, ("SOURCES.md", "corpus/README.md")),
               "heldout31": (37, ("SOURCES.md", "corpus/README.md")),  # collected short of 50 (time limit)
               "heldout32": (34, ("SOURCES.md", "corpus/README.md")),  # collected short of 50 (time limit)
               "heldout33": (51, ("SOURCES.md", "corpus/README.md")),
               "heldout34": (51, ("SOURCES.md", "corpus/README.md")),
               "heldout35": (54, ("SOURCES.md", "corpus/README.md")),
               "heldout36": (50, ("SOURCES.md", "corpus/README.md")),
               "heldout37": (50, ("SOURCES.md", "corpus/README.md")),
               "heldout38": (45, ("SOURCES.md", "corpus/README.md")),  # collected short of 50 (the helper could not trust the clock)
               "heldout39": (50, ("SOURCES.md", "corpus/README.md")),
               "heldout40": (45, ("SOURCES.md", "corpus/README.md")),  # the brief's limit: 45 windows
               "heldout41": (45, ("SOURCES.md", "corpus/README.md")),  # the brief's limit: 45 windows
               "heldout42": (40, ("SOURCES.md", "corpus/README.md")),  # the brief's limit: 40 windows
               "heldout43": (40, ("SOURCES.md", "corpus/README.md")),  # the brief's limit: 40 windows
               "heldout44": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's limit: 42 windows
               "heldout45": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout46": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout47": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout48": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout49": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout50": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout51": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout52": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout53": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout54": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout55": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout56": (39, ("SOURCES.md", "corpus/README.md")),  # collected short of 42 (time limit)
               "heldout57": (42, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: 42 windows
               "heldout58": (39, ("SOURCES.md", "corpus/README.md")),  # collected short of 42 (time limit)
               "heldout59": (33, ("SOURCES.md", "corpus/README.md")),  # collected short of 42 (time limit)
               "heldout60": (36, ("SOURCES.md", "corpus/README.md")),  # collected short of 42 (time limit)
               "heldout61": (40, ("SOURCES.md", "corpus/README.md")),  # collected short of 42 (time limit)
               "heldout62": (36, ("SOURCES.md", "corpus/README.md")),  # collected short of 42 (time limit)
               "heldout63": (39, ("SOURCES.md", "corpus/README.md")),  # collected short of 42 (time limit)
               "heldout64": (30, ("SOURCES.md", "corpus/README.md")),  # collected short of 42 (time limit)
               "heldout65": (36, ("SOURCES.md", "corpus/README.md")),  # collected short of 42 (time limit)
               "heldout66": (26, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (time limit)
               "heldout67": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout68": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout69": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout70": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout71": (24, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (time limit)
               "heldout72": (20, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (time limit)
               "heldout73": (27, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (time limit)
               "heldout74": (22, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (time limit)
               "heldout75": (27, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (time limit)
               "heldout76": (17, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (time limit)
               "heldout77": (22, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (time limit)
               "heldout78": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout79": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout80": (26, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (threads left)
               "heldout81": (27, ("SOURCES.md", "corpus/README.md")),  # forums and pages, not GitHub
               "heldout82": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout83": (24, ("SOURCES.md", "corpus/README.md")),  # Hugging Face discussions; short (excerpts)
               "heldout84": (25, ("SOURCES.md", "corpus/README.md")),  # Chinese-language pages; short (excerpts)
               "heldout85": (24, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: about 25 windows
               "heldout86": (24, ("SOURCES.md", "corpus/README.md")),  # the brief's aim: about 25 windows
               "heldout87": (17, ("SOURCES.md", "corpus/README.md")),  # collected short of 20 (time limit)
               "heldout88": (14, ("SOURCES.md", "corpus/README.md")),  # collected short of 20 (time limit)
               "heldout89": (19, ("SOURCES.md", "corpus/README.md")),  # collected short of 20 (time limit)
               "heldout90": (20, ("SOURCES.md", "corpus/README.md")),
               "heldout91": (19, ("SOURCES.md", "corpus/README.md")),  # collected short of 20 (time limit)
               "heldout92": (19, ("SOURCES.md", "corpus/README.md")),  # collected short of 20 (time limit)
               "heldout93": (19, ("SOURCES.md", "corpus/README.md")),  # collected short of 20 (time limit)
               "heldout94": (20, ("SOURCES.md", "corpus/README.md")),
               "heldout95": (10, ("SOURCES.md", "corpus/README.md")),  # short of 15: the engines' threads nearly used up
               "heldout96": (13, ("SOURCES.md", "corpus/README.md")),  # short of 15: the engines' threads nearly used up
               "heldout97": (15, ("SOURCES.md", "corpus/README.md")),
               "heldout98": (19, ("SOURCES.md", "corpus/README.md")),
               "heldout99": (16, ("SOURCES.md", "corpus/README.md")),
               "heldout100": (15, ("SOURCES.md", "corpus/README.md")),
               "heldout101": (16, ("SOURCES.md", "corpus/README.md")),
               "heldout102": (18, ("SOURCES.md", "corpus/README.md")),
               # the thirty-first stop's round: four helpers at once, each short of its 30 (most threads of their
               # sources with a pasted log are already in the corpus)
               "heldout103": (22, ("SOURCES.md", "corpus/README.md")),
               "heldout104": (29, ("SOURCES.md", "corpus/README.md")),
               "heldout105": (27, ("SOURCES.md", "corpus/README.md")),
               "heldout106": (24, ("SOURCES.md", "corpus/README.md")),
               # its second round: pages (Hugging Face discussions, forums, pastes, blogs), Chinese-language threads,
               # model repositories, the smaller engines
               **{f"heldout{k}": (30, ("SOURCES.md", "corpus/README.md")) for k in range(107, 111)},
               # its third round: documentation pages and model discussions, the infrastructure under the engines, log
               # files committed to repositories, applications and evaluation tools (three short of 30: sources used up)
               "heldout111": (24, ("SOURCES.md", "corpus/README.md")),
               "heldout112": (25, ("SOURCES.md", "corpus/README.md")),
               "heldout113": (29, ("SOURCES.md", "corpus/README.md")),
               "heldout114": (30, ("SOURCES.md", "corpus/README.md")),
               # its fourth round, cut short when the search tool's budget ran out: Ascend's Gitee/GitCode mirrors 28,
               # Japanese and Korean pages 1, cloud vendors' samples 12, accelerator vendors' forks 27
               "heldout115": (28, ("SOURCES.md", "corpus/README.md")),
               "heldout116": (1, ("SOURCES.md", "corpus/README.md")),
               "heldout117": (12, ("SOURCES.md", "corpus/README.md")),
               "heldout118": (27, ("SOURCES.md", "corpus/README.md")),
               "heldout119": (34, ("SOURCES.md", "corpus/README.md")),
               "heldout120": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout121": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout122": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout123": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout124": (29, ("SOURCES.md", "corpus/README.md")),  # pages outside GitHub
               "heldout125": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout126": (31, ("SOURCES.md", "corpus/README.md")),  # files committed to repositories
               "heldout127": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout128": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout129": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout130": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout131": (21, ("SOURCES.md", "corpus/README.md")),  # the Q&A sites ran dry (tool-call limit)
               "heldout132": (26, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (tool-call limit)
               "heldout133": (26, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (tool-call limit)
               "heldout134": (29, ("SOURCES.md", "corpus/README.md")),
               "heldout135": (20, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (tool-call limit)
               "heldout136": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout137": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout138": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout139": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout140": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout141": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout142": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout143": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout144": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout145": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout146": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout147": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout148": (21, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (tool-call limit)
               "heldout149": (34, ("SOURCES.md", "corpus/README.md")),
               "heldout150": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout151": (11, ("SOURCES.md", "corpus/README.md")),  # the engines' trackers mostly cited (tool-call limit)
               "heldout152": (9, ("SOURCES.md", "corpus/README.md")),  # the engines' trackers mostly cited (tool-call limit)
               "heldout153": (23, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (tool-call limit)
               "heldout154": (26, ("SOURCES.md", "corpus/README.md")),  # collected short of 30 (tool-call limit)
               "heldout155": (33, ("SOURCES.md", "corpus/README.md")),  # one window dropped: SOURCES.md cites its thread
               "heldout156": (34, ("SOURCES.md", "corpus/README.md")),
               "heldout157": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout158": (34, ("SOURCES.md", "corpus/README.md")),
               "heldout159": (29, ("SOURCES.md", "corpus/README.md")),  # three windows dropped: not verbatim
               "heldout160": (30, ("SOURCES.md", "corpus/README.md")),  # one dropped: a second window of one thread
               "heldout161": (33, ("SOURCES.md", "corpus/README.md")),  # one dropped: a second window of one thread
               "heldout162": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout163": (29, ("SOURCES.md", "corpus/README.md")),  # two dropped: not a log as printed
               "heldout164": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout165": (30, ("SOURCES.md", "corpus/README.md")),  # one dropped: held-out 163 took its thread
               "heldout166": (30, ("SOURCES.md", "corpus/README.md")),  # one dropped: held-out 163 took its thread
               "heldout167": (29, ("SOURCES.md", "corpus/README.md")),
               "heldout168": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout169": (33, ("SOURCES.md", "corpus/README.md")),
               "heldout170": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout171": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout172": (34, ("SOURCES.md", "corpus/README.md")),
               "heldout173": (33, ("SOURCES.md", "corpus/README.md")),
               "heldout174": (29, ("SOURCES.md", "corpus/README.md")),
               "heldout175": (6, ("SOURCES.md", "corpus/README.md")),  # the session's search budget ran out
               "heldout176": (9, ("SOURCES.md", "corpus/README.md")),  # the session's search budget ran out
               "heldout177": (20, ("SOURCES.md", "corpus/README.md")),  # the session's search budget ran out
               "heldout178": (23, ("SOURCES.md", "corpus/README.md")),
               "heldout179": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout180": (29, ("SOURCES.md", "corpus/README.md")),
               "heldout181": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout182": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout183": (26, ("SOURCES.md", "corpus/README.md")),
               "heldout184": (23, ("SOURCES.md", "corpus/README.md")),
               "heldout185": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout186": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout187": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout188": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout189": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout190": (14, ("SOURCES.md", "corpus/README.md")),
               "heldout191": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout192": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout193": (34, ("SOURCES.md", "corpus/README.md")),
               "heldout194": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout195": (32, ("SOURCES.md", "corpus/README.md")),
               "heldout196": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout197": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout198": (31, ("SOURCES.md", "corpus/README.md")),
               "heldout199": (27, ("SOURCES.md", "corpus/README.md")),
               "heldout200": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout201": (29, ("SOURCES.md", "corpus/README.md")),
               "heldout202": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout203": (10, ("SOURCES.md", "corpus/README.md")),  # the helper's time ran out
               "heldout204": (27, ("SOURCES.md", "corpus/README.md")),
               "heldout205": (27, ("SOURCES.md", "corpus/README.md")),
               # the search index's excerpts are short and most threads of these themes were taken by now
               "heldout206": (17, ("SOURCES.md", "corpus/README.md")),
               "heldout207": (18, ("SOURCES.md", "corpus/README.md")),
               "heldout208": (11, ("SOURCES.md", "corpus/README.md")),
               "heldout209": (30, ("SOURCES.md", "corpus/README.md")),
               "heldout210": (3, ("SOURCES.md", "corpus/README.md")),
               "heldout211": (2, ("SOURCES.md", "corpus/README.md")),
               "heldout212": (11, ("SOURCES.md", "corpus/README.md")),
               "heldout213": (24, ("SOURCES.md", "corpus/README.md")),
               "heldout214": (3, ("SOURCES.md", "corpus/README.md")),
               "heldout215": (24, ("SOURCES.md", "corpus/README.md")),
               "heldout216": (4, ("SOURCES.md", "corpus/README.md")),
               "heldout217": (13, ("SOURCES.md", "corpus/README.md")),
               "heldout218": (45, ("SOURCES.md", "corpus/README.md")),
               "heldout219": (78, ("SOURCES.md", "corpus/README.md")),
               "heldout220": (45, ("SOURCES.md", "corpus/README.md")),
               "heldout221": (15, ("SOURCES.md", "corpus/README.md")),  # the forty-second stop's round: few
               "heldout222": (14, ("SOURCES.md", "corpus/README.md")),  # threads are left that no part used
               "heldout223": (14, ("SOURCES.md", "corpus/README.md"))}


def _sources(part: str) -> set[str]:
    return {json.loads(p.read_text())["source"] for p in (CORPUS / part).glob("*.json")}


def test_no_case_is_in_two_parts() -> None:
    assert sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) == sorted(PARTS)
    parts = [{p.stem for p in (CORPUS / name).glob("*.log")} for name in PARTS]
    assert all(parts)
    assert sum(len(p) for p in parts) == len(set().union(*parts))


@pytest.mark.parametrize("part", sorted(NEW_THREADS, key=PARTS.index))
def test_held_out_part_comes_from_threads_no_earlier_part_uses(part: str) -> None:
    fewest, citing = NEW_THREADS[part]
    own = _sources(part)
    earlier = set().union(*(_sources(p) for p in PARTS[:PARTS.index(part)]))
    assert len(own) == len(list((CORPUS / part).glob("*.json"))) >= fewest  # one window per thread
    assert not own & earlier
    cited = "".join((CORPUS.parent / name).read_text() for name in citing)
    assert not [s for s in own if re.search(re.escape(s) + r"(?![0-9])", cited)]
    # SOURCES.md names a thread "owner/repo#N" as well: checked from held-out 24 on (found in the sixteenth stop;
    # held-outs 9, 11 and 12 each hold one window of a thread SOURCES.md cites so, kept as they were measured)
    if PARTS.index(part) < PARTS.index("heldout24"):
        return
    short = {re.sub(r"^https://github\.com/([^/]+/[^/]+)/(?:issues|pull)/(\d+)$", r"\1#\2", s) for s in own}
    assert not [s for s in short if "#" in s and re.search(re.escape(s) + r"(?![0-9])", cited, re.I)]


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
