"""Score ``workbench.tracebacks`` against the labelled corpus of real log windows.

Each ``tests/fixtures/tracebacks/corpus/<part>/<case>.log`` has a ``<case>.json`` label:
a subset of the ``workbench tracebacks --json`` object (``root_cause`` and ``final``) as an
engineer reading the log would fill it in, plus ``source`` (the public thread). A label
field counts as matched when the tool's value equals it; ``message`` is a key phrase that
must appear in the tool's message (case and runs of blanks ignored); ``"root_cause": null``
means the window holds no failure. ``phase`` fields are also counted apart.

    PYTHONPATH=. python bench/tracebacks_accuracy.py [dev|heldout|all] [--misses]

prints, per part, the share of labelled fields matched and of phases matched.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tracebacks" / "corpus"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def field_matches(key: str, expected: Any, got: Any) -> bool:
    """One labelled field against the tool's value (see the module docstring)."""
    if key == "message" and isinstance(expected, str):
        return isinstance(got, str) and _norm(expected) in _norm(got)
    return bool(expected == got)


def score_case(label: dict[str, Any], got: dict[str, Any]) -> Iterator[tuple[str, bool]]:
    """(field path, matched) for every labelled field of one case."""
    for part in ("root_cause", "final"):
        if part not in label:
            continue
        want = label[part]
        have = got.get(part)
        if want is None:
            yield part, have is None
            continue
        for key, value in want.items():
            yield f"{part}.{key}", have is not None and field_matches(key, value, have.get(key))


def score(part: str, *, misses: bool = False) -> dict[str, Any]:
    """Fields and phases matched over one part of the corpus (``dev``, ``heldout``)."""
    from workbench.tracebacks import analyze, to_json

    fields = matched = phases = phases_ok = cases = 0
    missed: list[str] = []
    for log in sorted((CORPUS / part).glob("*.log")):
        label = json.loads(log.with_suffix(".json").read_text())
        got = to_json(analyze(log.read_bytes().decode("utf-8", "replace")))
        cases += 1
        for path, ok in score_case(label, got):
            fields += 1
            matched += ok
            if path.endswith(".phase"):
                phases += 1
                phases_ok += ok
            if not ok and misses:
                part_name, _, key = path.partition(".")
                have = (got.get(part_name) or {}).get(key) if key else got.get(part_name)
                want = label[part_name][key] if key else None
                missed.append(f"{log.stem}: {path} want {want!r} got {have!r}"[:300])
    return {"part": part, "cases": cases, "fields": fields, "matched": matched, "phases": phases,
            "phases_matched": phases_ok, "missed": missed}


def main(argv: list[str]) -> int:
    parts = [a for a in argv if not a.startswith("-")] or ["dev"]
    if parts == ["all"]:
        parts = ["dev", "heldout"]
    for part in parts:
        r = score(part, misses="--misses" in argv)
        for line in r["missed"]:
            print("  " + line)
        f = 100 * r["matched"] / max(r["fields"], 1)
        p = 100 * r["phases_matched"] / max(r["phases"], 1)
        print(f"{part}: {r['cases']} cases, fields {r['matched']}/{r['fields']} = {f:.1f}%, "
              f"phases {r['phases_matched']}/{r['phases']} = {p:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
