"""What a traceback cut before its exception line failed with, told by the records printed just above it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import NamedTuple

from workbench.code_phases import STEPS
from workbench.logformats import _parse, parse_line
from workbench.phases import PhaseTracker, model_forward, phase_from_frames
from workbench.tracebacks.model import Final, Frame, LogEvent, RootCause, Traceback
from workbench.tracebacks.patterns import (
    _FH_FRAME,
    _NATIVE_SYMBOL,
    _NEEDLES,
    _NUM_FRAME,
    FIXED_LINES,
    RAISED_NAME,
    cut_error_record,
    level_word,
)
from workbench.tracebacks.prefixes import unquote
from workbench.tracebacks.stack import CUT_DUMP, open_at_end

# the record a logger printed just before the traceback it attaches (Python's logger.exception("...")):
# an error report in its own words, unlike a wrapper's "hit an exception:" that only announces the stack
_REPORT = re.compile(r"\berror\b|\bfail", re.I)
# a line of a stack that more of it must follow: a frame's path whose quote never closed ('  File "/root/verl/trai'),
# a caret line (the exception line comes after it), a header ("Traceback (most recent call last):", CANN's
# "TraceBack", c10's "Exception raised from X at file:line" short of its "(most recent call first):")
_STACK_GOES_ON = re.compile(r'\s*(?:File "[^"]*|[\^~]+|Trace[Bb]ack(?: \(most recent call (?:last|first)\):?)?'
                            r"|Exception raised from \S+ at \S+)$")
# a record's head and nothing after it, cut inside its time ("ERROR 08-01" of "ERROR 08-01 12:42:13 [file.py:1] ...")
_CUT_HEAD = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?: \d\d-\d\d(?: [\d:.]*)?)?"
                       r"|[IWEF]\d{4} [\d:.]+ +\d+ [\w.-]+(?::\d*)?")  # (glog's, short of its "]": "E1204 10:45:22.1 7 x.cpp:85")
# (a word: not "inner_exception"; not the kind of error after a colon that says what it was: "...): local protection error")
_ANNOUNCE_ONLY = re.compile(r"^(?!.*: [a-z][a-z ]{0,40} error\W*$).*\b(?:exception|error|traceback)[\s:.!-]*$", re.I | re.S)
# logger.exception(e) of a KeyError writes str(e), the missing key in quotes and nothing else
_KEY_ONLY = re.compile(r"""(['"])[^'"\s]+\1""")
# Ray's wrapper over a remote task's stack, as stack.wrapper_goes_on leaves it in the stack's lead
_RAY_HEAD = re.compile(r"(\S+\(\S+\)): (ray::.+)", re.S)
# a word that says something failed (not a record that only happened to come just before the stack: "NCCL INFO ...")
# (or a library's error code: "NIXL_ERR_BACKEND", "ACL_ERROR_RT_DEVICE_MEM_ERROR")
_FAILURE_WORD = re.compile(r"\b(?:exception|error|errored|fail(?:ed|ure|s)?|traceback)\b|(?-i:\b[A-Z]+_ERR(?:OR)?_[A-Z_]+\b)",
                           re.I)
_ANNOUNCES = re.compile(r"because of an error raised|raised in (?:its )?creation task|failed to start|Error executing metho")
# logger.exception(repr(e)) as vLLM v0's engine loop writes it ("AssertionError()", "ValueError('...')"): the type
_LOGGED_REPR = re.compile(rf"({RAISED_NAME})\((.*)\)")


def _reported(lead: str, *, logged: bool = False) -> str:
    """What a traceback cut before its exception line failed with, in the words of the error record
    printed just above it (logger.exception's message), or '' when that record only announces it.
    ``logged``: the record is the very record the traceback belongs to (same header, at error level):
    its words are the exception's, whatever they say."""
    text = lead.strip()
    announces = _ANNOUNCE_ONLY.search(text) or _ANNOUNCES.search(text)  # "Error executing method X." only names the call
    quoted = text[:1] in "'\"" and text[-1:] == text[:1]  # one quoted string: a KeyError's key, or a phrase quoted
    return text[:400] if (_REPORT.search(text) or _KEY_ONLY.fullmatch(text) or (logged and not quoted)) and not announces else ""


def logged_record(line: str, header: str) -> str | None:
    """The message of ``line`` when it is an error record under exactly ``header`` (the record header of the traceback
    header that follows it): what logger.exception wrote before the stack, else None."""
    parsed, _origin, own = _parse(line)
    return parsed.message.strip() or None if own == header and parsed.level in ("ERROR", "CRITICAL") else None


def _one_quoted(text: str) -> bool:
    """``text`` is one quoted phrase ("'see below'"), not words that begin and end with quoted names."""
    return len(text) > 1 and text[:1] in "'\"" and text[-1:] == text[:1] and text[0] not in text[1:-1]


class CutReport(NamedTuple):
    exception_type: str | None  # None when unknown
    message: str
    # the words came from an earlier error record, not from the traceback's own (a worker's error line above
    # a start's stack that only waited for it): that record is the cause, with its rank (None: none printed)
    record: bool = False
    rank: str | None = None
    # the words only announce the stack ("Scheduler hit an exception:", "Method Warmup encountered an error."): the
    # failure stays the stack's exception, cut, with those words as all that is known of it
    announced: bool = False


def cut_report(tb: Traceback) -> CutReport:
    """The exception type and message of a traceback cut before its exception line: the record just above
    it, else the earliest error-level record of the few printed just before it that reports a failure (a
    launcher's "PRTE ERROR: Bad parameter ...", a worker's error before a start's stack that waited for it),
    else one that only announces the stack, else the stack's own record however little it says. A record logged
    under the traceback's own header (logger.exception(e) writes ``str(e)`` then the stack, each line under the same
    header) is the exception's message; ``repr(e)`` there, its type too."""
    if tb.logged and (r := _LOGGED_REPR.fullmatch(tb.lead.strip())) is not None:
        return CutReport(r.group(1), r.group(2).strip("'\""))
    own = _reported(tb.lead, logged=tb.logged)
    if own:
        return CutReport(None, own)
    errors = [(c, rank) for c, (rank, level) in zip(tb.context, tb.context_heads, strict=True)
              if level_word(c, 48) in ("ERROR", "[E]", "CRITICAL") or level in ("ERROR", "CRITICAL")]
    for c, rank in errors:  # the earliest: the first error of a cascade
        if said := _reported(c):
            return CutReport(None, said, record=True, rank=rank)
    # nothing but a record announcing the stack ("Engine process failed to start. See stack trace for the root
    # cause."): with the stack's exception cut off, its words are all that says what failed
    for c, rank in reversed(errors):  # (not one naming only the call that raised: "Error executing method X.")
        if _REPORT.search(c) and not _ANNOUNCE_ONLY.search(c.strip()) and "Error executing metho" not in c:
            # (the failure stays the stack's exception, of unknown type: vLLM's "EngineCore failed to start." over it)
            return CutReport(None, c.strip()[:400], rank=rank, announced=True)
    lead = tb.lead.strip().strip("`").strip()  # (a paste's Markdown quote left on its first line)
    if lead and (tb.logged or _FAILURE_WORD.search(lead) or _RAY_HEAD.fullmatch(lead)) and not _one_quoted(lead):
        # the stack's own record, though it only announces it ("EngineCore encountered a fatal error.", "Scheduler hit
        # an exception:" on the header's line, TGI's "Method Warmup encountered an error." just above, Ray's head over
        # the remote task's frames: "RayTaskError(RuntimeError): ray::Runner.run() (pid=...)", the task's type unknown);
        # not one quoted phrase (prose a logger wrote, no key)
        return CutReport(None, lead[:400], announced=True)
    return CutReport(None, "")


def start_cut_in_roots_step(final: Final, root: RootCause, tracebacks: Sequence[Traceback]) -> bool:
    """The last block is a start's stack cut before its exception, its frames naming no step (vLLM's
    "EngineCore failed to start." over run_engine_core), after a root cause that failed in a start-up step (a
    worker that died while warming up): that start failed in the root's step, which the final shares."""
    last = tracebacks[-1] if tracebacks else None
    return (final.truncated and final.exception_type is None and final.phase == "startup_other" and root.phase in STEPS
            and root.line < final.line and last is not None and last.start_line == final.line
            and phase_from_frames((f.file, f.function) for f in last.frames) is None)


# innermost frames of a stack that only waits for work done elsewhere: Ray's driver in ``ray.get``, a
# ``concurrent.futures`` result, a thread's join
_WAITING_FRAMES = {
    ("ray/_private/worker.py", "get"), ("ray/_private/worker.py", "get_objects"),
    ("ray/_private/client_mode_hook.py", "wrapper"), ("ray/_private/auto_init_hook.py", "auto_init_wrapper"),
    ("concurrent/futures/_base.py", "result"), ("concurrent/futures/_base.py", "__get_result"),
    ("threading.py", "join"), ("threading.py", "wait"), ("threading.py", "_wait_for_tstate_lock"),
}


# a server's own launcher: its console script (``/usr/local/bin/vllm``, line 8, in <module>) or its CLI's
# command, the frames a stack that ended the launching process starts with
_LAUNCHER = re.compile(r"(?:^|/)bin/(?:vllm|sglang|trtllm-serve|lmdeploy|text-generation-server|aphrodite)(?:-\w+)?$|"
                       r"vllm/entrypoints/cli/|sglang/launch_server\.py$")


def own_block(root: RootCause, tracebacks: Sequence[Traceback]) -> Traceback | None:
    """The traceback a root cause of kind ``exception`` was read from (it starts on the root's line), else None."""
    return next((t for t in tracebacks if t.start_line == root.line), None) if root.kind == "exception" else None


def last_resort_phase(root: RootCause, tracebacks: Sequence[Traceback], trackers: Iterable[PhaseTracker]) -> str | None:
    """The phase of a root cause nothing else placed: ``startup_other`` when it came while a server was starting
    (:func:`failed_starting`); ``serving`` when its stack runs a model's own forward (:func:`~workbench.phases.model_forward`:
    start-up runs one only inside a step that would have been named); else None."""
    if failed_starting(root, tracebacks, trackers):
        return "startup_other"
    own = own_block(root, tracebacks)  # a line's stack: the tracebacks printed from its line to 12 lines on
    stacks = [own] if own is not None else [t for t in tracebacks if 0 <= t.start_line - root.line <= 12]
    return "serving" if any(model_forward((f.file, f.function) for f in t.frames) for t in stacks) else None


def failed_starting(root: RootCause, tracebacks: Sequence[Traceback], trackers: Iterable[PhaseTracker]) -> bool:
    """A root cause whose phase nothing told came while a server was starting: some server in the log said its start
    failed (before it was ready) near the root's line; or the root's stack, cut before its exception line, starts in a
    server's launcher and no server in the log was ready (the launching process ended while it was starting the
    server: an engineer reads start-up)."""
    servers = list(trackers)
    if any(t.init_failed is not None and abs(t.init_failed - root.line) <= 400 for t in servers):
        return True
    tb = own_block(root, tracebacks)
    if tb is None or tb.exception_type is not None or not tb.frames or any(t.ready for t in servers):
        return False
    files = [f.file.replace("\\", "/") for f in tb.frames]
    return _LAUNCHER.search(files[0]) is not None and not any("/bench" in f for f in files)  # not a benchmark client


def continued_rank(root: RootCause, tracebacks: Sequence[Traceback]) -> RootCause:
    """A root block cut at both ends with no rank, whose stack goes on in the very next block under a rank's prefix
    (the window began inside a wrapped line: its first lines lost the prefix the rest keep): that rank's."""
    own = own_block(root, tracebacks)
    if own is None or root.ranks or not own.cut_start or own.exception_type is not None:
        return root
    nxt = next((t for t in tracebacks if 0 < t.start_line - own.end_line <= 1 and t.cut_start and t.rank), None)
    return replace(root, ranks=(nxt.rank,)) if nxt is not None and nxt.rank else root


def waits(frame: Frame | None) -> bool:
    return frame is not None and any(frame.function == fn and frame.file.replace("\\", "/").endswith(path)
                                     for path, fn in _WAITING_FRAMES)


def threads_phase(line: int, threads: Sequence[tuple[int, list[str]]]) -> str:
    """Where a crashed process was, from the other threads of its faulthandler dump (the crashed
    thread's own stack cut off or garbled): the one phase their stacks name, else ``unknown``."""
    named = (phase_from_frames(("", f) for f in reversed(frames)) for at, frames in threads if -20 <= at - line <= 200)
    phases = {p for p in named if p is not None}
    return phases.pop() if len(phases) == 1 else "unknown"


def threads_root(threads: Sequence[tuple[int, list[str]]]) -> RootCause | None:
    """The root cause of a log whose only failure is faulthandler's stacks of threads (no "Fatal Python error", no
    "Current thread"): a crash or a hang watchdog's dump whose header was cut off (SGLang's scheduler watchdog dumps
    every thread, one stuck in a collective), where the threads' frames say the process was; None without frames."""
    if not any(frames for _at, frames in threads):
        return None
    at = threads[0][0]
    return RootCause("exception", None, CUT_DUMP, at, None, threads_phase(at, threads), (), None, CUT_DUMP)


def typeless_dump(root: RootCause | None, final: Final | None,
                  events: Sequence[LogEvent]) -> tuple[RootCause | None, Final | None]:
    """A faulthandler dump (its "Current thread" header there or cut off) with no "Fatal Python error" line anywhere
    in the log: its type is not in the window, so it is reported as none, cut, as a traceback cut before its exception
    line is (the scanner still reads the block as faulthandler's, for the precedence and the other threads' phase).
    With that line, the dump's root is the line, as a crash reported without a dump is ("Fatal Python error:
    Segmentation fault", a log line: no exception was raised), its stack still giving the frame and the phase."""
    fatal = "Fatal Python error"  # the type the scanner gives every faulthandler dump, found in its line or not
    if root is None or root.exception_type != fatal:
        return root, final
    if any(e.kind == "fatal_signal" and fatal in e.text for e in events):
        if root.message in (CUT_DUMP, "crash"):  # (the line is another process's, or its words were not read)
            return root, final
        said = f"{fatal}: {root.message}"
        if final is not None and final.line == root.line:
            final = replace(final, exception_type=None, message=said)
        return replace(root, kind="log_line", exception_type=None, message=said), final
    if final is not None and final.line == root.line:
        final = replace(final, exception_type=None, truncated=True)
    return replace(root, exception_type=None), final


_ANNOUNCING_END = frozenset(",:/=-(")


# the head of a frame Open MPI's handler numbers after the host and pid ("[c3f2d94d2f68:00045] [ 8] /lib/x.so(f+0x84)
# [0x7efc]"), and the outermost frames a whole backtrace ends on
_MPI_FRAME_HEAD = re.compile(r"\[[\w.-]+:\d+\] \[ ?\d+\] \S|"
                             r"\d+# (?:0x[0-9A-Fa-f]+ in )?\S")  # (the second: boost's stacktrace, Triton's handler)
_OUTERMOST = re.compile(r"\b_{0,2}(?:_start|__libc_start_main|__libc_start_call_main|clone3?|start_thread)\b")
# the mark a native unwinder prints below a stack's entry ("File "<unknown>", line 0, in 0xffffffffffffffff")
_UNWIND_END = re.compile(r"0x[fF]{16}")


def native_entry(function: str) -> bool:
    """The function is where a native stack begins: a process's or a thread's entry, or the unwinder's end mark."""
    return _UNWIND_END.fullmatch(function) is not None or _OUTERMOST.fullmatch(function) is not None


# the number UCX puts before each frame of its backtrace (" 6  /x/libucp.so.0(+0x8e935) [0x7fbe]")
_FRAME_NUMBER = re.compile(r"^\d+\s+(?=/)")
# the outermost frame of a whole faulthandler dump: the main thread's module, a Python thread's bootstrap
_FH_OUTERMOST = frozenset(("<module>", "_bootstrap"))


def _in_native_backtrace(msg: str) -> bool:
    """The line (no blank at its ends) is a frame of a native backtrace other than its outermost -- a numbered one also
    when cut in its name ("3       0x7fd9a3d3e594 tensorrt_llm::plugi"): the backtrace goes on after it."""
    bare = _FRAME_NUMBER.sub("", msg, count=1)
    return (_NUM_FRAME.match(msg) is not None or _MPI_FRAME_HEAD.match(msg) is not None
            or _NATIVE_SYMBOL.match(bare) is not None or _RUST_FRAME.match(msg) is not None) \
        and not _OUTERMOST.search(msg)


# a frame of a Rust backtrace (std's "  4: core::ptr::drop_in_place<...>", with RUST_BACKTRACE=full "   6:     0x564a0f7cade8
# - std::panicking::begin_panic_handler::{{closure}}::hd5f53"), and of backtrace-rs' in TVM's ("  12: _dl_open"):
# an address and a symbol, a path of names, or one bare symbol -- not a sentence a number labels (srun's " 0: Error")
_RUST_FRAME = re.compile(r"\d+: +(?:0x[0-9a-fA-F]+ - \S.*|\S*::\S.*|[A-Za-z_][\w.$]*)$")


def ends_cut(last: tuple[int, str] | None, before: str | None = None, near: str = "") -> bool:
    """Whether the log's last line (not blank) was cut inside its record, as a window pasted from a longer log often
    is: a prefix with no message (glog's head short of its "]" too), an error record cut inside its first word, a
    stack's line that more of it must follow (:data:`_STACK_GOES_ON`, a native or Rust frame short of the outermost),
    torch's CUDA OOM message short of its end, a bracket, a double quote or a single-quoted value left open, a last
    character that announces more (``,``, ``:``, ``/``, ``=``, ``-``, ``(``; not a rule line made of one of them) or a
    last word no sentence ends on ("exits with") -- not on an indented source line, whose brackets are its code's; or
    the start of the record just ``before`` it again, short of its end (a repeated record cut: "mlx5: host_u"); or a
    last word that the text ``near`` it (before it) never uses whole but begins a longer word of (:func:`cut_word`)."""
    if last is None:
        return False
    parsed = parse_line(last[1])
    msg = (unquote(parsed.message) if parsed.message[:1] == "E" else parsed.message).rstrip()  # (a line of pytest's
    if not msg:  # report: behind its margin)
        return True
    if cut_error_record(parsed.level, msg):
        return True  # an error record cut inside its first word ("[core.py:825] Ru")
    if (fh := _FH_FRAME.match(msg)) is not None and fh.group(3).strip() not in _FH_OUTERMOST:
        return True  # the log ends inside a faulthandler dump, short of the thread's outermost frame
    if msg.endswith(" 0x"):
        return True  # a hex number cut before its digits (an address of a frame: "@            0x")
    if _STACK_GOES_ON.match(msg) or _REPORT_HEAD.search(msg):
        return True  # a stack's line that more of it must follow, indented or not; a report's head, its body never shown
    if "CUDA out of memory. T" in msg and not msg.endswith((")", "PYTORCH_CUDA_ALLOC_CONF")):
        return True  # torch's message ends in its docs' link (its reserved total, or the variable, in older ones)
    if _in_native_backtrace(msg.lstrip()):
        return True  # the log ends inside a native backtrace, short of its outermost frame
    if msg[0].isspace():  # a source line (a traceback's, or one a warning quotes): its brackets are the code's
        return False
    if before is not None and len(msg) >= 6 and (prev := parse_line(before).message.rstrip()).startswith(msg) \
            and len(prev) > len(msg):
        return True
    if (msg[-1] in _ANNOUNCING_END and msg.strip(msg[-1])) or msg.count('"') % 2 or _CUT_HEAD.fullmatch(msg):
        return True  # (a record's head cut in its time: "ERROR 08-01")
    if len(msg) >= 8 and any(f.startswith(msg) and len(msg) < len(f) - 1 for f in FIXED_LINES):
        return True  # (a last character short is only its full stop, which some versions leave out)
    if _ends_in_phrase(msg):
        return True  # a failure's fixed words cut short ("Watchdog caught collective operati")
    if _open_single_quote(msg) or _DANGLING.search(msg):
        return True  # a quoted value left open ("model='Qwen3.6"), a sentence cut after a word that needs one more
    return open_at_end(msg) or cut_word(msg, near)


# the head of a report whose body always follows it: faulthandler's (the threads' stacks), uvicorn's (the traceback of
# the ASGI app), CANN's "EE9999: Inner Error!" (its TraceBack and the device's error)
_REPORT_HEAD = re.compile(r"(?:^|\s)Fatal Python error: [A-Za-z][A-Za-z ]*$|\bException in ASGI application$|"
                          r"\bEE9999: Inner Error!?$")
# a last word a sentence cannot end on ("Worker unexpectedly exits with", "failed to load the")
_DANGLING = re.compile(r"(?<![\w'-])(?:a|an|the|with|of|from|and|for|by|into|than|because|via|its|their|whose|is|are|was|were)$")


def _open_single_quote(msg: str) -> bool:
    """A single-quoted value opened and never closed (a repr cut: "for url 'http://host/v1/complet"): a quote after a
    blank or a mark that opens (``=``, ``(``, ``[``, ``{``, ``:``, ``,``) and before a character, with no quote after it
    that no word character follows (a straight or a right single quote); one inside a word ("can't") is neither."""
    inside = False
    for m in _QUOTE.finditer(msg):
        if not inside and m.group(1) is not None:
            inside = True
        elif inside and m.group(2) is not None:
            inside = False
    return inside


# an opening quote (group 1) or a closing one (group 2)
_QUOTE = re.compile(r"(?:^|(?<=[\s=(\[{:,]))(')(?=\S)|(?<=\S)(['\u2019])(?!\w)")


# short words that end a whole sentence and begin longer ones ("already in use", "see the log")
_WHOLE_WORDS = frozenset({"a", "i", "an", "as", "at", "be", "by", "do", "in", "is", "it", "no", "of", "on", "or", "so",
                          "to", "up", "all", "and", "are", "can", "for", "get", "log", "new", "not", "now", "one", "out",
                          "run", "set", "the", "use", "was", "yet"})


def cut_word(msg: str, near: str) -> bool:
    """Whether ``msg`` ends inside a word: its last word ("Engin", "capaci", "PyT") is not used whole in the text
    ``near`` it, but a longer word there begins with it ("EngineDeadError", "capacity", "PyTorch"); or its last token
    (letters with digits, ``_``, ``-``, ``.``: "api_serve", a host's "VM-0") is not, but begins a longer token there
    ("api_server", "VM-0-16-ubuntu:392:494")."""
    if not near:
        return False
    m = _LAST_WORD.search(msg)
    if m is not None and m.group(0).lower() not in _WHOLE_WORDS and not _extension(msg, m.start()) \
            and _begins_only(m.group(0), "A-Za-z", near):
        return True
    m = _LAST_TOKEN.search(msg)
    if m is None or m.group(0).lower() in _WHOLE_WORDS:
        return False
    # (an acronym that ends a sentence is whole, though a constant there is named after it: "failed to initialize ATL"
    # under "... == ATL_STATUS_SUCCESS failed")
    return _begins_only(m.group(0), r"\w.-", near, after=r"[.-]|[\w](?<!_)" if m.group(0).isupper() else r"[\w.-]")


def _extension(msg: str, start: int) -> bool:
    """The last word, from ``start``, is a file's extension: at most four small letters after a dot ("-o /tmp/x.ptx.o"),
    not a dotted name cut ("vllm.v1.engine.exceptions.Engin")."""
    word = msg[start:]
    return start > 0 and msg[start - 1] == "." and word.islower() and len(word) <= 4


def _begins_only(word: str, chars: str, near: str, *, after: str | None = None) -> bool:
    """``word`` is never used whole in ``near`` (nothing of ``chars`` on either side), but begins a longer run of them
    (continued by ``after``, by default any of ``chars``)."""
    w = re.escape(word)
    return re.search(rf"(?<![{chars}]){w}(?![{chars}])", near) is None and \
        re.search(rf"(?<![{chars}]){w}(?:{after or '[' + chars + ']'})", near) is not None


_LAST_WORD = re.compile(r"(?<![A-Za-z])[A-Za-z]+$")
_LAST_TOKEN = re.compile(r"(?<![\w.-])(?=[\w.-]*[A-Za-z])[\w.-]{2,}\w$")
# a failure's fixed words (the events' needles of 12 characters or more, a library's fixed lines): a log whose last line
# ends in one of them short of its end, from its tenth character on, was cut
# (each without its last blank or punctuation: a log that ends before them was not cut)
_PHRASES = tuple(p for p in {f.rstrip(" :.,") for f in (*_NEEDLES, *FIXED_LINES)} if len(p) >= 12)


def _ends_in_phrase(msg: str) -> bool:
    """``msg`` ends in the first ten characters or more of one of :data:`_PHRASES`, short of its end -- not where the
    phrase goes on after a full stop ("CUDA out of memory" of "CUDA out of memory. Tried to allocate": a whole sentence)."""
    for phrase in _PHRASES:
        start = msg.rfind(phrase[:10])
        if start >= 0 and len(msg) - start < len(phrase) and phrase.startswith(msg[start:]) \
                and (start == 0 or not msg[start - 1].isalnum()) and phrase[len(msg) - start] != ".":
            return True
    return False


def cut_end(final: Final | None, root: RootCause | None, line: int) -> Final | None:
    """The log's end as it shows when its last record was cut (:func:`ends_cut`): the last traceback's, cut; or, with no
    traceback, one that says only that the log was cut, in the root cause's phase."""
    if final is not None:
        return replace(final, truncated=True)
    if root is not None:
        return Final(None, None, None, root.phase, root.ranks, True, None, line)
    return None
