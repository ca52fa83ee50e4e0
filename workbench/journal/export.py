"""``journalctl -o export`` output into columns, without a Python object per entry.

Why export and not JSON: on systemd 252 ``journalctl -o json`` costs the host 4-8x the
CPU of ``-o cat`` per entry, ``-o export`` about 2.5x (BENCHMARKS.md, journal
retrieval), and export carries every field at full length (no 4 KB ``null``).

The format (https://systemd.io/JOURNAL_EXPORT_FORMATS/): one ``KEY=value`` line per
field, a blank line after each entry; a value that is not printable UTF-8 (ANSI
colours, invalid UTF-8, newlines) is written as ``KEY``, newline, a 64-bit little-endian
length, the raw bytes and a newline.  :func:`parse_export` finds those binary fields
first (their length word is the only place NUL bytes can appear outside a binary value),
swaps each for a ``KEY=\\x01<n>`` placeholder and decodes it with replacement; the rest is
located with numpy (line ends, key prefixes compared as 8-byte words) and returned as
Arrow string arrays that point into the buffer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

__all__ = ["PLACEHOLDER", "parse_export"]

PLACEHOLDER = "\x01"  # starts a binary value's stand-in; never in a text value (not printable)
_KEY = re.compile(rb"[A-Z0-9_]+")
_PAD = 24  # bytes appended so 8-byte key words can be read at any line start
CHUNK = 16 << 20


def _nuls(data: bytes | bytearray, pos: int) -> int:
    """Where the next run of three NUL bytes starts (``find`` of one byte is a memchr)."""
    while True:
        pos = data.find(b"\0", pos)
        if pos < 0 or data[pos:pos + 3] == b"\0\0\0":
            return pos
        pos += 1


def _binary_fields(data: bytes | bytearray) -> tuple[bytes | bytearray, list[bytes]]:
    """Replace each binary field by ``KEY=\\x01<n>``; return the text-only buffer and the raw values."""
    hit = _nuls(data, 0)
    if hit < 0:
        return data, []
    parts: list[bytes | bytearray | memoryview] = []
    values: list[bytes] = []
    view = memoryview(data)
    copied = 0
    while hit >= 0:
        # The length word starts 0-5 bytes before its first run of three NULs (bytes 5-7
        # are NUL for any length under 1 TB; lower bytes may be NUL too).
        for start in range(max(hit - 5, 1), hit + 1):
            if data[start - 1] != 0x0A:
                continue
            key_at = data.rfind(b"\n", 0, start - 1) + 1
            key = bytes(data[key_at:start - 1])
            if not _KEY.fullmatch(key):
                continue
            size = int.from_bytes(data[start:start + 8], "little")
            end = start + 8 + size
            if end >= len(data) or data[end] != 0x0A:
                continue
            parts.append(view[copied:key_at])
            parts.append(key + b"=" + PLACEHOLDER.encode() + str(len(values)).encode() + b"\n")
            values.append(bytes(data[start + 8:end]))
            copied = end + 1
            hit = _nuls(data, copied)
            break
        else:  # NULs that are not a length word (cannot happen in valid export output): skip them
            hit = _nuls(data, hit + 3)
    parts.append(view[copied:])
    return b"".join(parts), values


class _Keys:
    """Finds the lines of the wanted keys among all lines of a chunk.

    Keys of 7+ characters have ``KEY=``'s first 8 bytes as a line's first word: a
    multiplicative hash of that word picks one of 64 buckets, a table says which word
    belongs there, and only the lines that pass are checked further (second word, rest of
    the key).  Shorter keys (``_PID=``, ``UNIT=``) are compared with a mask directly.
    """

    BITS = 6

    def __init__(self, keys: Iterable[str]) -> None:
        self.spec: dict[str, tuple[bytes, int, int, int, int]] = {}
        for key in keys:
            k = key.encode() + b"="
            head = k[:16].ljust(16, b"\0")
            n0, n1 = min(len(k), 8), max(0, min(len(k), 16) - 8)
            m0 = int.from_bytes(b"\xff" * n0 + b"\0" * (8 - n0), "little")
            m1 = int.from_bytes(b"\xff" * n1 + b"\0" * (8 - n1), "little")
            self.spec[key] = (k, int.from_bytes(head[:8], "little") & m0, m0, int.from_bytes(head[8:], "little") & m1, m1)
        self.short = [key for key, (k, *_rest) in self.spec.items() if len(k) < 8]
        firsts = sorted({v0 for key, (k, v0, *_r) in self.spec.items() if len(k) >= 8})
        self.mult = self._multiplier(firsts)
        self.table = np.zeros(1 << self.BITS, np.uint64)
        self.buckets: dict[int, list[str]] = {}
        for key, (k, v0, *_r) in self.spec.items():
            if len(k) >= 8:
                b = self._bucket(v0)
                self.table[b] = v0
                self.buckets.setdefault(b, []).append(key)

    def _bucket(self, word: int) -> int:
        return ((word * self.mult) & 0xFFFFFFFFFFFFFFFF) >> (64 - self.BITS)

    def _multiplier(self, words: list[int]) -> int:
        mult = 0x9E3779B97F4A7C15
        for _ in range(10000):  # a multiplier that gives every first word its own bucket
            self.mult = mult
            if len({self._bucket(w) for w in words}) == len(words):
                return mult
            mult = (mult * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF | 1
        raise ValueError("too many journal fields asked for at once")

    def lines(self, buf: np.ndarray, starts: np.ndarray, w0: np.ndarray, w1: np.ndarray) -> dict[str, np.ndarray]:
        """Per key, the indices (into ``starts``) of its lines, in order."""
        out: dict[str, np.ndarray] = {}
        bucket = (np.multiply(w0, np.uint64(self.mult)) >> np.uint64(64 - self.BITS)).astype(np.uint8)
        cand = np.flatnonzero(self.table[bucket] == w0)
        cb = bucket[cand]
        order = np.argsort(cb, kind="stable")
        counts = np.bincount(cb, minlength=1 << self.BITS)
        ends = np.cumsum(counts)
        for b, keys in self.buckets.items():
            group = cand[order[ends[b] - counts[b]:ends[b]]]
            for key in keys:
                out[key] = self._rest(key, group, buf, starts, w1)
        for key in self.short:
            _, v0, m0, _, _ = self.spec[key]
            out[key] = np.flatnonzero((w0 & np.uint64(m0)) == np.uint64(v0))
        return out

    def _rest(self, key: str, lines: np.ndarray, buf: np.ndarray, starts: np.ndarray, w1: np.ndarray) -> np.ndarray:
        k, _, _, v1, m1 = self.spec[key]
        if m1:
            lines = lines[(w1[lines] & np.uint64(m1)) == np.uint64(v1)]
        for j in range(16, len(k)):  # keys longer than two words: the rest byte by byte
            lines = lines[buf[starts[lines] + j] == k[j]]
        return lines


_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _strings(word: np.ndarray, raw: bytes | bytearray, n: int, rows: np.ndarray, starts: np.ndarray,
             ends: np.ndarray) -> pa.Array:
    """A large_string array of ``n`` rows: row ``rows[i]`` is ``raw[starts[i]:ends[i]]``, others null.

    Built as Arrow string views into ``raw`` (16 bytes per row: the length, then up to 12
    bytes inline, or a 4-byte prefix, buffer 0 and the offset), then cast (one copy).
    """
    lengths = ends - starts
    same = _all_same(word, starts, lengths)
    if same is not None:  # one process's stream: every row the same value, no per-row copy
        index = np.zeros(n, np.int32)
        valid = np.zeros(n, bool)
        valid[rows] = True
        values = pa.array([bytes(raw[same[0]:same[0] + same[1]]).decode("utf-8", "replace")], pa.large_string())
        return pa.DictionaryArray.from_arrays(pa.array(index, mask=~valid), values).cast(pa.large_string())
    views = np.zeros((n, 4), np.uint32)
    views[rows, 0] = lengths
    w0 = word[starts] & _MASKS[np.minimum(lengths, 8)]
    views[rows, 1] = w0 & np.uint64(0xFFFFFFFF)
    inline = lengths <= 12
    tail = (word[starts + 8] & _MASKS[np.clip(lengths - 8, 0, 8)]) & np.uint64(0xFFFFFFFF)
    views[rows, 2] = np.where(inline, w0 >> np.uint64(32), 0)
    views[rows, 3] = np.where(inline, tail, starts)
    valid = np.zeros(n, bool)
    valid[rows] = True
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.Array.from_buffers(pa.string_view(), n, [validity, pa.py_buffer(views), pa.py_buffer(raw)])
    return arr.cast(pa.large_string())


def _all_same(word: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[int, int] | None:
    """(start, length) of the value when every row holds the same value of at most 64 bytes, else None."""
    if not len(lengths) or lengths[0] > 64 or (lengths != lengths[0]).any():
        return None
    size = int(lengths[0])
    for j in range(0, size, 8):
        mask = _MASKS[min(size - j, 8)]
        words = word[starts + j] & mask
        if (words != words[0]).any():
            return None
    return int(starts[0]), size


def _integers(buf: np.ndarray, n: int, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """An int64 array of ``n`` rows from decimal text (null where absent or not a number)."""
    lengths = ends - starts
    value = np.zeros(len(rows), np.int64)
    ok = (lengths > 0) & (lengths <= 18)
    for j in range(int(lengths.max(initial=0))):
        live = lengths > j
        digit = buf[starts[live] + j].astype(np.int64) - 48
        ok[live] &= (digit >= 0) & (digit <= 9)
        value[live] = value[live] * 10 + digit
    out = np.zeros(n, np.int64)
    valid = np.zeros(n, bool)
    out[rows[ok]] = value[ok]
    valid[rows[ok]] = True
    return pa.array(out, mask=~valid)


def parse_export(data: bytes | bytearray, keys: Iterable[str],
                 numbers: Iterable[str] = ()) -> tuple[int, dict[str, pa.ChunkedArray], list[bytes]]:
    """Entries of export output: (count, {key: column, null where absent}, binary values).

    Columns of ``keys`` are large_string, those of ``numbers`` int64 (decimal text).
    A value that was binary reads ``\\x01<n>``: ``values[n]`` holds its bytes.  A key
    repeated within one entry keeps its last value.  An unterminated last entry is read
    as if it were terminated.  Works in pieces of about :data:`CHUNK` bytes, so the
    intermediate arrays stay small (and their memory is reused rather than faulted in).
    """
    numbers = list(dict.fromkeys(numbers))
    keys = list(dict.fromkeys([*keys, *numbers]))
    text, values = _binary_fields(data)
    if text and not text.endswith(b"\n\n"):
        text = bytes(text) + (b"\n" if text.endswith(b"\n") else b"\n\n")
    table = _Keys(keys)
    parts: list[tuple[int, dict[str, pa.Array]]] = []
    lo, size = 0, len(text)
    while lo < size:
        while lo < size and text[lo] == 0x0A:  # stray blank lines between entries
            lo += 1
        if lo >= size:
            break
        hi = text.find(b"\n\n", min(lo + CHUNK, size) - 1)
        hi = size if hi < 0 else hi + 2
        parts.append(_chunk(text, lo, hi, table, numbers))
        lo = hi
    n = sum(p[0] for p in parts)
    cols = {k: pa.chunked_array([p[1][k] for p in parts], pa.int64() if k in numbers else pa.large_string())
            for k in keys}
    return n, cols, values


def _chunk(text: bytes | bytearray, lo: int, hi: int, keys: _Keys, numbers: list[str]) -> tuple[int, dict[str, pa.Array]]:
    """The entries in ``text[lo:hi]`` (whole entries, the last one ending in a blank line)."""
    if hi + _PAD > len(text):  # near the end: a padded copy so 8-byte reads stay inside
        raw: bytes | bytearray = bytes(text[lo:hi]) + b"\0" * _PAD
        base, lo, hi = 0, 0, hi - lo
    else:
        raw, base = text, lo
    buf = np.frombuffer(raw, np.uint8)
    ends = np.flatnonzero(buf[lo:hi] == 0x0A) + lo
    starts = np.empty_like(ends)
    starts[0] = lo
    starts[1:] = ends[:-1] + 1
    blank = starts == ends
    entry = np.cumsum(blank) - blank  # a blank line closing an entry still belongs to it
    n = int(blank.sum())
    word = np.ndarray((len(raw) - 7,), dtype="<u8", buffer=raw, strides=(1,))
    w0 = word[starts]
    w1 = word[starts + 8]
    cols: dict[str, pa.Array] = {}
    for key, lines in keys.lines(buf, starts, w0, w1).items():
        k = keys.spec[key][0]
        if not len(lines):
            cols[key] = pa.nulls(n, pa.int64() if key in numbers else pa.large_string())
            continue
        rows = entry[lines]
        if len(rows) > 1 and (np.diff(rows) == 0).any():  # repeated field: keep the last value
            last = np.append(np.diff(rows) != 0, True)
            rows, lines = rows[last], lines[last]
        if key in numbers:
            cols[key] = _integers(buf, n, rows, starts[lines] + len(k), ends[lines])
        else:
            cols[key] = _strings(word, raw, n, rows, starts[lines] + len(k), ends[lines])
    del base
    return n, cols
