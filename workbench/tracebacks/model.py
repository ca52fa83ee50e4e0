"""The traceback model: plain frozen dataclasses, no parsing and no rendering here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Chain = Literal["cause", "context"]
EventKind = Literal[
    "xid", "oom_kill", "fatal_signal", "device_assert", "error_line", "compile_error", "nccl_warn", "process_died", "killed"
]


@dataclass(frozen=True)
class Frame:
    """One ``File "...", line N, in func`` entry and the code line under it."""

    file: str
    line: int | None
    function: str
    code: str | None = None


@dataclass(frozen=True)
class Traceback:
    """One ``Traceback (most recent call last):`` block as printed.

    ``start_line``/``end_line`` are 1-based input lines (the header line, or the first
    frame when the window began mid-traceback; the last exception/message line, or the
    last frame line when the block was cut). ``chained_from`` is the index of the block
    printed just before this one in the same chain and ``chain`` how it relates:
    ``"cause"`` for "The above exception was the direct cause of the following
    exception", ``"context"`` for "During handling of the above exception, another
    exception occurred".
    """

    index: int
    rank: str | None
    start_line: int
    end_line: int
    frames: tuple[Frame, ...]
    exception_type: str | None
    message: str | None
    cut_start: bool = False
    cut_end: bool = False
    chained_from: int | None = None
    chain: Chain | None = None
    phase: str = "unknown"
    origin: str = field(default="", compare=False)
    server: str = field(default="|", compare=False)
    lead: str = field(default="", compare=False)  # the record just above the header and the text before "Traceback"
    context: tuple[str, ...] = field(default=(), compare=False)  # the last records printed before it
    # their ranks and levels (their prefixes'), one each
    context_heads: tuple[tuple[str | None, str | None], ...] = field(default=(), compare=False)
    logged: bool = field(default=False, compare=False)  # ``lead`` is a record under the header's own prefix (see Block)

    @property
    def unraisable(self) -> bool:
        """Printed under Python's "Exception ignored in: ..." (in a ``__del__``, a callback, at exit):
        the program went on, so this is not what failed."""
        return "Exception ignored in" in self.lead

    @property
    def truncated(self) -> bool:
        """The window began after the header or ended before the exception line."""
        return self.cut_start or self.cut_end

    @property
    def innermost(self) -> Frame | None:
        return self.frames[-1] if self.frames else None


@dataclass(frozen=True)
class CppException:
    """``terminate called after throwing an instance of 'T'`` + ``what():``: a C++ exception that killed a process."""

    line: int
    end_line: int
    exception_type: str
    message: str
    rank: str | None
    phase: str
    server: str = "|"


@dataclass(frozen=True)
class LogEvent:
    """A log line that matters without a Python traceback: Xid, OOM kill, NCCL WARN, a process death.

    ``error_line`` is an ERROR-level line naming a CUDA error or an out-of-memory (what
    C++ servers such as TensorRT-LLM print instead of a traceback).
    """

    kind: EventKind
    line: int
    text: str
    rank: str | None
    phase: str
    server: str = "|"
    # the lines the same log printed just before (their words: phase evidence when all else is silent)
    context: tuple[str, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Failure:
    """Tracebacks (or C++ exceptions) with one signature: the same failure on several ranks or starts.

    ``exception_type``/``message``/``innermost_frame`` are those of the first
    occurrence's last block (what Python prints last); ``tracebacks`` holds the indices
    of every block of every occurrence, chained blocks included.
    """

    signature: str
    exception_type: str | None
    message: str | None
    innermost_frame: Frame | None
    phase: str
    ranks: tuple[str, ...]
    occurrences: int
    tracebacks: tuple[int, ...]
    first_line: int
    pointer: bool = False
    signature_text: str = ""


@dataclass(frozen=True)
class Final:
    """The exception of the last traceback; when the log is cut inside it, also the last complete one.

    With no traceback, a log that ends inside a record it cut (a window pasted from a longer log) or inside a stack a
    record announced gives one with no exception, ``truncated`` and the root cause's phase and ranks; otherwise the
    failure a record reported is how the log ends: the root cause's record, not truncated."""

    exception_type: str | None
    message: str | None
    innermost_frame: Frame | None
    phase: str
    ranks: tuple[str, ...]
    truncated: bool
    last_complete: tuple[str, str] | None
    line: int


@dataclass(frozen=True)
class RootCause:
    """What to fix: an exception (``kind="exception"``) or a log line (``kind="log_line"``).

    ``exception_type`` is None (and ``message`` empty) when the only traceback was cut before its
    exception line: ``innermost_frame`` and ``phase`` still say where it failed. When an error record
    printed above that traceback (not its own logger.exception record) says what failed, the root is
    that ``log_line``, with the traceback's frame, phase and signature. ``signature`` is the id of its
    failure (None for a log line read alone); ``signature_text`` reads it in one line.
    """

    kind: Literal["exception", "log_line"]
    exception_type: str | None
    message: str
    line: int
    innermost_frame: Frame | None
    phase: str
    ranks: tuple[str, ...]
    signature: str | None = None
    signature_text: str = ""


@dataclass(frozen=True)
class Analysis:
    """Everything :func:`workbench.tracebacks.analyze` found in one log."""

    tracebacks: tuple[Traceback, ...]
    failures: tuple[Failure, ...]
    events: tuple[LogEvent, ...]
    cpp_exceptions: tuple[CppException, ...]
    final: Final | None
    root_cause: RootCause | None
    lines: int


@dataclass(frozen=True)
class Comparison:
    """Failures of two logs side by side, by signature.

    ``different`` pairs failures that share exception type and innermost frame but not
    the signature (same place, other message). ``root_cause`` is "same", "different",
    "only_in_a", "only_in_b" or "neither".
    """

    same: tuple[str, ...]
    different: tuple[tuple[str, str], ...]
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    root_cause: str
