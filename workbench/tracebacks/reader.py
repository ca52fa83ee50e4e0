"""Feed a whole text or a binary stream to an :class:`~workbench.tracebacks.scan.Extractor`.

While nothing is open, one regex search over the text finds the next line that can matter and
the dull lines before it are only counted; a stream is read in bounded chunks, so memory stays
bounded by the chunk, the longest line and what was found.
"""

from __future__ import annotations

import io
from typing import BinaryIO

from workbench.tracebacks.binary import binary_noise
from workbench.tracebacks.prefixes import learn_shapes
from workbench.tracebacks.scan import Extractor


def extract(text: str | bytes, *, year: int | None = None) -> Extractor:
    """Run an :class:`Extractor` over a whole text (lines split on ``\\n``)."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    ex = Extractor(year=year)
    learn_shapes(ex.shapes, text)
    last = text.rfind("\n") + 1
    feed_lines(ex, text, last)
    ex.feed(text[last:])
    ex.finish(last_line(ex, text))
    return ex


def last_line(ex: Extractor, text: str) -> tuple[int, str] | None:
    """The last line of ``text`` that is not blank, and its number, once ``ex`` has been fed all of ``text``."""
    body = text.rstrip()
    if not body:
        return None
    start = body.rfind("\n") + 1
    return ex.line_no - text.count("\n", start), body[start:]


def feed_lines(ex: Extractor, text: str, stop: int) -> None:
    """Feed the lines of ``text[:stop]`` (``stop`` just after a newline, or 0).

    While nothing is open, one regex search over the text finds the next line that can matter
    and the dull lines before it are only counted: no Python work per line for the bulk of a
    server log.
    """
    feed = ex.feed
    find = text.find
    bad = text.find("\ufffd", 0, stop)  # the next U+FFFD (constant time in an ASCII text): only its line may be noise
    pos = 0
    while pos < stop:
        if bad >= 0:
            if bad < pos:
                bad = text.find("\ufffd", pos, stop)
            if bad >= 0 and text.rfind("\n", pos, bad) < 0 and (after := skip_noise(ex, text, pos, stop)) != pos:
                pos = after
                continue
        if ex.quiet():
            m = ex.wanted().search(text, pos, stop)
            if m is None:
                ex.skip(text.count("\n", pos, stop))
                return
            j = text.rfind("\n", pos, m.start())
            if j >= pos:
                ex.skip(text.count("\n", pos, j + 1))
                pos = j + 1
            end = find("\n", pos, stop)
            feed(text[pos:end], interesting=True)  # the search just found its word: not dull
            pos = end + 1
            continue
        end = find("\n", pos, stop)
        feed(text[pos:end])
        pos = end + 1


def skip_noise(ex: Extractor, text: str, pos: int, stop: int) -> int:
    """Count the lines of ``text[pos:stop]`` from ``pos`` on that are not text (:func:`binary_noise`), as
    :meth:`Extractor.feed` would count them one by one, and return where the first other line begins
    (``pos`` when that is the first line, or while something is open that the next line may continue)."""
    if not ex.idle() or ex.holds_a_line():
        return pos
    find = text.find
    count = last = widest = 0
    while pos < stop:
        end = find("\n", pos, stop)
        line = text[pos:end]
        if not binary_noise(line):
            break
        count += 1
        last = len(line)
        if last > widest:
            widest = last
        pos = end + 1
    if count:  # what Extractor._line does for each line it counts
        ex.count_dull(count, last, widest)
    return pos


def extract_stream(stream: BinaryIO, *, year: int | None = None, head_bytes: int = 2_000_000,
                   chunk_bytes: int = 1 << 20) -> Extractor:
    """Run an :class:`Extractor` over a binary stream (a file, stdin) without holding it in memory.

    The first ``head_bytes`` are read ahead to learn the log's line prefixes; after that, chunks
    of ``chunk_bytes``: memory stays bounded by the chunk, the longest line and what was found.
    """
    reader = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="\n")
    ex = Extractor(year=year)
    text = reader.read(head_bytes)
    learn_shapes(ex.shapes, text)
    while True:
        last = text.rfind("\n") + 1
        feed_lines(ex, text, last)
        more = reader.read(chunk_bytes)
        if not more:
            break
        text = text[last:] + more
    ex.feed(text[last:])
    reader.detach()
    ex.finish(last_line(ex, text))
    return ex
