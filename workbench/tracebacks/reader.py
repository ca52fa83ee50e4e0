"""Feed a whole text or a binary stream to an :class:`~workbench.tracebacks.scan.Extractor`.

While nothing is open, one regex search over the text finds the next line that can matter and
the dull lines before it are only counted; a stream is read in bounded chunks, so memory stays
bounded by the chunk, the longest line and what was found.
"""

from __future__ import annotations

import io
from typing import BinaryIO

from workbench.tracebacks.binary import _FFFD, binary_noise_bytes
from workbench.tracebacks.prefixes import learn_shapes
from workbench.tracebacks.scan import Extractor


def extract(text: str | bytes, *, year: int | None = None) -> Extractor:
    """Run an :class:`Extractor` over a whole text (lines split on ``\\n``)."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    ex = Extractor(year=year)
    learn_shapes(ex.shapes, text)
    data = text.encode("utf-8", "surrogatepass")
    last = data.rfind(b"\n") + 1
    feed_lines(ex, data, last)
    ex.feed(_text(data[last:]))
    ex.finish(*tail_lines(ex, data))
    return ex


def _text(line: bytes) -> str:
    return line.decode("utf-8", "surrogatepass")


_BLANK = b" \t\n\r\x0b\x0c"  # what bytes.rstrip strips


def _text_end(data: bytes, end: int) -> int:
    """Where the text of ``data[:end]`` ends, trailing blanks left out (``bytes.rstrip`` without copying ``data``)."""
    while end and data[end - 1] in _BLANK:
        end -= 1
    return end


NEAR_BYTES = 65536


def tail_lines(ex: Extractor, data: bytes) -> tuple[tuple[int, str] | None, str | None, str]:
    """The last line of ``data`` that is not blank and its number, once ``ex`` has been fed all of ``data``; the
    line that is not blank just before it, when ``data`` still holds it (None where there is none); and the text
    before the last line, its last :data:`NEAR_BYTES` (the words the log used: :func:`~.cut.ends_cut`)."""
    end = _text_end(data, len(data))
    if not end:
        return None, None, ""
    start = data.rfind(b"\n", 0, end) + 1
    last = (ex.line_no - data.count(b"\n", start), _text(data[start:end]))
    before = _text_end(data, start)
    near = data[max(0, before - NEAR_BYTES):before].decode("utf-8", "replace")
    return last, (_text(data[data.rfind(b"\n", 0, before) + 1:before]) if before else None), near


def feed_lines(ex: Extractor, data: bytes, stop: int) -> None:
    """Feed the lines of ``data[:stop]`` (UTF-8; ``stop`` just after a newline, or 0).

    While nothing is open, one search over the bytes (an RE2 automaton: :meth:`Extractor.wanted`)
    finds the next line that can matter and the dull lines before it are only counted: no Python
    work per line for the bulk of a server log.  Only the lines fed are decoded, and a skipped line just
    above a traceback's header (:meth:`Extractor.skip`).
    """
    feed = ex.feed
    find = data.find
    bad = find(_FFFD, 0, stop)  # the next U+FFFD (one memchr-like pass): only its line may be noise
    pos = 0
    while pos < stop:
        if bad >= 0:
            if bad < pos:
                bad = find(_FFFD, pos, stop)
            if bad >= 0 and data.rfind(b"\n", pos, bad) < 0 and (after := skip_noise(ex, data, pos, stop)) != pos:
                pos = after
                continue
        if ex.quiet():
            m = ex.wanted().search(data, pos, stop)
            if m is None:
                ex.skip(data.count(b"\n", pos, stop))
                return
            j = data.rfind(b"\n", pos, m.start())
            end = find(b"\n", m.end(), stop)
            if j >= pos:
                # before a traceback's header, the last line skipped may be logger.exception's message
                said = _text(data[max(data.rfind(b"\n", pos, j) + 1, pos):j]) if find(b"Traceback (", j, end) >= 0 else None
                ex.skip(data.count(b"\n", pos, j + 1), said)
                pos = j + 1
            feed(_text(data[pos:end]), interesting=True)  # the search just found its word: not dull
            pos = end + 1
            continue
        end = find(b"\n", pos, stop)
        feed(_text(data[pos:end]))
        pos = end + 1


def skip_noise(ex: Extractor, data: bytes, pos: int, stop: int) -> int:
    """Count the lines of ``data[pos:stop]`` from ``pos`` on that are not text (:func:`binary_noise_bytes`), as
    :meth:`Extractor.feed` would count them one by one, and return where the first other line begins
    (``pos`` when that is the first line, or while something is open that the next line may continue)."""
    if not ex.idle() or ex.holds_a_line():
        return pos
    find = data.find
    count = widest = 0
    raw = b""
    while pos < stop:
        end = find(b"\n", pos, stop)
        line = data[pos:end]
        if not binary_noise_bytes(line):
            break
        count += 1
        raw = line
        if len(raw) > widest:  # a line of no more bytes than the widest's characters is no wider
            widest = max(widest, len(_text(raw)))
        pos = end + 1
    if count:  # what Extractor._line does for each line it counts
        ex.count_dull(count, len(_text(raw)), widest)
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
    data = text.encode("utf-8", "surrogatepass")
    del text
    while True:
        last = data.rfind(b"\n") + 1
        feed_lines(ex, data, last)
        more = reader.read(chunk_bytes)
        if not more:
            break
        data = data[last:] + more.encode("utf-8", "surrogatepass")
    ex.feed(_text(data[last:]))
    reader.detach()
    ex.finish(*tail_lines(ex, data))
    return ex
