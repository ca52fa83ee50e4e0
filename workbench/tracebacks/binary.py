"""Lines that are not text: random bytes, a core dump or a compressed file read as a log.

Read through the general path, such a line costs the scanner about 50 µs (every prefix, cleaning
and word search runs over a few hundred characters of junk); :func:`binary_noise` says in a few
µs that it may be counted as a dull line instead.
"""

from __future__ import annotations

from workbench.logformats import any_of, any_of_bytes, rare_parts
from workbench.tracebacks.patterns import _NEEDLES

# the words a line that reports a failure holds: a traceback's header and frames, an exception's
# name, a native abort, every event needle; searched for by their rare-lettered ends (any_part_of:
# a line it does not match holds none of them, one it matches takes the general path)
_FAILURE_PARTS = rare_parts(("Traceback", 'File "', "Error", "Exception", "what():", "terminate", "Fatal", "panicked",
                             "Fault", "Failure", "Failed", "Timeout", "Abort", "Cancelled", *_NEEDLES))
_FAILURE_WORDS = any_of(_FAILURE_PARTS)
_FAILURE_WORDS_BYTES = any_of_bytes(_FAILURE_PARTS)
_FFFD = "\ufffd".encode()


def binary_noise(line: str) -> bool:
    """A line that is not text: at least a quarter of its characters are U+FFFD, bytes that were
    not UTF-8 (no log line in any encoding a server writes comes near), and it holds none of the
    words a failure report holds. While nothing is open (or what is open went quiet), the scanner counts
    it as a dull line whatever the timeline knows and however it is indented: its prefixes and other
    words, had it any, are not believed, and it is no later line's context.

    The ``\\ufffd`` test comes first: a line without one (every line of every log we hold) costs
    one test, constant time for an ASCII line."""
    return "\ufffd" in line and line.count("\ufffd") * 4 >= len(line) and _FAILURE_WORDS.search(line) is None


def binary_noise_bytes(raw: bytes) -> bool:
    """:func:`binary_noise` of the line whose UTF-8 is ``raw``, mostly without decoding it: a U+FFFD
    is three bytes, so ``len(raw) - 2 * count`` is at least the line's length in characters and a
    quarter of that bound is enough; only a line near the bound is decoded to count exactly."""
    count = raw.count(_FFFD)
    if not count:
        return False
    if count * 4 < len(raw) - 2 * count and count * 4 < len(raw.decode("utf-8", "surrogatepass")):
        return False
    return _FAILURE_WORDS_BYTES.search(raw) is None
