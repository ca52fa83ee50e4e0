"""From extracted tracebacks to failures, the final error and the root cause.

Signature
    One occurrence of a failure is a chain of blocks (a traceback and the ones chained to it). Its signature hashes,
    for every link in order: the exception type, the normalised first line of the message (addresses, numbers, ids,
    IPs and paths of temporary files replaced, cut to 100 characters so a line cut by the journal still matches), and
    the innermost three frames that are not generic wrappers (``torch.nn.Module._call_impl``, ``contextlib``,
    ``functools``...), each as the last two path components and the function name. Ranks, pids, timestamps and line
    numbers are left out, so the same failure on eight ranks, on two restarts or on two installs of one version groups
    as one. It reads ``<ExceptionType>@<12 hex digits>``.

Root cause
    Looked for in the start (see :class:`workbench.phases.PhaseTracker` restarts) that
    holds the last failure, in this order: a hardware Xid line; an OOM-killer line; the earliest of the
    failures that do not merely point elsewhere (those that only echo a peer's death, such as NCCL's
    "remote process exited", come after the others), the fatal-signal lines (segfault, abort), the CUDA
    device-side assertion lines and the lines saying a process died (a worker SIGKILLed, or a kernel
    assertion that poisons the CUDA context, before any exception makes the exceptions after it
    consequences; so does an error line naming an illegal memory access just before the failure chosen);
    an ERROR-level line naming a CUDA error or an out-of-memory; an NCCL WARN / watchdog or other Xid
    line; the earliest pointing failure; a ``Killed``/SIGQUIT line. Within a chain the last link is
    taken unless it only wraps or points at the link before it ("Capture cuda graph
    failed", "See root cause above"...), then the link before it is.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import BinaryIO

from workbench.phases import decide_phase, phase_from_frames, startup_step, text_evidence
from workbench.tracebacks.chains import flow_context, rewraps, wrapped_output
from workbench.tracebacks.cut import (
    _ANNOUNCE_ONLY,
    _ANNOUNCES,
    _REPORT,
    continued_rank,
    cut_end,
    cut_report,
    last_resort_phase,
    own_block,
    start_cut_in_roots_step,
    threads_phase,
    threads_root,
    typeless_dump,
    waits,
)
from workbench.tracebacks.events import cuda_cause, death_cause, line_cause, lost_type
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
from workbench.tracebacks.native import names_phase, signal_frames_phase
from workbench.tracebacks.patterns import _PROCESS_CUT
from workbench.tracebacks.pointers import is_pointer, points_to_roots_step
from workbench.tracebacks.reader import extract, extract_stream
from workbench.tracebacks.scan import Extractor
from workbench.tracebacks.sides import other_sides_step
from workbench.tracebacks.stack import CUT_DUMP, SPIED, cut_after_chain, native_final

_WRAPPER_FRAMES = {
    ("module.py", "_call_impl"), ("module.py", "_wrapped_call_impl"), ("module.py", "__call__"),
    ("_contextlib.py", "decorate_context"), ("otel.py", "sync_wrapper"), ("contextlib.py", "inner"),
    ("contextlib.py", "__exit__"), ("contextlib.py", "__enter__"), ("eval_frame.py", "_fn"),
    ("external_utils.py", "inner"), ("functools.py", "wrapper"), ("utils.py", "wrapper"),
    ("threading.py", "run"), ("process.py", "run"), ("process.py", "_bootstrap"),
}
# a chain Python went on after ("Exception ignored in: ..."), or one of multiprocessing's resource tracker cleaning up
# after the processes that failed (its KeyError over a shared-memory name): the root cause only if nothing else failed
_TRACKER = "multiprocessing/resource_tracker.py"
_WRAPPER = re.compile(r"^Capture (?:cuda|CUDA) graph failed|^Initialization failed\. warmup error|failed to start", re.I)
# what the other ranks say when one rank dies: real failures, but never the first thing to fix
# when another failure in the same start says more
_SECONDARY = re.compile(
    r"remote process exited|Connection closed by peer|Connection reset by peer|Broken pipe|"
    r"communicator was aborted|ncclRemoteError|Socket Timeout|TCPStore|Watchdog caught collective operation timeout|"
    r"NCCL communicator.*aborted|Timed out waiting for|cancelled$", re.I)
_HW_XID = {"48", "61", "62", "63", "64", "74", "79", "92", "94", "95", "119", "120", "121", "140", "143", "154"}
_XID = re.compile(r"NVRM: Xid \([^)]*\): (\d+)")
_NORM = (
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b"), "<hex>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\[[0-9a-fA-F:]+\](?::\d+)?"), "<ip>"),
    (re.compile(r"/tmp/[^\s'\"]+"), "/tmp/<path>"),
    (re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?"), "N"),
    (re.compile(r"\s+"), " "),
)
_KEEP_CODE = re.compile(r"((?:exit|error|return) code:? |Errno |status:? )(-?\d+)", re.I)


def normalize_message(message: str | None) -> str:
    """The part of a message that stays the same between runs (see the module docstring)."""
    if not message:
        return ""
    text = message.split("\n", 1)[0].strip().rstrip("…").rstrip(".")
    kept: list[str] = []

    def keep(m: re.Match[str]) -> str:  # exit codes and errnos say what happened: not run-to-run noise
        kept.append(m.group(2))
        return m.group(1) + "\x00" + "q" * len(kept) + "\x00"

    text = _KEEP_CODE.sub(keep, text)
    for pattern, repl in _NORM:
        text = pattern.sub(repl, text)
    if kept:
        text = re.sub("\x00(q+)\x00", lambda m: "#" + kept[len(m.group(1)) - 1], text)
    return text[:100]


def _frame_key(frame: Frame) -> str:
    return "/".join(frame.file.replace("\\", "/").rsplit("/", 2)[-2:]) + ":" + frame.function


def _signature_frames(frames: Sequence[Frame]) -> list[str]:
    keys: list[str] = []
    for frame in reversed(frames):
        base = frame.file.replace("\\", "/").rsplit("/", 1)[-1]
        if (base, frame.function) in _WRAPPER_FRAMES or frame.file.startswith("<frozen"):
            continue
        keys.append(_frame_key(frame))
        if len(keys) == 3:
            break
    return keys


def signature(chain: Sequence[Traceback]) -> str:
    """Signature of one occurrence: the chain of blocks, first link first."""
    parts = ["|".join([t.chain or "", t.exception_type or "?", normalize_message(t.message), *_signature_frames(t.frames)])
             for t in chain]
    digest = hashlib.sha1("\n".join(parts).encode("utf-8", "replace")).hexdigest()[:12]
    return f"{chain[-1].exception_type or 'Truncated'}@{digest}"


def _cpp_signature(c: CppException) -> str:
    digest = hashlib.sha1(f"{c.exception_type}|{normalize_message(c.message)}".encode("utf-8", "replace")).hexdigest()[:12]
    return f"{c.exception_type}@{digest}"


def _chains(tracebacks: Sequence[Traceback]) -> list[list[Traceback]]:
    nxt: dict[int, Traceback] = {t.chained_from: t for t in tracebacks if t.chained_from is not None}
    chains = []
    for t in tracebacks:
        if t.chained_from is None or t.chained_from >= t.index:
            chain = [t]
            while chain[-1].index in nxt and len(chain) < 64:
                chain.append(nxt[chain[-1].index])
            chains.append(chain)
    return chains


# an exception that only reports a compiler run failed (CalledProcessError of gcc, nvcc...)
_COMPILER_RUN = re.compile(r"/(?:gcc|g\+\+|cc|c\+\+|clang(?:\+\+)?|nvcc)(?:-\d+)?'")
# a frame Open MPI's signal handler prints ("[host:pid] [15] /lib/libtensorrt_llm.so(_ZN12tensorrt_llm8executor
# 8Executor4Impl16getNewReqWithIdsEi...+0x68b)[0x7fc206bb787b]"): the process, and the frame's symbol
_MPI_FRAME = re.compile(r"\[([\w.-]+:\d+)\] \[ ?\d+\] \S[^\s(]*\(([^)+\s]*)")
_MANGLED_PART = re.compile(r"(\d+)")
# the lines of a stack's head a log may end in after the record that announces it (a task's head, a frame)
_STACK_HEAD_LINES = 4
_CALLING = re.compile(r"when calling `(\w+)")
_CUDA_STATUS = re.compile(r"^CUDA error: (?=[A-Z][A-Z0-9_]{5,})")


def innermost_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame that is not a generic wrapper (``Module._call_impl``, ``contextlib``...)."""
    for frame in reversed(frames):
        base = frame.file.replace("\\", "/").rsplit("/", 1)[-1]
        if (base, frame.function) not in _WRAPPER_FRAMES and not frame.file.startswith("<frozen"):
            return frame
    return frames[-1] if frames else None


