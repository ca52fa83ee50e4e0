"""Native backtraces read outside any exception: the function each frame names, and the phase those frames say.

A process that crashes in native code prints its frames under a signal handler's report (UCX's "[host:pid:0:tid]
Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))", then "==== backtrace (tid:
371172) ====" and "8 0x0000000000127022 tensorrt_llm::runtime::TllmRuntime::TllmRuntime() :0"), and c10 lists the
frames under a torch error whose own lines a window may have cut off ("frame #9: c10d::ProcessGroupNCCL::
broadcastUniqueNCCLID(ncclUniqueId*, bool, ...) + 0x5c4 (0x7f9794cce5e4 in .../libtorch_cuda.so)"). The scanner keeps
the first :data:`KEPT` such lines (:data:`~workbench.tracebacks.patterns._NATIVE_SYMBOL`); their functions are read
as a C++ exception's numbered frames are (:func:`names_phase`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from workbench.code_phases import NATIVE_SERVING
from workbench.phases import stack_evidence
from workbench.tracebacks.events import native_enough
from workbench.tracebacks.model import LogEvent
from workbench.tracebacks.patterns import FIXED_LINES

KEPT = 32  # native frame lines the scanner keeps (the first ones): bounded whatever the log holds
# the qualified function of c10's "frame #N: ns::C::f(args) + 0x58 (...)" or of a numbered frame ("8 0x... ns::C::C()
# :0", UCX's and TensorRT-LLM's); "<unknown function>" and a bare address name none
# (or a bare symbol and its offset: "7  0x7f67... TRITONBACKEND_ModelInstanceInitialize + 101")
_FUNCTION = re.compile(r"(?:frame #\d+: |\d+\s+0x[0-9a-fA-F]+\s+)([A-Za-z_~][^()]*?)(?:\(| \+ \d+$)")
# (gdb's "#4  0x0000772d590288ff in __GI_abort () at ./stdlib/abort.c:79", "#1  __pthread_kill_internal (signo=6, ...)
# at ...", "#0  xxx in ?? () from ..."; the crash utility's " #2 [ffffa5d59a524e60] panic at ffffffff8da96bd8")
_GDB_FUNCTION = re.compile(r"#(\d+)\s+(?:\[[0-9a-f]+\] (\S+) at |(?:\S+ in )?(\?\?|[A-Za-z_~].*?) \()")
# of gdb's frames, those that only deliver a crash (the signal raised, the kernel's crash kexec; "??" inside them) and
# those where the program chose to die (abort, a failed assertion, the kernel's panic): the frame a reader names
_DELIVERY = frozenset({"??", "raise", "gsignal", "pthread_kill", "__pthread_kill", "__pthread_kill_implementation",
                       "__pthread_kill_internal", "__GI___pthread_kill", "__GI_raise", "machine_kexec", "__crash_kexec",
                       "crash_kexec"})
_DYING = frozenset({"abort", "__GI_abort", "__assert_fail", "__assert_fail_base", "panic"})
# a thread stopped waiting, as gdb lists every thread of a live (hung) process: no crash
_WAITING = re.compile(r"wait|futex|poll|select|sleep|recv|accept|cond_|sem_")
_TEMPLATE = re.compile(r"<[^<>]*>")
# a C++ factory building an object as a constructor does (TurboMind's "LlamaTritonModel<__half>::
# createSharedModelInstance()", TensorRT's "createInferRuntime_INTERNAL()")
_FACTORY = re.compile(r"create[A-Z]")
_GAP = 2  # lines between two frames of one backtrace (a blank, a wrapped line)
_AFTER_SIGNAL = 8  # lines between a signal's report and its first frame (the backtrace's header, other processes' lines)


def frame_function(text: str) -> str | None:
    """The function a native frame line names, its class and namespaces dropped; a constructor ("ns::Model::Model")
    named as Python names one, ``__init__``: an object being built."""
    m = _FUNCTION.match(text.strip()) or _GDB_FUNCTION.match(text.strip())
    if m is None:
        return None
    name = m.group(1) if m.re is _FUNCTION else (m.group(2) or m.group(3)).split("(", 1)[0]  # (gdb's: its arguments' types)
    while "<" in name and (bare := _TEMPLATE.sub("", name)) != name:  # templates' arguments, innermost first
        name = bare
    parts = [p.strip() for p in name.split("::")]
    return "__init__" if len(parts) > 1 and parts[-2] == parts[-1] else parts[-1] or None


def names_phase(names: Sequence[str]) -> tuple[str | None, bool]:
    """(the start-up step or ``serving`` the functions of one native backtrace name, innermost first, else None;
    whether they build an object, a constructor): how a C++ exception's numbered frames, a crash handler's and c10's
    frames are read, as :func:`~workbench.phases.decide_phase` reads a Python stack."""
    step, serving, startup = stack_evidence(("", n, None) for n in reversed(names))  # outermost first
    if step is not None:
        return step, startup
    return ("serving" if serving or any(n in NATIVE_SERVING for n in names) else None), startup


def frames_phase(frames: Sequence[LogEvent]) -> str | None:
    """The phase the functions of one backtrace's frames (innermost first) name: a start-up step, ``serving`` for a
    serving loop's function (before anything built inside it), ``startup_other`` for objects being built (constructors,
    factories), else None."""
    names = [n for f in frames if (n := frame_function(f.text)) is not None]
    phase, startup = names_phase(names)
    if phase is not None:
        return phase
    return "startup_other" if startup or any(_FACTORY.match(n) for n in names) else None


def _run(frames: Sequence[LogEvent], start: int) -> list[LogEvent]:
    """The frames of one backtrace: ``frames[start]`` and those that follow it line after line."""
    run = [frames[start]]
    for f in frames[start + 1:]:
        if f.line - run[-1].line > _GAP:
            break
        run.append(f)
    return run


def native_frame(line: int, msg: str, rank: str | None, phase: str, server: str, recent: Sequence[str],
                 heads: Sequence[tuple[str | None, str | None]]) -> LogEvent:
    """A native frame line as the scanner keeps it. c10's head ("Exception raised from recvBytes at .../Utils.hpp:682
    (most recent call first):") comes right under the torch error's own message, which c10 prints first: the record
    before it (``recent``, this line last) is kept as its context, and that record's rank (``heads``: (rank, level)
    of each) when the head has none; not one of PyTorch's hints, which end a CUDA error's message (its first lines cut).
    """
    text = msg.strip()[:400]
    if text.startswith("Exception raised from ") and len(recent) > 1 and not any(h[:40] in recent[-2] for h in FIXED_LINES):
        return LogEvent("error_line", line, text, rank or heads[-2][0], phase, server, (recent[-2],))
    return LogEvent("error_line", line, text, rank, phase, server)


def native_root(frames: Sequence[LogEvent]) -> LogEvent | None:
    """The first frame of the log's native backtrace when the frames make one (:func:`native_enough`), its phase the
    step or serving loop the backtrace's functions name (frames before the timeline), or its objects being built when
    the timeline knows nothing; under c10's head, the torch error's message before it (:func:`native_frame`)."""
    if not native_enough(list(frames)):
        return None
    first = frames[0]
    if (head := _GDB_FUNCTION.match(first.text)) is not None:
        named = _gdb_root(frames, head.group(1) == "0")
        if named is None:
            return None
        first = named
    if first.context:
        first = replace(first, text=first.context[-1].strip()[:400], context=())
    phase = frames_phase(_run(frames, 0))
    if phase is None or (phase == "startup_other" and first.phase not in ("unknown", "")):
        return first
    return replace(first, phase=phase)


def _gdb_root(frames: Sequence[LogEvent], from_top: bool) -> LogEvent | None:
    """The frame of gdb's (or the crash utility's) backtrace a reader names as what failed: where the program chose to
    die (abort, an assertion, the kernel's panic, under the frames that deliver the signal), else its innermost frame;
    None for a backtrace that shows no crash -- one begun mid-stack with no such frame, or a thread stopped waiting
    (a dump of a live, hung process's threads)."""
    names = [frame_function(f.text) or "" for f in frames]
    dying = next((i for i, n in enumerate(names) if n in _DYING), None)
    if dying is not None and all(n in _DELIVERY for n in names[:dying]):
        return frames[dying]
    if not from_top or _WAITING.search(names[0]):
        return None
    return frames[0]


def signal_frames_phase(line: int, frames: Sequence[LogEvent]) -> str | None:
    """The phase of the native backtrace a crash handler printed under the fatal signal reported at ``line``."""
    start = next((i for i, f in enumerate(frames) if 0 < f.line - line <= _AFTER_SIGNAL), None)
    return frames_phase(_run(frames, start)) if start is not None else None
