"""One failure printed by two processes: the side whose frames name the step tells the other's.

A step that prints nothing as it begins leaves the log's timeline at the step before it. A failure whose own frames
name no step (a worker answering the engine's RPC, its stack the reply's machinery alone) is then read by that
lagging timeline, while the same exception, printed a few lines on by the process that asked (vLLM's engine core
inside ``_initialize_kv_caches`` asking its worker for the KV-cache spec), has frames that name the step it is in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from workbench.code_phases import STEPS
from workbench.phases import phase_from_frames
from workbench.tracebacks.cut import own_block
from workbench.tracebacks.model import RootCause, Traceback

# how far on the other side is looked for (a worker's traceback printed twice, then the engine's)
_LINES = 60
_ORDER = {"startup_other": -1, **{step: i for i, step in enumerate(STEPS)}}


def other_sides_step(root: RootCause, tracebacks: Sequence[Traceback]) -> RootCause:
    """The root cause with the later step that the same exception's next traceback names by its frames, where the
    root's own frames name none (its step came from the timeline, or it is start-up with no step)."""
    own = own_block(root, tracebacks)
    if own is None or root.phase not in _ORDER or phase_from_frames((f.file, f.function) for f in own.frames):
        return root
    for t in tracebacks:
        if not own.end_line < t.start_line <= own.end_line + _LINES or \
                (t.exception_type, t.message) != (own.exception_type, own.message):
            continue
        step = phase_from_frames((f.file, f.function) for f in t.frames)
        if step in STEPS and _ORDER[step] > _ORDER[root.phase]:
            return replace(root, phase=step)
    return root