def describe(exception_type: str | None, message: str | None, frames: Sequence[Frame]) -> str:
    """A readable one-line signature: ``RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED in
    cublasGemmStridedBatchedEx at forward_absorb_prepare (deepseek_v2.py)``."""
    first = (message or "").split("\n", 1)[0].strip()
    callee = _CALLING.search(first)
    if callee is not None:
        first = first[: callee.start()].rstrip(" :")
    first = _CUDA_STATUS.sub("", first)
    if len(first) > 120:
        first = first[:119] + "…"
    text = (exception_type or "cut-off traceback") + (f": {first}" if first else "")
    if callee is not None:
        text += f" in {callee.group(1)}"
    frame = innermost_frame(frames)
    if frame is not None:
        text += f" at {frame.function} ({frame.file.replace(chr(92), '/').rsplit('/', 1)[-1]})"
    return text


def _natural(rank: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", rank)]


def _ranks(ranks: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(sorted({r for r in ranks if r}, key=_natural))


def _root_link(chain: Sequence[Traceback]) -> Traceback:
    """The last link, unless cut with nothing said (typed by IPython's header at most) or it wraps or points back."""
    i = len(chain) - 1
    while i > 0 and ((chain[i].cut_end and not chain[i].message) or is_pointer(chain[i])
                     or _WRAPPER.search(chain[i].message or "") or rewraps(chain[i], chain[i - 1])):
        i -= 1
    return chain[1 if i == 0 and flow_context(chain) else i]  # anyio's WouldBlock... raised and caught: no failure


def analyze(text: str | bytes, *, year: int | None = None) -> Analysis:
    """Parse a whole log: tracebacks, failures, events, final error and root cause."""
    return analysis_of(extract(text, year=year))


def analyze_stream(stream: BinaryIO, *, year: int | None = None) -> Analysis:
    """:func:`analyze` for a binary stream (a log file, stdin), read a line at a time: memory bounded."""
    return analysis_of(extract_stream(stream, year=year))


def analysis_of(ex: Extractor) -> Analysis:
    """Build the :class:`Analysis` of an extractor that has been fed and finished."""
    tracebacks = tuple(ex.tracebacks)
    chains = _chains(tracebacks)
    groups: dict[str, list[list[Traceback]]] = {}
    for chain in chains:
        groups.setdefault(signature(chain), []).append(chain)
    failures: list[Failure] = []
    for sig, occ in groups.items():
        first, last = occ[0], occ[0][-1]
        failures.append(Failure(
            signature=sig, exception_type=last.exception_type, message=last.message, innermost_frame=last.innermost,
            phase=last.phase, ranks=_ranks(t.rank for chain in occ for t in chain), occurrences=len(occ),
            tracebacks=tuple(sorted(t.index for chain in occ for t in chain)), first_line=first[0].start_line,
            pointer=is_pointer(last) and _root_link(first) is last,
            signature_text=describe(last.exception_type, last.message, last.frames)))
    cpp_groups: dict[str, list[CppException]] = {}
    for c in ex.cpp_exceptions:
        cpp_groups.setdefault(_cpp_signature(c), []).append(c)
    for sig, cs in cpp_groups.items():
        c = cs[0]
        failures.append(Failure(sig, c.exception_type, c.message, None, c.phase, _ranks(x.rank for x in cs), len(cs), (), c.line,
                                is_pointer(c), describe(c.exception_type, c.message, ())))
    failures.sort(key=lambda f: f.first_line)
    final = cut_after_chain(_final(tracebacks, failures, ex.cpp_exceptions) or native_final(ex.native_backtrace()), ex.chain_cut_after)
    root = _root_cause(ex, chains, failures)
    if root is not None:
        root = continued_rank(other_sides_step(_phase_from_neighbour(root, tracebacks), tracebacks), tracebacks)
    if root is not None and root.phase == "unknown" and "Fatal Python error" in (root.exception_type or root.message):
        root = replace(root, phase=threads_phase(root.line, ex.other_threads))
    root = root or threads_root(ex.other_threads)
    if root is not None and root.phase == "unknown":
        # the phase the server's timeline had reached when the failure was reported (a request
        # answered 500 after the engine died), if no restart came in between
        tracker = next((t for t in ex.trackers.values() if t.phase not in ("unknown", "startup_other")
                        and not any(tr.restart and tr.line_no > root.line for tr in t.transitions)), None)
        if tracker is not None and tracker.phase == "serving":
            root = replace(root, phase="serving")
    if root is not None and root.phase == "unknown" and (fallback := last_resort_phase(root, tracebacks, ex.trackers.values())):
        root = replace(root, phase=fallback)  # the server said its start failed (its launcher died), or a model's forward ran
    if root is not None and root.phase == "startup_other":
        # an NCCL/HCCL error while starting, in the root's words or in the error records just before it
        root = replace(root, phase=startup_step((root.exception_type, root.message, *_reports_before(tracebacks, root.line))))
    if final is not None and root is not None and (final.phase == "unknown" or start_cut_in_roots_step(final, root, tracebacks)
                                                   or points_to_roots_step(final, root)):
        final = replace(final, phase=root.phase)
    if final is None and root is not None and _cut_in_announced_stack(ex, root):
        final = Final(None, None, None, root.phase, root.ranks, True, None, root.line)
    root, final = typeless_dump(root, final, ex.events)
    if ex.ends_cut:
        final = cut_end(final, root, ex.line_no)
    elif final is None and root is not None:  # the failure a record reported is how the log ends, whole
        final = Final(root.exception_type, root.message, root.innermost_frame, root.phase, root.ranks, False, None,
                      root.line)
    return Analysis(tracebacks, tuple(failures), tuple(ex.events), tuple(ex.cpp_exceptions), final, root, ex.line_no)


def _cut_in_announced_stack(ex: Extractor, root: RootCause) -> bool:
    """The log ends in the stack a record announces, the record the only failure: logger.exception's
    line ("EngineCore failed to start.", "Request failed:") and at most the stack's first lines after it (no record)."""
    if root.kind != "log_line" or ex.tracebacks or ex.cpp_exceptions or ex.line_no - root.line > _STACK_HEAD_LINES \
            or ((last := ex.last_record) is not None and last.level is not None and last.message.strip()[:80] not in root.message):
        return False
    text = root.message.rstrip()
    return text.endswith(":") or bool(_PROCESS_CUT.fullmatch(text) or _ANNOUNCE_ONLY.search(text) or _ANNOUNCES.search(text))


def _phase_from_neighbour(root: RootCause, tracebacks: Sequence[Traceback]) -> RootCause:
    """The phase of a root cause that says little where it was, from the traceback printed next to it.

    An exception or log line printed alone (no frames), or a block whose header was cut off (only
    its innermost frames), is usually the same failure as the traceback printed within 12 lines of
    it (a rank's "Scheduler hit an exception" block repeating it, the stack under an assertion). A
    neighbour whose frames name a step or the serving loop outranks the root's own words (frames before words, as in
    :func:`workbench.phases.decide_phase`; for a cut block also the method a neighbour's wrapper names, which outranks
    the words as well); for a line alone any known neighbour phase fills an unknown one."""
    own = own_block(root, tracebacks)
    alone = root.innermost_frame is None
    if not alone and not (own is not None and own.cut_start and root.phase == "unknown"):
        return root
    near = [t for t in tracebacks if t is not own and abs(t.start_line - root.line) <= 12 and t.phase != "unknown"]
    if not near:
        return root
    framed = [t for t in near if phase_from_frames((f.file, f.function) for f in t.frames) is not None
              # for a cut block, also the method its wrapper names ("while processing method init_device")
              or (not alone and text_evidence((t.lead,))[3])]
    if not alone:  # a cut block has frames of its own: only a neighbour's frames say more
        near = framed
    if framed and (alone or root.phase == "unknown"):
        return replace(root, phase=min(framed, key=lambda t: abs(t.start_line - root.line)).phase)
    if near and root.phase == "unknown":
        return replace(root, phase=min(near, key=lambda t: abs(t.start_line - root.line)).phase)
    return root


def _failure_of(failures: Sequence[Failure], index: int) -> Failure | None:
    for f in failures:
        if index in f.tracebacks:
            return f
    return None


def _final(tracebacks: Sequence[Traceback], failures: Sequence[Failure], cpp: Sequence[CppException]) -> Final | None:
    if not tracebacks:
        if not cpp:
            return None
        c = cpp[-1]
        return Final(c.exception_type, c.message, None, c.phase, _ranks([c.rank]), False, None, c.line)
    last = tracebacks[-1]
    failure = _failure_of(failures, last.index)
    ranks = failure.ranks if failure else _ranks([last.rank])
    last_complete = None
    if last.cut_end:
        for t in reversed(tracebacks):
            if t.exception_type is not None and t is not last:
                last_complete = (t.exception_type, t.message or "")
                break
    return Final(last.exception_type, last.message, last.innermost, last.phase, ranks, last.cut_end, last_complete, last.start_line)


def _segment(ex: Extractor, failures: Sequence[Failure]) -> tuple[int, int, str | None]:
    """Line range and server of the start that holds the last failure (the whole log without restarts)."""
    items = [(t.start_line, t.server) for t in ex.tracebacks] + [(c.line, c.server) for c in ex.cpp_exceptions]
    if not items:
        items = [(e.line, e.server) for e in ex.events if e.kind != "killed"]
    if not items:
        return 1, ex.line_no, None
    last_line, server = max(items)
    tracker = ex.trackers.get(server)
    restarts = [t.line_no for t in tracker.transitions if t.restart] if tracker else []
    lo, hi = 1, ex.line_no
    for r in restarts:
        if r <= last_line:
            lo = r
        else:
            hi = r - 1
            break
    return lo, hi, server


def _reports_before(tracebacks: Sequence[Traceback], line: int) -> tuple[str, ...]:
    """The error reports among the records printed just before the traceback that starts at ``line``
    (a collective library's own error lines before the stack of the start they failed)."""
    own = next((t for t in tracebacks if t.start_line == line), None)
    return tuple(c for c in own.context if _REPORT.search(c)) if own is not None else ()


def _root_cause(ex: Extractor, chains: Sequence[Sequence[Traceback]], failures: Sequence[Failure]) -> RootCause | None:
    lo, hi, server = _segment(ex, failures)
    events = [e for e in ex.events if lo <= e.line <= hi]
    lines = [e.line for e in events]  # in line order, as the scanner read them
    by_sig = {f.signature: f for f in failures}

    def event_root(e: LogEvent) -> RootCause:
        phase = decide_phase((), (e.text,), e.phase)  # the line's own words, then the timeline,
        if phase == "unknown" and e.context:  # then the words of the lines just before it
            phase = decide_phase((), e.context, "unknown")
        if phase == "unknown" and e.kind == "fatal_signal":  # then the native frames a crash handler printed
            phase = _signal_frames_phase(e, events) or signal_frames_phase(e.line, ex.native_frames) or phase
        if phase == "unknown" and e.kind == "error_line":  # then its callers' error lines just after it (llama.cpp)
            after = events[bisect_right(lines, e.line):bisect_right(lines, e.line + 2)]  # (not a scan of all: per event)
            phase = decide_phase((), [n.text for n in after if n.kind == "error_line"], "unknown")
        return RootCause(*line_cause(e), e.line, None, phase, _ranks([e.rank]), None, e.text[:160])

    def first_event(*kinds: str, hw: bool | None = None) -> LogEvent | None:
        for e in events:
            if e.kind in kinds:
                if hw is not None:
                    m = _XID.search(e.text)
                    if (m is not None and m.group(1) in _HW_XID) != hw:
                        continue
                return e
        return None

    for first in (first_event("xid", hw=True), first_event("oom_kill")):  # a hardware fault, then the OOM killer
        if first:
            return event_root(first)
    # failures in the segment, earliest first
    items: list[tuple[int, bool, RootCause]] = []
    cut, spied, unraisable = list[tuple[int, RootCause]](), list[tuple[int, RootCause]](), list[RootCause]()
    wrapped = wrapped_output(chains)  # a wrapper's exception and the traceback of the output it introduces
    # the output ran inside the wrapper (an exception group's sub-exceptions, a subprocess's stderr): where its own
    # frames tell no phase, the wrapper's do
    around = {out: _root_link(c).phase for c in chains if (out := wrapped.get(c[0].start_line)) is not None}
    for chain in chains:
        if not lo <= chain[0].start_line <= hi or (server is not None and chain[0].server != server):
            continue
        if chain[0].start_line in wrapped:  # the output printed under it says what failed
            continue
        link = _root_link(chain)
        sig = signature(chain)
        failure = by_sig.get(sig)
        ranks = failure.ranks if failure else _ranks([link.rank])
        phase = around.get(chain[0].start_line, "unknown") if link.phase == "unknown" else link.phase
        rc = RootCause("exception", link.exception_type, link.message or "", link.start_line, link.innermost,
                       phase, ranks, sig, describe(link.exception_type, link.message, link.frames))
        if chain[0].unraisable or (link.innermost is not None and link.innermost.file.endswith(_TRACKER)):
            unraisable.append(rc)
            continue
        if link.exception_type is None:  # cut before its exception line: where it failed, not what
            report = cut_report(link)
            rc = replace(rc, exception_type=report.exception_type, message=report.message)
            if report.exception_type is None and report.message and (report.record or not (link.logged or report.announced)):
                # a record above it said what failed: that line (another process's: with its rank)
                rc = replace(rc, kind="log_line", ranks=_ranks([report.rank]) if report.rank else rc.ranks)
            if rc.line in wrapped.values():  # the output a wrapper introduced: what failed, however cut
                items.append((rc.line, False, rc))
            elif link.lead == SPIED:  # py-spy's dump of a live process: where its main thread was, no failure itself
                spied.append((rc.line, replace(rc, kind="log_line", exception_type=None, message=SPIED)))
            else:
                cut.append((rc.line, rc))
            continue
        items.append((chain[0].start_line, is_pointer(link), rc))
    for c in ex.cpp_exceptions:
        if lo <= c.line <= hi and (server is None or c.server == server):
            f = by_sig.get(_cpp_signature(c))
            ranks = f.ranks if f and f.ranks else _ranks([c.rank])
            if not ranks:  # printed without a prefix: the rank of the traceback its process prints right after
                after = [t for t in ex.tracebacks if 0 < t.start_line - c.end_line <= 2 and t.rank]
                ranks = _ranks([after[0].rank]) if len({t.rank for t in after}) == 1 else ()
            # the phase from a native error's words, then the timeline; a Rust panic is its line (nothing caught, named)
            phase, panic = decide_phase((), (c.message,), c.phase), c.exception_type == "panic"
            items.append((c.line, is_pointer(c), RootCause("log_line" if panic else "exception", None if panic else c.exception_type,
                                                           c.message, c.line, None, phase, ranks, _cpp_signature(c), describe(c.exception_type, c.message, ()))))
    # a process that died or crashed before any real exception was printed is the cause
    # of the exceptions that follow (vLLM's "cancelled" when a worker was SIGKILLed)
    dumps = [t.start_line for t in ex.tracebacks if t.exception_type == "Fatal Python error"]
    # faulthandler's own "Fatal Python error: ..." line (its dump may list only other threads) names the crash
    dumps += [e.line for e in events if e.kind == "fatal_signal" and e.text.startswith("Fatal Python error")]
    raised = [t.start_line for t in ex.tracebacks]
    actor_deaths = [t.start_line for t in ex.tracebacks if (t.exception_type or "").endswith(("ActorDiedError", "ActorError"))]

    def announces(ev: LogEvent) -> bool:
        """The line only announces a stack printed just after it: the stack says more. (A crash handler's "*** SIGSEGV
        received" before faulthandler's dump; Ray's "The actor died because of an error raised in its creation task"
        before that error.) Or it is a line of the message of Ray's exception for a dead actor just above it ("The actor
        is dead because its worker process has died. Worker exit type: SYSTEM_ERROR" under "ActorDiedError: ...")."""
        if ev.kind == "fatal_signal":
            return any(0 <= d - ev.line <= 12 for d in dumps if d != ev.line)
        return (_ANNOUNCES.search(ev.text) is not None and any(0 < r - ev.line <= 12 for r in raised)) or (
            ev.kind == "process_died" and any(0 < ev.line - r <= 12 for r in actor_deaths))

    for ev in events:
        if (ev.kind in ("fatal_signal", "process_died", "device_assert") or lost_type(ev)) and not announces(ev):
            items.append((ev.line, False, event_root(ev)))
    items.sort(key=lambda x: x[0])
    # frames of a dump whose header was cut off (often another thread's) give way to a whole dump
    if any(rc.exception_type == "Fatal Python error" and rc.message != CUT_DUMP for _l, _p, rc in items):
        items = [it for it in items if it[2].message != CUT_DUMP]
    # an exception line printed on its own that repeats a full traceback's (a summary, a quote)
    # says less than the traceback: drop the echo
    full = {(rc.exception_type, normalize_message(rc.message)) for _l, _p, rc in items if rc.innermost_frame is not None}
    items = [it for it in items if it[2].innermost_frame is not None or it[2].kind != "exception"
             or (it[2].exception_type, normalize_message(it[2].message)) not in full]
    primary = [rc for _line, pointer, rc in items if not pointer]
    chosen = next((rc for rc in primary if not (rc.kind == "exception" and _SECONDARY.search(rc.message))), None)
    chosen = chosen or (primary[0] if primary else None)
    if chosen is not None:
        cause = (chosen.kind == "log_line" and death_cause(chosen.line, events)) or cuda_cause(chosen.message, chosen.line, events)  # the CUDA error the failure came after
        if cause:  # (the kernel's assertion, an illegal memory access) says what went wrong
            rc = event_root(cause)
            return rc if rc.phase != "unknown" else replace(rc, phase=chosen.phase)
        if chosen.kind == "exception" and _COMPILER_RUN.search(chosen.message):
            compiler = first_event("compile_error")  # the compiler's own error line says what failed
            if compiler is not None:
                return event_root(compiler)
        return chosen
    for kinds in (("error_line", "compile_error"), ("nccl_warn", "xid")):
        line = next((e for e in events if e.kind in kinds and not announces(e)), None)
        if line:
            return event_root(line)
    if items:
        return items[0][2]
    if cut:  # only tracebacks cut before their exception: the first that did work says where it failed
        # (a driver's stack cut inside ``ray.get`` or a future's ``result`` only waited for the work another
        # process's stack, interleaved with it, shows failing)
        working = [c for c in cut if not waits(c[1].innermost_frame)]
        return min(working or cut, key=lambda x: x[0])[1]
    if unraisable:
        return unraisable[0]
    # then the kill that ended the process, before where py-spy saw its main thread
    return event_root(killed) if (killed := first_event("killed")) else (spied[0][1] if spied else None)


def compare(a: Analysis, b: Analysis) -> Comparison:
    """Compare the failures of two logs (two variants, two restarts) by signature."""
    sa = {f.signature: f for f in a.failures}
    sb = {f.signature: f for f in b.failures}
    same = tuple(s for s in sa if s in sb)
    only_a = [s for s in sa if s not in sb]
    only_b = [s for s in sb if s not in sa]
    different: list[tuple[str, str]] = []

    def place(f: Failure) -> tuple[str | None, str | None]:
        return f.exception_type, _frame_key(f.innermost_frame) if f.innermost_frame else None

    for s in list(only_a):
        match = next((t for t in only_b if place(sb[t]) == place(sa[s]) and place(sa[s]) != (None, None)), None)
        if match is not None:
            different.append((s, match))
            only_a.remove(s)
            only_b.remove(match)
    return Comparison(same, tuple(different), tuple(only_a), tuple(only_b), _compare_roots(a, b))


def _compare_roots(a: Analysis, b: Analysis) -> str:
    ra, rb = a.root_cause, b.root_cause
    if ra is None and rb is None:
        return "neither"
    if ra is None:
        return "only_in_b"
    if rb is None:
        return "only_in_a"
    if ra.kind != rb.kind:
        return "different"
    if ra.kind == "log_line":
        return "same" if normalize_message(ra.message) == normalize_message(rb.message) else "different"
    ka = (ra.exception_type, normalize_message(ra.message), _frame_key(ra.innermost_frame) if ra.innermost_frame else None)
    kb = (rb.exception_type, normalize_message(rb.message), _frame_key(rb.innermost_frame) if rb.innermost_frame else None)
    return "same" if ka == kb else "different"


def _signal_frames_phase(first: LogEvent, events: Sequence[LogEvent]) -> str | None:
    """The phase the native frames of one process's crash report name (Open MPI's signal handler prints
    them innermost first, one event each): a step, or ``serving`` for a serving loop's function."""
    m = _MPI_FRAME.match(first.text)
    if m is None:
        return None
    names = []
    for ev in events:
        if ev.line >= first.line and ev.kind == "fatal_signal":
            frame = _MPI_FRAME.match(ev.text)
            if frame is not None and frame.group(1) == m.group(1) and frame.group(2):
                names.append(_symbol_name(frame.group(2)))
    return names_phase(names)[0]


def _symbol_name(symbol: str) -> str:
    """The function's own name in a C++ symbol as a backtrace prints it (Itanium-mangled nested names
    read part by part: ``_ZN12tensorrt_llm7runtime10GptSession15generateBatchedE...`` is generateBatched)."""
    if not symbol.startswith("_ZN"):
        return symbol
    rest, name = symbol[3:].lstrip("rVK"), symbol
    while rest[:1].isdigit():
        m = _MANGLED_PART.match(rest)
        assert m is not None
        size = int(m.group(1))
        name, rest = rest[m.end():m.end() + size], rest[m.end() + size:]
    return name
