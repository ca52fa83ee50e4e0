"""The stack model the scanner fills: one open block per writer (Python frames, faulthandler
and rich frames, the exception and its message), C++ exceptions (``terminate called`` /
``what():``) and the per-writer stream state that holds them.

Nothing here reads log prefixes or decides phases; :mod:`workbench.tracebacks.scan` drives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench.logformats import PYTEST_FRAME, LogLine
from workbench.tracebacks.model import Chain, Final, Frame, LogEvent
from workbench.tracebacks.patterns import (
    _CARET,
    _CAUSE,
    _CONTEXT,
    _CPP_EXC_LINE,
    _CPP_STOP,
    _EXC,
    _FH_FRAME,
    _FILE,
    _FILE_STRICT,
    _FLAT_PREFIX,
    _HEADER,
    _IPY_CELL,
    _IPY_FRAME,
    _IPY_LINKED_CODE,
    _LOGGING_HEAD,
    _MAX_FOREIGN,
    _MAX_MESSAGE_CHARS,
    _MAX_MESSAGE_LINES,
    _NATIVE_ABORT,
    _NEXT_RECORD,
    _NUM_FRAME,
    _PG_RANK,
    _PROCESS_LINE,
    _PYSPY_FRAME,
    _RICH_CODE,
    _RICH_FRAME,
    _STOP,
    _TERMINATE,
    _WHAT,
    looks_like_exception,
    split_flattened,
)

CUT_DUMP = "crash (the dump's header was cut off)"
SPIED = "the main thread's stack in py-spy's dump"  # a live process's, no exception: a hang a watchdog reported
MAX_FRAMES = 1000  # a runaway recursion keeps both ends of its stack, bounded


@dataclass
class Block:
    index: int
    rank: str | None
    start: int
    header: str | None
    origin: str
    server: str
    phase_hint: str
    cut_start: bool = False
    end: int = 0
    lead: str = ""  # the text before "Traceback" on the header line ("Initialization failed. warmup error: ")
    ready: bool = False  # the server had declared itself ready when the block began
    context: tuple[str, ...] = ()  # the last records printed before the block (outside any traceback)
    context_heads: tuple[tuple[str | None, str | None], ...] = ()  # their ranks and levels (their prefixes'), one each
    faulthandler: bool = False  # a faulthandler dump: frames listed most recent call first
    rich: bool = False  # rich's boxed traceback: "path.py:8 in func" frames and numbered code lines
    frames: list[Frame] = field(default_factory=list)
    exc_type: str | None = None
    message: list[str] = field(default_factory=list)
    chained_from: int | None = None
    chain: Chain | None = None
    foreign: int = 0
    blanks: int = 0
    expect_code: bool = False
    file_indent: int = 0
    cut_message: bool = False  # the log ended inside the exception's message (see cut_in_message)
    # the lead is the error record just above the header under the very same record header (vLLM's "ERROR 01-27
    # 11:03:02 engine.py:366] "): logger.exception's own message, str(e) or repr(e) of the exception the stack ends in
    logged: bool = False
    # an exception line alone whose message was to begin on the next line ("RuntimeError: "): if none came, the line
    # said nothing, and is no failure (see chains.build_tracebacks)
    awaits_message: bool = False
    # the exception line printed right above the block's first frame, its header none ("AssertionError", then '  File
    # ...'): taken as the block's exception when none follows its frames (see exception_first)
    exc_first: tuple[str, list[str]] | None = None


@dataclass
class Cpp:
    line: int
    end: int
    type: str
    rank: str | None
    phase: str
    server: str
    message: list[str] = field(default_factory=list)
    state: int = 0  # 0 waiting for what(), 1 reading its message
    frames: list[str] = field(default_factory=list)  # its numbered native frames' functions, innermost first


@dataclass
class Stream:
    block: Block | None = None
    in_message: bool = False
    last_index: int | None = None
    pending: Chain | None = None
    pending_from: int | None = None
    pending_left: int = 0
    cpp: Cpp | None = None
    # headers printed before any body: processes that write to one stderr print their
    # "Traceback (most recent call last):" lines first and their frames afterwards
    queued: list[tuple[int, str | None]] = field(default_factory=list)
    fatal: tuple[int, str] | None = None  # the last "Fatal Python error: ..." line
    fatal_reach: int = 0  # the last line of the other threads' stacks printed under it (the dump it heads goes on)
    skip_dump: bool = False  # inside the dump of a thread that did not crash
    intro: tuple[int, str] | None = None  # the last line of text seen outside a block
    intro_header: str | None = None  # the record header of ``intro``'s line
    quoting: bool = False  # inside a stack an exception's message quotes (:func:`quoted_stack`)
    idle_at: int = 0  # the line of this writer being read outside a block
    idle_before: int = 0  # the one before it, blank or not

    def next_to(self, line: int, blocks: list[Block]) -> bool:
        """Whether this writer printed nothing between its line ``line`` (outside a block) and the one being read:
        no blank line, no block since (another writer's lines between do not count)."""
        return self.idle_before == line and (self.last_index is None or blocks[self.last_index].end <= line)

    def cut_chain_start(self, blocks: list[Block], last: int) -> int | None:
        """At the end of the log (``last``: its last line): the first line of the traceback whose chain marker ("The
        above exception was the direct cause of the following exception:") came last, the exception it announced never
        printed; or of the traceback right under whose exception line the log ended on the next record's message under
        the same record header (logger.exception's "Error in chat completion stream generator.", its stack cut)."""
        if self.block is not None:
            return None
        if self.pending is not None and self.pending_from is not None:
            return blocks[self.pending_from].start
        if self.last_index is None or self.intro is None or self.intro_header is None or self.intro[0] < last - 1:
            return None
        b = blocks[self.last_index]
        return b.start if b.end == self.intro[0] - 1 and b.header == self.intro_header and \
            _NEXT_RECORD.match(self.intro[1]) and b.exc_type else None


# torch.compile's errors quote the user's frames inside their message ("User Stack (most recent call last):", "(snipped,
# see stack below for prefix)", then File lines; "from user code:", then File lines): where it was compiling, no stack
_QUOTED_STACK_LEAD = re.compile(r"(?:User Stack \(most recent call last\)|from user code):$|"
                                r"\(snipped, see stack below for prefix\)$")


def quoted_stack(stream: Stream, msg: str) -> bool:
    """Whether ``msg``, read outside any block, is a line of a stack an exception's message quotes: its lead line
    (:data:`_QUOTED_STACK_LEAD`), then its File lines and their code lines, up to the first line of other text."""
    text = msg.strip()
    if text.endswith((":", ")")) and _QUOTED_STACK_LEAD.search(text) is not None:
        stream.quoting = True
    elif stream.quoting and text and not (text.startswith('File "') or msg[:1].isspace()):
        stream.quoting = False
    return stream.quoting and bool(text)


def dump_frame(msg: str) -> tuple[str, int | None, str] | None:
    """(file, line, function) of a frame of a thread's dump, faulthandler's or py-spy's, or None."""
    if (m := _FH_FRAME.match(msg)) is not None:
        return m.group(1), int(m.group(2)), m.group(3).strip()
    if msg[:1].isspace() and (m := _PYSPY_FRAME.match(msg)) is not None:
        return m.group(2), int(m.group(3)) if m.group(3) else None, m.group(1)
    return None


def cut_after_chain(final: Final | None, starts: list[int]) -> Final | None:
    """The final exception of a log that ends after the chain marker under its last traceback: the exception
    the marker announced, cut off (truncated, the one above it as ``last_complete``)."""
    if final is None or final.truncated or final.line not in starts:
        return final
    return Final(None, None, None, final.phase, final.ranks, True, (final.exception_type or "", final.message or ""),
                 final.line)


def native_final(frame: LogEvent | None) -> Final | None:
    """The final error of a log whose only failure is a native backtrace (``frame``: its first frame): an error
    whose own lines (its type, its message) came before the frames, so truncated."""
    if frame is None:
        return None
    return Final(None, None, None, frame.phase, (frame.rank,) if frame.rank else (), True, None, frame.line)


def add_frame(block: Block, msg: str, stream: Stream | None = None, line_no: int = 0) -> bool:
    m = _FILE.match(msg)
    if m is None:
        return False
    indent, file, line, func = m.group(1), m.group(2), m.group(3), m.group(4)
    if block.exc_type is not None and not block.frames:
        wrapper_goes_on(block)  # a bare "RayTaskError(X): ray::..." head: the task's own frames follow
    if len(block.frames) >= MAX_FRAMES:  # a runaway recursion: keep both ends, bounded
        del block.frames[MAX_FRAMES // 2]
    if stream is not None and func and " pid=" in func and line and _FLAT_PREFIX.search(func):
        # the frame's tail holds the next records of its process: a traceback pasted without its newlines
        # whose header the window cut off ("..., in generate (APIServer pid=1) ERROR 09-22 07:18:30
        # [serving_chat.py:1133] out = ... File ..."): read the frames and the exception as a flattened one
        add_flattened(stream, block, f'File "{file}", line {line}, in {func}', line_no)
        block.expect_code = False
        return True
    block.frames.append(Frame(file, int(line) if line else None, (func or "?").strip() or "?", None))
    block.file_indent = len(indent)
    block.expect_code = True
    return True


def rich_line(block: Block, msg: str) -> bool:
    """A line of rich's boxed traceback: a frame, a numbered source line (``❱`` marks the
    frame's own line) or the box's bottom edge."""
    fr = _RICH_FRAME.match(msg)
    if fr is not None:
        file, line, func = (fr.group(1), fr.group(2), fr.group(3)) if fr.group(1) else ("<stdin>", fr.group(5), fr.group(4))
        block.frames.append(Frame(file, int(line), func, None))
        block.expect_code = False
        return True
    found = notebook_frame(msg)
    if found is not None:
        take_frame(block, found, msg)
        return True
    code = _RICH_CODE.match(msg) or _IPY_LINKED_CODE.match(msg)
    if code is not None:
        if (code.group(1) or (code.re is _RICH_CODE and code.group(2))) and block.frames:
            last = block.frames[-1]
            text = msg[code.end():].replace("│", " ").strip()
            block.frames[-1] = Frame(last.file, last.line, last.function, text or None)
        return True
    return msg.lstrip().startswith("╰")


def notebook_frame(msg: str) -> tuple[Frame, bool] | None:
    """A frame line of IPython's traceback (see ``_IPY_FRAME``) or of pytest's short one (``PYTEST_FRAME``: the
    statement follows it, indented, and the exception behind its "E" margin), if the line is one; True beside a
    pytest frame, whose statement the next line is (IPython numbers its source lines)."""
    m = _IPY_FRAME.match(msg)
    if m is None:
        if ": in " in msg and (py := PYTEST_FRAME.match(msg, len(msg) - len(msg.lstrip()))) is not None:
            return Frame(py.group(1), int(py.group(2)), py.group(3), None), True
        cell = _IPY_CELL.match(msg) if "Cell In" in msg else None
        if cell is None:
            return None
        line = cell.group(2) or cell.group(3)
        return Frame(cell.group(1), int(line), "<cell>", None), False
    line = m.group(4) or m.group(5) or m["lline"]
    return Frame(m.group(1) or m.group(2) or m.group(3) or m["lpath"], int(line) if line else None, m["func"], None), False


def take_frame(block: Block, found: tuple[Frame, bool], msg: str) -> None:
    """Add a frame :func:`notebook_frame` found on line ``msg`` to ``block`` (a rich one)."""
    frame, statement_follows = found
    block.frames.append(frame)
    block.expect_code = statement_follows
    block.file_indent = len(msg) - len(msg.lstrip())


def foreign(stream: Stream, block: Block) -> bool:
    """A line that is not the open block's: counted, and past ``_MAX_FOREIGN`` the block is closed, cut."""
    block.foreign += 1
    if block.foreign > _MAX_FOREIGN:
        close(stream, cut=True)
    return False


# a raise whose exception line a paste glued to it ("raise AttributeError(AttributeError: 'Qwen2ForCausalLM' object has
# no attribute 'vllm_engine'"): the code, and the exception line after it
_GLUED_RAISE = re.compile(r"(raise ([A-Za-z_][\w.]*)\()\2: (.+)$")


def close(stream: Stream, *, cut: bool) -> None:
    block = stream.block
    if block is None:
        return
    last = block.frames[-1] if block.exc_type is None and block.frames else None
    if (last is not None and last.code and "raise " in last.code
            and (glued := _GLUED_RAISE.match(last.code)) is not None):  # the exception line glued to its raise
        block.frames[-1] = Frame(last.file, last.line, last.function, glued.group(1))
        block.exc_type, block.message, cut = glued.group(2), [glued.group(3).rstrip()], False
    if block.exc_type is None and block.exc_first is not None and block.frames:
        block.exc_type, block.message, cut = block.exc_first[0], list(block.exc_first[1]), False
    if block.exc_type is not None or not cut:
        stream.last_index = block.index
    stream.block = None
    stream.in_message = False


_CARETS_END = re.compile(r"[\^~]{3,}\s*$")


def cut_in_message(blocks: list[Block], last: tuple[int, str] | None) -> None:
    """Mark cut the block whose exception message the log ended in (``last``: its last line that is not blank, and
    that line's number) when that line stops inside a bracket it opened: a record cut mid-command
    ("CalledProcessError: Command '['/usr/bin/gcc', '/tmp/main.c', '-O3', "). And read as cut the log's last block when
    it is a bare Ray head ("RayTaskError(X): ray::Actor.method() (pid=...)") the log ends under on a frame's caret
    line: the remote task's stack that head announces had begun, its frames and exception line cut (type unknown)."""
    if last is not None and blocks and last[0] - blocks[-1].end <= 3 and _CARETS_END.search(last[1]):
        wrapper_goes_on(blocks[-1])
    if last is None or not open_at_end(last[1]):
        return
    for block in blocks:
        if block.end == last[0] and block.exc_type is not None and block.message:
            block.cut_message = True


_SENTENCE_GOES_ON = re.compile(r"[a-z)]\. [A-Z][a-z]")


def open_at_end(text: str) -> bool:
    """The line stops inside a bracket it opened ("Command '['/usr/bin/gcc', '-O3', "); not when, after a bracket its
    writer never closed, one sentence ended, another began and the line ends a sentence ("... max seq len (118000), (6.30
    GiB KV cache is needed, ... (6.11 GiB). Based on the available memory, ... when initializing the engine.")."""
    depth: list[int] = []
    for i, ch in enumerate(text):
        if ch in "([{":
            depth.append(i)
        elif ch in ")]}" and depth:
            depth.pop()
    if not depth:
        return False
    tail = text.rstrip()  # (sentences went on after the bracket: one ended and another began, and the last ended)
    return not (tail.endswith(".") and _SENTENCE_GOES_ON.search(tail, depth[-1]) is not None)


def add_flattened(stream: Stream, block: Block, rest: str, line_no: int) -> None:
    """A traceback whose newlines were lost in a paste: read the frames and the exception from one line."""
    frames, exc_type, message = split_flattened(rest)
    block.frames.extend(frames)
    block.end = line_no
    if exc_type is not None:
        block.exc_type = exc_type
        block.message = [message] if message else []
        stream.in_message = True
        close(stream, cut=False)


def cpp_line(stream: Stream, msg: str, line_no: int) -> bool:
    """Consume a line of the open C++ exception (``what():`` and its message); False hands it on."""
    cpp = stream.cpp
    assert cpp is not None
    if cpp.state == 0:
        m = _WHAT.match(msg)
        if m:
            cpp.message.append(m.group(1).rstrip())
            cpp.state = 1
            cpp.end = line_no
            cpp.rank = cpp.rank or pg_rank(msg)
            return True
        if line_no - cpp.line > 3:
            stream.cpp = None
        return False
    frame = _NUM_FRAME.match(msg)
    if frame is not None:  # a numbered native frame: where it was thrown, not what it says
        symbol = frame.group(1)
        if symbol and "/" not in symbol and len(cpp.frames) < 64:
            parts = symbol.strip().split("::")
            name = parts[-1].strip()
            # a constructor ("ns::Model::Model(...)") is named as Python names one: an object being built
            cpp.frames.append("__init__" if len(parts) > 1 and parts[-2] == name else name)
        cpp.end = line_no
        return True
    if _CPP_STOP.match(msg) or _HEADER in msg or len(cpp.message) >= 10:
        stream.cpp = None
        return msg.startswith(("Exception raised from", "frame #"))
    cpp.message.append(msg.rstrip())
    cpp.end = line_no
    return True


def pg_rank(msg: str) -> str | None:
    """The rank c10d's tag in a native error's message names ("[PG ID 2 PG GUID 3 Rank 1] Process group watchdog
    thread terminated ..."), for a process whose lines carry no rank prefix."""
    pg = _PG_RANK.search(msg) if "Rank " in msg else None
    return "rank" + pg.group(1) if pg else None


def native_abort(msg: str, *, what: bool) -> tuple[str, list[str], int] | None:
    """(type, message lines so far, state for :func:`cpp_line`) of a native error: ``terminate called
    after throwing an instance of 'T'`` (its ``what():`` comes next), a lone ``what():`` or a line
    ``ns::Type: message`` (when ``what``), libc++'s abort message, a Rust panic (its message on the
    next line since Rust 1.73, quoted on the line before), c10's abort handler."""
    m = _TERMINATE.search(msg)
    if m is not None:
        return m.group(1), [], 0
    if "terminate called without an active exception" in msg:  # std::terminate with nothing thrown (a joinable
        # std::thread destroyed, a noexcept function that threw): the process aborts with no what()
        return "std::terminate", ["terminate called without an active exception"], 1
    m = _NATIVE_ABORT.search(msg)
    if m is not None:
        if m.group(1) is not None:
            return m.group(1).strip(), [m.group(2).strip()] if m.group(2) else [], 1
        if m.group(4) is not None:
            return "c10 abort", [m.group(4)], 1
        return "panic", [m.group(3)] if m.group(3) else [], 1
    w = _WHAT.match(msg) if what else None
    if w is not None:
        return "std::exception", [w.group(1)], 1
    # a C++ exception printed as a line of its own (TensorRT-LLM's "[TensorRT-LLM][ERROR]
    # tensorrt_llm::common::TllmException: ..."): its message has begun, its numbered frames come next
    c = _CPP_EXC_LINE.match(msg.strip()) if what and "::" in msg else None
    return (c.group(1), [c.group(2).rstrip()], 1) if c is not None else None


def exception_first(text: str) -> tuple[str, list[str]] | None:
    """(type, message) of an exception line printed right above frames that have no header ("AssertionError", then
    '  File "mamba_mixer2.py", line 963, in conv_ssm_forward'): a shortened traceback that names its exception first
    (a logger's ``repr(e)`` before ``format_tb``, a report that moved the exception up); else None."""
    exc = _EXC.match(text.strip())
    if exc is None or not looks_like_exception(exc):
        return None
    return exc.group(1), [exc.group(2).rstrip()] if exc.group(2) else []


def wrapper_goes_on(block: Block) -> bool:
    """Ray's ``RayTaskError(X): ray::Actor.method() ...`` heads the remote task's own frames and
    the exception line X they end with: one traceback whose lead is the wrapper. True (and the
    block made ready for those frames) when the block's exception line is that wrapper."""
    t = block.exc_type
    if not (t is not None and t.endswith(")") and "(" in t and len(block.message) == 1
            and block.message[0].startswith("ray::")):
        return False
    block.lead = f"{t}: {block.message[0]}"
    block.exc_type, block.message = None, []
    return True


def in_block(stream: Stream, block: Block, parsed: LogLine, msg: str, header: str | None, line_no: int) -> bool:
    """Consume line ``line_no`` if it belongs to the open block; False hands it to the idle state."""
    if block.faulthandler:
        fr = dump_frame(msg)
        if fr is not None:
            block.frames.append(Frame(*fr, None))
            block.end = line_no
            return True
        if not msg.strip():  # a paste that doubled its newlines: the dump goes on after a blank line
            return True
        close(stream, cut=False)
        return False
    if _HEADER in msg:
        if (not block.frames and block.exc_type is None and msg.strip() == _HEADER + ":"
                and header == block.header):
            stream.queued.append((line_no, parsed.rank))
            return True
        close(stream, cut=not stream.in_message)
        return False
    if (block.header is None and header is not None and not block.frames and not stream.in_message
            and msg.lstrip().startswith('File "')):
        block.header = header  # its first frame carries a prefix: the writer (a wrapper logging each line) repeats it
    same = header == block.header or (header is None and not stream.in_message)
    if stream.in_message:
        if not same or not msg.strip() or len(block.message) >= _MAX_MESSAGE_LINES:
            close(stream, cut=False)
            return False
        if msg.lstrip().startswith("File \"") and _FILE_STRICT.match(msg) and wrapper_goes_on(block):
            stream.in_message = False  # Ray's wrapper line: the task's own frames follow
            add_frame(block, msg)
            block.end = line_no
            return True
        if (_CONTEXT in msg or _CAUSE in msg or _PROCESS_LINE.match(msg) or _STOP.search(msg) or _NEXT_RECORD.match(msg)
                or (msg.lstrip().startswith("File \"") and _FILE_STRICT.match(msg))
                or (msg[:1].isdigit() and _LOGGING_HEAD.match(msg))  # the next record of a logged exception line
                or (parsed.level is not None and parsed.time is not None  # (its head read by logformats)
                    and parsed.format in ("pylogging", "raycpp", "journal", "compose"))):
            close(stream, cut=False)
            return False
        # position markers under a line (under Ray's quoted head) are not the message
        if sum(len(x) for x in block.message) < _MAX_MESSAGE_CHARS and not (block.message and _CARET.match(msg)):
            block.message.append(msg.rstrip())
        block.end = line_no
        return True
    # reading frames
    if not same:
        return foreign(stream, block)
    if not msg.strip():
        block.blanks += 1
        if block.blanks > 2:
            close(stream, cut=True)
        return True
    after_blank, block.blanks = block.blanks > 0, 0
    if _CONTEXT in msg or _CAUSE in msg:
        close(stream, cut=True)
        return False
    if block.rich and rich_line(block, msg):
        block.end = line_no
        return True
    stripped = msg.lstrip()
    if stripped.startswith("File \"") and add_frame(block, msg, stream, line_no):
        block.end = line_no
        return True
    if _CARET.match(msg) or stripped.startswith("[Previous line repeated"):
        block.end = line_no
        return True
    indent = len(msg) - len(stripped)
    # a paste's Markdown bold opening glued to the exception line ("**RuntimeError"), at the frames' depth: deeper, a
    # code line's own "**kwargs" unpacking ("    **ServeSubmissionClient(address).get_serve_details()")
    if stripped[:2] == "**" and block.frames and indent <= block.file_indent:
        stripped = stripped[2:]
    # code sits right under its frame, deeper: not after a blank at the frames' depth ("Segfault encountered")
    if block.expect_code and block.frames and not (after_blank and indent <= block.file_indent):
        exc = _EXC.match(stripped) if indent <= block.file_indent else None
        if indent > block.file_indent or exc is None or not looks_like_exception(exc):
            last = block.frames[-1]
            block.frames[-1] = Frame(last.file, last.line, last.function, stripped.rstrip())
            block.expect_code = False
            block.end = line_no
            return True
    exc = _EXC.match(stripped)
    if exc is not None and (block.frames or looks_like_exception(exc)) and (indent == 0 or looks_like_exception(exc)):
        if exc.group(2) is not None or looks_like_exception(exc):
            block.exc_type = exc.group(1)
            block.message = [exc.group(2).rstrip()] if exc.group(2) else []
            block.end = line_no
            block.expect_code = False
            stream.in_message = True
            return True
    return foreign(stream, block)


def join_wrapped(block: Block, msg: str, line_no: int) -> bool:
    """Join a terminal-wrapped tail (line ``line_no``, a line cut at the screen width) onto the prefixed block line it
    continues."""
    if (_HEADER in msg or 'File "' in msg or block.end != line_no - 1 or _STOP.search(msg)
            or _PROCESS_LINE.match(msg) or _CONTEXT in msg or _CAUSE in msg):
        return False
    if block.exc_type is not None and block.message:
        block.message[-1] += msg.rstrip()
    elif block.frames and block.expect_code:
        f = block.frames[-1]
        block.frames[-1] = Frame(f.file, f.line, (f.function + msg.strip()) if f.function != "?" else msg.strip(), f.code)
    elif block.frames and block.frames[-1].code is not None:
        f = block.frames[-1]
        block.frames[-1] = Frame(f.file, f.line, f.function, (f.code or "") + msg.rstrip())
    else:
        return False
    block.end = line_no
    return True
