"""Failures a log states in plain words, read only while nothing else told of one: the last resorts of
``Extractor.finish`` (a pasted error line with no level, else a warning that says something failed)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from workbench.logformats import LogLine
from workbench.tracebacks.model import LogEvent
from workbench.tracebacks.patterns import level_word

# a failure stated in plain words by a line with no level at all, a pasted error of one line ("Task failed because the
# node it was running on is dead", "llama-server <completion> exited with status code -1073740791"): the last of the last
# resorts (see ``Extractor.finish``), and never a warning's or a note's words ("Will ignore error and continue")
_STATED = re.compile(r"\b(?:[Ff]ail(?:ed|ure)|FAILED|timed out|is dead|exited with (?:status|code|exit code) (?!0\b)\S)"
                     r"|\b[Ee]rror[:=]|_ERROR_|\bERR\b|"
                     r"\b(?:[Uu]nable to (?:reliably )?|[Cc]ould not )(?:start|connect|load|allocate|open|create|launch|"
                     r"initiali[sz]e)\b")
_NOTE = (r"[Ii]gnor|silence|[Rr]etry|"
        # ("12 passed, 0 FAILED", "(no failures)", a benchmark's "Failed requests:   0")
        r"\b(?:0|[Nn]o) (?:[Ff]ail\w*|FAILED|[Ee]rrors?)\b|\b[Ff]ail(?:ed|ures?)\b[\w ]{0,30}:\s*0\b|"
        r"fall(?:ing)? ?back|[Ss]kipping|[Ff]ailed to import|:$|"
        # (nor a person's sentence about a failure: "The test marked FAILED yesterday passes again
        # today", "Failed to update parameter online, then it worked after a restart.")
        r"^\s*(?:[Tt]he|[Ii]t|[Ww]e|[Tt]his|[Tt]hat|[Ww]hen|[Ii]f|[Aa]fter|[Bb]ut)\s|, then\b|"
        r"\b(?:yesterday|today|worked)\b")
_NOT_STATED = re.compile(r"[Ww]arn|WARN|\bINFO\b|\bDEBUG\b|\bDBG\b|" + _NOTE)
# a warning's words that say the program goes on: advice, a deprecation, an attempt it will make again
_NOT_WARNED = re.compile(r"[Dd]eprecat|[Aa]ttempts?\b|[Ff]uture|[Cc]onsider|[Rr]ecommend|[Mm]ay |[Mm]ight |[Rr]econnect|" + _NOTE)


def stated_failure(parsed: LogLine, msg: str, line_no: int, phase: str, server: str,
                   recent: Iterable[str] = ()) -> LogEvent | None:
    """The line ``msg`` as a failure it states in :data:`_STATED`'s words with no level (not the parser's, no level
    word), when it is no warning or note (:data:`_NOT_STATED`); else None."""
    if parsed.level is not None or not ("ail" in msg or "AIL" in msg or "rr" in msg or "RR" in msg or "ed out" in msg
                                        or "dead" in msg or "xited" in msg or "nable to" in msg or "ould not" in msg) \
            or _STATED.search(msg) is None or _NOT_STATED.search(msg.rstrip()) is not None \
            or level_word(msg, 48) is not None or msg.lstrip()[:1] == "#":
        return None
    return LogEvent("error_line", line_no, msg.strip()[:400], parsed.rank, phase, server, tuple(recent)[:-1])


def warned_failure(parsed: LogLine, msg: str, line_no: int, phase: str, server: str,
                   recent: Iterable[str] = ()) -> LogEvent | None:
    """The line ``msg`` as a failure a warning states in :data:`_STATED`'s words (the parser's level or the line's
    first level word is WARNING: "WARN dynamo_runtime::transports::etcd::lease: Failed to establish keep-alive
    stream", "[kvcached][WARNING][...] Failed to patch kv_cache_coordinator"), when it is no note or advice
    (:data:`_NOT_WARNED`); else None. The last of the last resorts: a window whose worst line is a warning."""
    if not ("ail" in msg or "AIL" in msg or "rr" in msg or "RR" in msg or "ed out" in msg or "nable to" in msg
            or "ould not" in msg) or (parsed.level != "WARNING" and level_word(msg, 64) != "WARNING") \
            or _STATED.search(msg) is None or _NOT_WARNED.search(msg.rstrip()) is not None:
        return None
    return LogEvent("error_line", line_no, msg.strip()[:400], parsed.rank, phase, server, tuple(recent)[:-1])


class PlainFailure:
    """The last resorts a log's lines are read for while no event was (see ``Extractor.finish``): the first failure a
    line states with no level (:func:`stated_failure`), else the first a warning states (:func:`warned_failure`)."""

    __slots__ = ("stated", "warned")

    def __init__(self) -> None:
        self.stated: LogEvent | None = None
        self.warned: LogEvent | None = None

    def read(self, parsed: LogLine, msg: str, line_no: int, phase: str, server: str, recent: Iterable[str]) -> None:
        if self.stated is None:
            self.stated = stated_failure(parsed, msg, line_no, phase, server, recent)
            if self.stated is None and self.warned is None:
                self.warned = warned_failure(parsed, msg, line_no, phase, server, recent)

    @property
    def best(self) -> LogEvent | None:
        return self.stated or self.warned
