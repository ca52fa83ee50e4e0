"""Find every Python traceback, C++ exception and telling log line in a log, in one pass.

Each input line is parsed once (:mod:`workbench.logformats`); the writer's identity (compose service, journal pid,
vLLM process and pid, torch ``[rankN]:``) picks a stream, and each stream runs its own small state machine (idle ->
frames -> message), so tracebacks that several processes print at once, line by line or block by block, come apart
again. SGLang prints its rank only on a traceback's first line; its ranks share a stream and are separated block by
block. The work per line is bounded, so the whole pass is linear in the input.

The parts it leans on, one concern each: :mod:`~.prefixes` (JSON lines and learned prefixes), :mod:`~.stack` (blocks,
frames, C++ exceptions, per-writer streams, a line read into an open block), :mod:`~.events` (telling log lines),
:mod:`~.plain` (failures said in plain words), :mod:`~.chains` (chains and their phase); :mod:`~.reader` feeds it.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from workbench.logformats import LineShapes, LogLine, _needs_clean, _parse
from workbench.phases import PhaseTracker, _is_failure, known_phase
from workbench.tracebacks.binary import binary_noise
from workbench.tracebacks.chains import build_tracebacks, native_phase
from workbench.tracebacks.cut import ends_cut, logged_record
from workbench.tracebacks.events import (
    backtrace_head,
    cause_above,
    cut_record,
    first_error,
    follow,
    log_event,
    process_header,
    quiet_cuda_error,
)
from workbench.tracebacks.model import CppException, Frame, LogEvent, Traceback
from workbench.tracebacks.native import KEPT, native_frame, native_root
from workbench.tracebacks.patterns import (
    _BARE_EXC_NAME,
    _CARET,
    _CAUSE,
    _CONTEXT,
    _EXC,
    _EXC_REPR,
    _FATAL,
    _FENCE,
    _FH_FRAME,
    _FH_HEADER,
    _FILE_CUT,
    _FILE_STRICT,
    _FRAME_TAIL,
    _HEADER,
    _INTERESTING,
    _IPY_HEADER,
    _MIDLINE_PROC,
    _NATIVE_SYMBOL,
    _PLAIN,
    _PYSPY_THREAD,
    _STRONG,
    _WEAK,
    INTERESTING_BYTES,
    STRONG_BYTES,
    cut_header,
    join_cut_frame,
    looks_like_exception,
    midline_ranks,
    no_cr,
    own_record,
    quoted_exception,
    repr_message,
)
from workbench.tracebacks.plain import PlainFailure
from workbench.tracebacks.prefixes import (
    after_label,
    indented_prefixed,
    indented_record,
    json_log,
    reparse,
    unglue,
    unquote,
    unquote_message,
)
from workbench.tracebacks.stack import (
    CUT_DUMP,
    SPIED,
    Block,
    Cpp,
    Stream,
    add_flattened,
    add_frame,
    close,
    cpp_line,
    cut_in_message,
    dump_frame,
    exception_first,
    in_block,
    join_wrapped,
    native_abort,
    notebook_frame,
    pg_rank,
    quoted_stack,
    take_frame,
)

_QUIET_LINES = 200  # an open block whose writer printed nothing for this many lines no longer holds the fast path


class Extractor:
    """Incremental extractor: ``feed`` lines in order, then ``finish``.

    After ``finish`` the results are in ``tracebacks``, ``cpp_exceptions``, ``events`` and ``chain_cut_after``;
    ``trackers`` holds one phase tracker per server, fed the same lines: its key is ``"host|service"`` (journal host
    and identifier, or compose service), ``"|"`` for lines with neither.
    """

    def __init__(self, *, year: int | None = None) -> None:
        self.year = year
        self.trackers: dict[str, PhaseTracker] = {}
        self.line_no, self.ends_cut = 0, False  # ends_cut: the log's last line was cut inside its record (finish)
        self._streams: dict[tuple[str | None, ...], Stream] = {}
        self._blocks: list[Block] = []
        self._cpp: list[Cpp] = []
        self.events: list[LogEvent] = []
        self.other_threads: list[tuple[int, list[str]]] = []  # faulthandler's other threads: (line, innermost first)
        self._first_error: LogEvent | None = None
        self._plain = PlainFailure()  # the first failure a line states with no level, else a warning (see finish)
        self._quiet: LogEvent | None = None  # the previous line, when it names a CUDA error without a level
        self.native_frames: list[LogEvent] = []  # native backtraces' frames, the first KEPT (see finish)
        self._recent, self._recent_heads = deque[str](maxlen=6), deque[tuple[str | None, str | None]](maxlen=6)  # (rank, level)
        self.tracebacks: list[Traceback] = []
        self.cpp_exceptions: list[CppException] = []
        self._tracker, self._server = PhaseTracker(year=year), "|"
        self._last_header: tuple[Block, Stream] | None = None
        self._touched: Block | None = None  # the block that took the previous input line
        self._prev_len, self._widest, self.shapes = 0, 0, LineShapes()
        self._busy, self._busy_last = set[int](), 0  # streams with a block, a C++ exception or a chain pending; their last line
        self._held: str | None = None  # a frame line waiting for the tail the terminal wrapped
        self._stream: Stream | None = None
        # the block that reads frames and took the last line, with the exact prefix its writer repeats
        # on every line ("" for unprefixed lines): the next lines of that shape take the short path
        self._fast: tuple[Block, PhaseTracker, str, bool] | None = None
        self._last: tuple[LogLine, str | None] | None = None  # the last line _feed parsed, and its header
        self._skipped: tuple[int, str] = (0, "")  # the last line read as dull, and its number

    # -- input -------------------------------------------------------------------
    def feed(self, line: str, *, interesting: bool = False) -> None:
        """Take the next line. ``interesting``: the caller found in it a word of the search that :meth:`quiet` lines
        are read with (``_STRONG`` once the timeline knows the phase, else ``_INTERESTING``): not dull, not searched again."""
        if (fast := self._fast) is not None and self._held is None:
            prefix = fast[2]
            if prefix:
                if line.startswith(prefix) and line[len(prefix):len(prefix) + 1] in (" ", "\t") \
                        and self._frame_fast(line, no_cr(line)[len(prefix):]):
                    return
            elif line[:1] in " \t" and self._frame_fast(line, no_cr(line)):
                return
        held = self._held
        if held is not None:  # a frame line cut by the terminal before ", in f" or in its path: is this its tail?
            self._held = None
            tail = line.strip()
            if _FRAME_TAIL.match(tail):
                self._line(join_cut_frame(held, tail))
                self.skip(1)
                return
            self._line(held)
        if 'File "' in line and ", in " not in line and _FILE_CUT.search(line) is not None:
            self._held = line
            return
        self._line(line, interesting)

    def _line(self, line: str, interesting: bool = False) -> None:
        if self.idle() and (binary_noise(line) or (
                not line[:1].isspace() and self._tracker.flavor is not None and not interesting and self._dull(line))):
            # nothing open (or quiet a while), and a line naming nothing we read (most of a server log) or no text: count it
            n = len(line)
            self.count_dull(1, n, n)
            self._skipped = (self.line_no, line)
            return
        self._feed(line)
        stream = self._stream
        self._fast = None
        if stream is not None:
            block = stream.block
            if block is not None or stream.cpp is not None or stream.pending is not None or stream.queued \
                    or stream.skip_dump:
                self._busy.add(id(stream))
                self._busy_last = self.line_no
                if (block is not None and stream.cpp is None and not stream.skip_dump and not stream.in_message
                        and not block.faulthandler and not block.rich and block.end == self.line_no):
                    self._fast = self._short_path(line, block, stream)
            else:
                self._busy.discard(id(stream))

    def _short_path(self, line: str, block: Block, stream: Stream) -> tuple[Block, PhaseTracker, str, bool] | None:
        """The short path for the lines that continue ``block`` (:meth:`_frame_fast`), if any: indented lines of the
        plain stream, or lines that repeat this line's vLLM prefix exactly."""
        if self._streams.get(_PLAIN) is stream and self._server == "|" and block.header is None:
            return block, self._tracker, "", False
        last = self._last
        if last is None:
            return None
        (parsed, header), base = last, no_cr(line)
        msg = parsed.message
        if (parsed.format == "vllm" and header is not None and header == block.header and msg[:1] in (" ", "\t")
                and len(base) > len(msg) and base.endswith(msg)):
            # a prefixed writer's block takes the terminal-wrapped tail of its line (see _feed)
            return block, self._tracker, base[: len(base) - len(msg)], self._streams.get(_PLAIN) is not stream
        return None

    def _frame_fast(self, line: str, msg: str) -> bool:
        """A line that continues the open block of the previous line's writer (a frame, its code, a caret line), with
        no prefix or the very prefix that writer repeats, read without the general path: the prefix says nothing new,
        the timeline reads nothing in an indented message. False when it needs the general path (nothing changed)."""
        assert self._fast is not None
        block, tracker, _prefix, touch = self._fast
        stripped = msg.lstrip(" \t")
        if (not stripped or (stripped[0] in ">`~[|+" and not stripped.startswith("[Previous line repeated"))
                or "\x1b" in line or "\r" in msg or _needs_clean(line) or _HEADER in msg or _CONTEXT in msg or _CAUSE in msg
                or (self.shapes and ((stripped[0].isdigit() and (indented_record(msg) or self.shapes.strip(msg) is not None))
                                     or (stripped[0] in "EWIDC" and indented_prefixed(msg))))  # an indented record
                or (stripped[0] == "(" and "pid=" in stripped[:64])):  # an indented process prefix: another writer's record
            return False
        if (tracker.failure is None and _is_failure(msg)) or (
                tracker.init_failed is None and not tracker.ready and ("failed to " in msg or "nitialization failed" in msg)):
            return False
        if stripped.startswith('File "'):
            if ", in " not in msg:  # perhaps cut by the terminal: the general path holds it
                return False
            add_frame(block, msg)
        elif _CARET.match(msg) or stripped.startswith("[Previous line repeated"):
            pass  # as the general path: a caret line under a frame is not its code
        elif block.expect_code and block.frames:
            indent = len(msg) - len(stripped)
            if indent <= block.file_indent:
                exc = _EXC.match(stripped)
                if exc is not None and looks_like_exception(exc):
                    return False
            last = block.frames[-1]
            block.frames[-1] = Frame(last.file, last.line, last.function, stripped.rstrip())
            block.expect_code = False
        else:
            return False
        self.line_no += 1
        tracker.line_no = self.line_no
        n = len(line)
        self._prev_len = n
        if n > self._widest:
            self._widest = n
        self._touched = block if touch else None
        block.blanks = 0
        block.end = self.line_no
        self._busy_last = self.line_no
        return True

    def idle(self) -> bool:
        """No writer has a block, a C++ exception or a chain open, or none took a line for a while."""
        return not self._busy or self._busy_last < self.line_no - _QUIET_LINES

    def quiet(self) -> bool:
        """Nothing is open that the next lines could continue (or what is open went quiet)."""
        return self.idle() and self._tracker.flavor is not None and self._held is None

    @property
    def last_record(self) -> LogLine | None:
        """The log's last line as the parser read it (frame lines the short path took aside)."""
        return self._last[0] if self._last is not None else None

    def holds_a_line(self) -> bool:
        """A frame line the terminal cut waits for its tail, the next line."""
        return self._held is not None

    def wanted(self) -> Any:
        """The search (over UTF-8 bytes) that finds the next line a :meth:`quiet` extractor must read (once the
        timeline knows the phase, batch and request lines cannot move it)."""
        return STRONG_BYTES if self._tracker.phase != "unknown" else INTERESTING_BYTES

    def count_dull(self, count: int, last: int, widest: int) -> None:
        """Count ``count`` lines read as nothing (dull, or not text): the last one ``last`` characters
        long, the widest ``widest``; each is as a line no block took, and no later line's context."""
        self.line_no += count
        self._prev_len = last
        self._widest = max(self._widest, widest)
        self._touched = None

    def skip(self, lines: int, last: str | None = None) -> None:
        """Count ``lines`` dull lines without reading them (see :func:`_feed_lines`); ``last``, the last one's text,
        is kept for a traceback header that may follow it (logger.exception's message: :func:`logged_record`)."""
        if lines:
            self.line_no += lines
            self._skipped = (self.line_no, last or "")
            self._prev_len = 0
            self._touched = None

    def _dull(self, line: str) -> bool:
        """True when the line names nothing the scanner reads, nor anything the timeline needs now."""
        m = _INTERESTING.search(line)
        return m is None or (m.group(0) in _WEAK and self._tracker.phase != "unknown" and _STRONG.search(line) is None)

    def _feed(self, line: str) -> None:
        self.line_no += 1
        self._stream = None
        if line and line[0] in " \t>E":
            line = unquote(line)
        glued = None
        if line[:2] == '{"' and ('"log":"' in line or '"message":"' in line or '"msg":"' in line):
            line = json_log(line)
        elif line[:1] == "`" or "%|" in line:
            line, glued = unglue(line)
        parsed, origin, header = glued or _parse(line)
        msg0 = parsed.message = unquote_message(parsed.message) if parsed.format != "plain" or parsed.time else parsed.message
        if msg0 and (msg0[0] not in " \t" or (self.shapes and indented_prefixed(msg0))):
            rest = self.shapes.strip(msg0) if self.shapes else None
            if rest is None and ('File "' in msg0 or ": in " in msg0) and self.shapes.learn(msg0, outermost=not any(origin) and parsed.format == "plain"):
                rest = self.shapes.strip(msg0)
            if rest is not None:
                parsed, origin, header = reparse(parsed, origin, header, rest)
        server = f"{parsed.host or ''}|{parsed.service or ''}" if (parsed.host or parsed.service) else "|"
        tracker = self.trackers.get(server)
        if tracker is None:
            tracker = self.trackers[server] = PhaseTracker(year=self.year)
        self._last = (parsed, header)
        tracker.feed(parsed, line_no=self.line_no)
        self._tracker, self._server = tracker, server
        msg = parsed.message
        if (msg.startswith(("```", "~~~")) or msg[:1].isspace()) and _FENCE.match(msg):
            msg = ""
        prev_len, self._prev_len = self._prev_len, len(line)
        widest = self._widest
        self._widest = max(widest, len(line))
        touched, self._touched = self._touched, None
        # a terminal wraps at its width: the cut line is as long as the longest line so far
        if (touched is not None and header is None and parsed.format == "plain" and prev_len >= 60 and prev_len >= widest
                and origin == _PLAIN and msg and not msg[0].isspace() and join_wrapped(touched, msg, self.line_no)):
            self._touched = touched
            return
        stream = self._streams.get(origin)
        if stream is None:
            stream = self._streams[origin] = Stream()
        self._stream = stream
        if stream.skip_dump:
            fr = dump_frame(msg)
            if fr is not None:
                self.other_threads[-1][1].append(fr[2])
                stream.fatal_reach = self.line_no
                return
            if not msg.strip():  # a paste that doubled its newlines: a blank line between the thread's frames
                return
            stream.skip_dump = False
        if stream.cpp is not None and cpp_line(stream, msg, self.line_no):
            return
        if stream.block is not None and in_block(stream, stream.block, parsed, msg, header, self.line_no):
            if stream.block is not None and stream.block.end == self.line_no and origin != _PLAIN:
                self._touched = stream.block
            return
        self._idle(stream, origin, parsed, msg, header)

    def finish(self, last: tuple[int, str] | None = None, before: str | None = None, near: str = "") -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self._line(held)
        if not (self.events or self._blocks or self._cpp):  # nothing else told of a failure: the first ERROR line
            # read (Python's "ERROR:name:message"; a known server's dull lines are not), else the log's ``last`` line (a
            # process's header, or an error record cut right after its own header), a native backtrace of three frames or
            # more cut above the window (a process that crashed in native code), or a failure stated in plain words
            first = (self._first_error or process_header(last, self._tracker.phase, self._server, self._recent)
                     or cut_record(last, self._tracker.phase, self._server, self._recent)
                     or self.native_backtrace() or self._plain.best)
            self.events.extend([first] if first is not None else [])
        self.chain_cut_after = [n for s in self._streams.values() if (n := s.cut_chain_start(self._blocks, self.line_no)) is not None]
        for origin, stream in self._streams.items():
            if stream.block is not None:
                close(stream, cut=not stream.in_message)
            stream.cpp = None
            for start, qrank in stream.queued:  # headers whose frames never came
                b = Block(len(self._blocks), qrank, start, None, "|".join(o or "" for o in origin), self._server,
                           "unknown", end=start)
                self._blocks.append(b)
            stream.queued.clear()
        cut_in_message(self._blocks, last)
        self.ends_cut = ends_cut(last, before, near)
        self.tracebacks = build_tracebacks(self._blocks)
        self.cpp_exceptions = [CppException(c.line, c.end, c.type, "\n".join(c.message).strip(), c.rank, native_phase(c),
                                            c.server) for c in self._cpp]

    def native_backtrace(self) -> LogEvent | None:
        """The first frame of the log's native backtrace (three frames or more, :data:`_NATIVE_SYMBOL`), if any: a
        process that crashed in native code, its report's own lines above the window or not read as a failure."""
        return native_root(self.native_frames)

    # -- states ------------------------------------------------------------------
    def _idle(self, stream: Stream, origin: tuple[str | None, ...], parsed: LogLine, msg: str, header: str | None) -> None:
        stream.idle_before, stream.idle_at = stream.idle_at, self.line_no
        if quoted_stack(stream, msg):  # torch.compile's user frames, quoted inside its exception's message
            return
        pos = msg.find(_HEADER)
        if pos < 0 and "Tra" in msg:  # the header cut at the end of the line (cut_header)
            pos = cut_header(msg)
        if pos >= 0:
            self._start(stream, origin, parsed, msg, header, pos)
            return
        if not msg.strip():
            return
        prev, stream.intro = stream.intro, (self.line_no, msg[:200])
        stream.intro_header = header if parsed.level in ("ERROR", "CRITICAL") else None
        if prev is not None and "0x" in msg and not (self.events and self.events[-1].line == prev[0]) and (
                head := backtrace_head(prev, msg, self.line_no, parsed.rank, self._tracker.phase, self._server)):
            self.events.append(head)  # the line a native backtrace ("1  0x... f(...) + 78") follows reports its error
        self._recent.append(msg)  # a record outside any traceback: the next failure line's context
        self._recent_heads.append((parsed.rank, parsed.level))
        if stream.pending is not None:
            stream.pending_left -= 1
            if stream.pending_left <= 0:
                stream.pending = None
        if _CONTEXT in msg or _CAUSE in msg:
            if stream.last_index is not None:
                stream.pending = "cause" if _CAUSE in msg else "context"
                stream.pending_from, stream.pending_left = stream.last_index, 6
            return
        if ("File \"" in msg or '", line ' in msg) and _FILE_STRICT.match(msg):
            orphan = self._orphan_header(prev[0] if prev is not None else 0)
            if orphan is not None:  # "Traceback ..." lost the prefix its frames carry
                block, old_stream = orphan
                old_stream.block = None
                old_stream.in_message = False
                stream.block = block
                block.rank = block.rank or parsed.rank
                block.header = header if parsed.location is not None and parsed.format == "vllm" else None
            elif stream.queued:
                start, rank = stream.queued.pop(0)
                block = self._new_block(stream, origin, parsed, header, rank=rank)
                block.start = start
            else:
                block = self._new_block(stream, origin, parsed, header, cut_start=True)
                block.exc_first = exception_first(prev[1]) if prev is not None and stream.next_to(prev[0], self._blocks) else None
            add_frame(block, msg, stream, self.line_no)
            block.end = self.line_no
            return
        if "(most recent call first)" in msg:
            fh = _FH_HEADER.match(msg)
            if fh is not None:
                self._dump(stream, origin, parsed, header, fh.group(1))
                return
        if '): "' in msg and (spy := _PYSPY_THREAD.match(msg)) is not None:  # py-spy's: a live process, no crash
            self._dump(stream, origin, parsed, header, "py-spy" if spy.group(1) == "MainThread" else "Thread")
            return
        if " in " in msg and (msg[:1] in "[/F" or ".py:" in msg) and (found := notebook_frame(msg)) is not None:
            block = self._new_block(stream, origin, parsed, header, cut_start=True)
            block.rich = True  # IPython's "path in f(...)" frames and numbered code lines, as rich's (pytest's: code)
            take_frame(block, found, msg)
            return
        if msg[:1].isspace() and "File \"" in msg and _FH_FRAME.match(msg):
            # a faulthandler dump whose header lines were cut off: its frames in "line N in f" form
            self._dump(stream, origin, parsed, header, "Current thread")
            dump = stream.block
            if dump is not None:
                dump.cut_start = True
                dump.message = [CUT_DUMP]
                in_block(stream, dump, parsed, msg, header, self.line_no)
            return
        if "Fatal Python error" in msg:
            fatal = _FATAL.match(msg)
            if fatal is not None:
                stream.fatal = (self.line_no, fatal.group(1).strip())
        if ("terminate called" in msg or "what():" in msg or "uncaught exception of" in msg or "panicked at" in msg
                or "caught in c10" in msg or "::" in msg):
            abort = native_abort(msg, what=stream.cpp is None)
            if abort is not None:  # "terminate called ..." / "what():" / "ns::Type: ..." / libc++'s, Rust's, c10's report
                stream.cpp = Cpp(self.line_no, self.line_no, abort[0], parsed.rank or pg_rank(msg), self._tracker.phase,
                                 self._server, abort[1], abort[2])
                self._cpp.append(stream.cpp)
                return
        if ((msg[:1].isalpha() or msg[:1] in "`(*-[" or "\uff1a" in msg[:24] or (msg[:1].isdigit() and " - " in msg[:50])
             # (a record's message on a line of its own, one space in: " KeyError: 'x'", or deeper: a paste kept its indent)
             or msg[:2].isupper() or (msg[:1] == " " and msg.lstrip()[:1].isupper()))
                and (parsed.level not in ("INFO", "DEBUG") or parsed.format == "pylogging") and self._bare(stream, origin, parsed, msg, header)):
            return
        self._event(parsed, msg)

    def _bare(self, stream: Stream, origin: tuple[str | None, ...], parsed: LogLine, msg: str, header: str | None) -> bool:
        """An exception line with no frame before it (the window began after them, or the tool printed only the
        line): a block of its own, cut at the start."""
        text = (after_label(msg) or msg).strip()  # the line, or what follows its "【BUG】：" label or "(APIServer) " tag
        m = _EXC.match(text)
        if m is not None and m.group(2) is not None and _BARE_EXC_NAME.search(m.group(1).split("(", 1)[0]):
            # (an empty message after the colon: it begins on the next line, as multiprocessing's "RuntimeError: " over
            # its indented "An attempt has been made to start a new process before the ...")
            exc_type, message, closed, awaits = m.group(1), m.group(2).rstrip(), False, not m.group(2)
        else:
            # quoted in prose, not in a log record (a WARNING naming the error it may cause)
            r = _EXC_REPR.match(text) or (quoted_exception(text, self._recent[-2] if len(self._recent) > 1 else "") if parsed.level is None else None)
            if r is None:
                return False
            closed = r.group(0).endswith("`")  # a quote closed on its line ("`KeyError: 'x.weight'`"): the whole message
            exc_type, message, awaits = r.group(1), r.group(3).rstrip() if closed else repr_message(r), False
        block = self._new_block(stream, origin, parsed, header, cut_start=True)
        block.exc_type = exc_type
        block.message, block.awaits_message = ([] if awaits else [message]), awaits
        if stream.pending is not None and stream.pending_from is not None:
            block.chained_from, block.chain = stream.pending_from, stream.pending
            stream.pending = None
        if message.startswith("ray::"):
            # Ray's "RayTaskError(X): ray::Actor.method() ..." heads the task's frames and their exception line, which replaces it
            block.lead = text
            return True
        stream.in_message = not closed
        return True

    def _dump(self, stream: Stream, origin: tuple[str | None, ...], parsed: LogLine, header: str | None, which: str) -> None:
        """faulthandler's "Current thread 0x... (most recent call first):": the crashed thread's stack."""
        if which == "Thread":  # another thread's stack: not where it crashed, but it says what the process did
            stream.skip_dump = True
            stream.fatal_reach = self.line_no
            self.other_threads = [*self.other_threads[-63:], (self.line_no, [])]
            return
        block = self._new_block(stream, origin, parsed, header, cut_start=which == "py-spy")
        block.faulthandler = True
        if which == "py-spy":  # where the main thread was, with no exception (a hang a watchdog reported, or none)
            block.lead = SPIED
            return
        fatal = stream.fatal
        # the fatal line heads the dump when it came just before, or just before the other threads' stacks (all it has)
        if fatal is not None and self.line_no - max(fatal[0], stream.fatal_reach) <= 8:
            block.start = fatal[0]
        block.exc_type = "Fatal Python error"
        block.message = [fatal[1] if fatal is not None else "crash"]
        stream.fatal = None

    def _event(self, parsed: LogLine, msg: str) -> None:
        event = log_event(parsed, msg, self.line_no, self._tracker.phase, self._server, self._recent)
        quiet, self._quiet = self._quiet, None
        if event is not None:
            if (cause := cause_above(event, quiet, self._first_error, self.events, self.line_no, self._plain.stated)) is not None:
                self.events.append(cause)  # what it failed of, printed just above it without a level
            self.events.append(event)
            return
        self._quiet = quiet_cuda_error(parsed, msg, self.line_no, self._tracker.phase, self._server)
        if self.events:  # the step a line just below the latest events names
            follow(self.events, parsed, msg, self.line_no)
        if ("0x" in msg or "raised from" in msg or "#" in msg[:12]) and _NATIVE_SYMBOL.match(msg.strip()):
            if len(self.native_frames) < KEPT:
                self.native_frames.append(native_frame(self.line_no, msg, parsed.rank, self._tracker.phase,
                                                       self._server, self._recent, self._recent_heads))
        elif msg.strip() and (first := first_error(self._first_error, parsed, msg, self.line_no, self._tracker.phase,
                                                   self._server, self._recent)):
            self._first_error = first  # the last resort (see finish): a log's first error line, whatever it says
        elif not self.events and msg.strip():  # (read only while no event was: see finish)
            self._plain.read(parsed, msg, self.line_no, self._tracker.phase, self._server, self._recent)

    def _start(self, stream: Stream, origin: tuple[str | None, ...], parsed: LogLine, msg: str, header: str | None, pos: int) -> None:
        rank = parsed.rank
        if rank is None and pos > 0:
            found = midline_ranks(msg, pos)
            if found and found[-1].strip():
                rank = found[-1].strip()
            else:
                m = _MIDLINE_PROC.search(msg, max(0, pos - 80), pos)
                if m and (m.group(2) or m.group(3)):
                    rank = "rank" + m.group(3) if m.group(3) else m.group(2).replace("_", " ")
        block = self._new_block(stream, origin, parsed, header, rank=rank)
        block.lead, block.logged = own_record(msg[:pos], header)
        block.rich = "╭" in block.lead or _IPY_HEADER.match(block.lead) is not None
        if stream.intro is not None and self.line_no - stream.intro[0] <= 2 and self._skipped[0] < stream.intro[0]:
            # "Error executing method 'load_model'." / "EngineCore failed to start." just above
            block.lead = stream.intro[1] + " " + block.lead
            block.logged = header is not None and stream.intro_header == header and stream.intro[0] == self.line_no - 1
        elif self._skipped[0] == self.line_no - 1 and header and not block.lead and (
                said := logged_record(self._skipped[1], header)):
            block.lead, block.logged = said, True  # logger.exception's message, a line read as dull
        self._last_header = (block, stream)
        if stream.pending is not None and stream.pending_from is not None:
            block.chained_from, block.chain = stream.pending_from, stream.pending
        stream.pending = None
        rest = msg[pos + len(_HEADER):].lstrip(":")
        if 'File "' in rest:  # the newlines were lost in a paste
            if pos > 0 and _HEADER not in msg[:pos]:
                self._event(parsed, msg)
            nxt = rest.find(_HEADER)
            add_flattened(stream, block, rest if nxt < 0 else rest[:nxt], self.line_no)
            if nxt >= 0:
                self._start(stream, origin, parsed, rest, header, nxt)

    def _orphan_header(self, seen: int) -> tuple[Block, Stream] | None:
        # "Traceback ..." with no frame yet just above, or with only other writers' lines between (``seen``: the last
        # line this line's writer gave outside a block): its frames lost the prefix it carries
        if (last := self._last_header) is None:
            return None
        block, stream = last
        near = block.start == self.line_no - 1 or (seen <= block.start == block.end and self.line_no - block.start <= 8)
        return last if stream.block is block and not block.frames and block.exc_type is None and near else None

    def _new_block(self, stream: Stream, origin: tuple[str | None, ...], parsed: LogLine, header: str | None,
                   *, rank: str | None = None, cut_start: bool = False) -> Block:
        if stream.block is not None:
            close(stream, cut=not stream.in_message)
        repeat = header if parsed.location is not None and parsed.format == "vllm" else None
        block = Block(index=len(self._blocks), rank=rank if rank is not None else parsed.rank, start=self.line_no, header=repeat,
                      origin="|".join(o or "" for o in origin), server=self._server, phase_hint=known_phase(self._tracker, self.trackers),
                      cut_start=cut_start, end=self.line_no, ready=self._tracker.ready, context=tuple(self._recent)[-4:],
                      context_heads=tuple(self._recent_heads)[-4:])
        self._blocks.append(block)
        stream.block, stream.in_message = block, False
        return block
