"""Tracebacks in SGLang / vLLM logs: what failed, where, on which ranks, and what to fix.

Input is any log text: journal lines, SGLang rank prefixes (``[2025-05-30 15:02:13 TP3]``,
with ``Scheduler hit an exception: Traceback ...`` mid-line), vLLM process prefixes
(``(VllmWorker rank=2 pid=123)``, ``ERROR ... [core.py:N]`` on every line), docker compose
prefixes, plain stderr, and text pasted into issues (code fences, ``> `` quoting).

Definitions (also in docs/tracebacks.md):

* **Line numbers** are 1-based lines of the input split on ``\\n`` (a ``\\r`` does not
  start a line). A traceback's ``start_line`` is its ``Traceback (most recent call
  last):`` line (or its first frame line when the input began inside it); ``end_line``
  is its last exception/message line, or its last frame when the input was cut.
* **Blocks and chains**: every ``Traceback (most recent call last):`` is one block, in
  input order, so 8 ranks x 2 chained exceptions give 16. When block B follows block A in
  the same stream after "The above exception was the direct cause of the following
  exception:", B has ``chained_from = A.index`` and ``chain = "cause"``; after "During
  handling of the above exception, another exception occurred:" ``chain = "context"``.
  A's exception happened first; B is what Python reported last.
* **truncated**: the block lacks its header (input began inside it) or its exception
  line (input ended, or the lines stopped coming, inside it).
* **Signature**: see :mod:`workbench.tracebacks.diagnose`; ``ExceptionType@hash`` over
  exception types, normalised messages and innermost non-wrapper frames of a chain,
  without ranks, pids, timestamps, addresses, numbers or line numbers.
* **final** is the last block's exception; when that block is cut before its exception
  ``truncated`` is true and ``last_complete`` names the last block that has one.
* **root_cause** is what to fix; it differs from ``final`` when the last error only
  points elsewhere (vLLM's "See root cause above", SGLang's dead-scheduler report,
  "Capture cuda graph failed" wrappers, a worker that died without a traceback).

Public API::

    analyze(text) -> Analysis           # everything below in one pass
    analyze_stream(binary_file) -> Analysis   # the same, a line at a time (memory bounded)
    extract_tracebacks(text) -> list[Traceback]
    compare(a, b) -> Comparison         # two Analyses: same / different / only-in-A / only-in-B
    to_json(analysis) -> dict           # the stable JSON of ``workbench tracebacks --json``
    format_summary(analysis) -> str     # the human summary
"""

from __future__ import annotations

from workbench.tracebacks.diagnose import (
    analysis_of,
    analyze,
    analyze_stream,
    compare,
    normalize_message,
    signature,
)
from workbench.tracebacks.model import (
    Analysis,
    Comparison,
    CppException,
    Failure,
    Final,
    Frame,
    LogEvent,
    RootCause,
    Traceback,
)
from workbench.tracebacks.pointers import is_pointer
from workbench.tracebacks.reader import extract, extract_stream
from workbench.tracebacks.render import comparison_to_json, format_summary, to_json
from workbench.tracebacks.scan import Extractor

__all__ = [
    "Analysis",
    "Comparison",
    "CppException",
    "Extractor",
    "Failure",
    "Final",
    "Frame",
    "LogEvent",
    "RootCause",
    "Traceback",
    "analysis_of",
    "analyze",
    "analyze_stream",
    "compare",
    "comparison_to_json",
    "extract",
    "extract_stream",
    "extract_tracebacks",
    "format_summary",
    "is_pointer",
    "normalize_message",
    "signature",
    "to_json",
]


def extract_tracebacks(text: str | bytes) -> list[Traceback]:
    """Every traceback block in ``text``, in input order."""
    return list(extract(text).tracebacks)
