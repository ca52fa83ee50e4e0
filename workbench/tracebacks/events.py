"""Log lines that tell of a failure without a traceback: kernel OOM kills, Xid, fatal signals,
device asserts, error lines, compiler errors, NCCL warnings, dead processes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Literal

from workbench.logformats import LogLine, parse_line
from workbench.phases import GATEWAY_FAILURE, text_evidence
from workbench.tracebacks.model import LogEvent
from workbench.tracebacks.patterns import (
    _NUM_FRAME,
    _PROCESS_CUT,
    RAISED_NAME,
    cut_error_record,
    event_matches,
    level_word,
)
from workbench.tracebacks.phrases import ANY_LEVEL_PHRASES, LOST_TYPE_PHRASES

_TORCH_RANK = re.compile(r"\[rank(\d+)\]:")
# the rank c10d names in its own messages ("[Rank 2] Watchdog caught ...", "[PG 3 Rank 5] Process group ...")
_C10D_RANK = re.compile(r"\[(?:PG[^\]]*? )?Rank (\d+)\]")
# the rank a failure names in its own words ("Failed to initialize executor on rank 6: ...")
_ON_RANK = re.compile(r"\b[Oo]n [Rr]ank (\d+)\b")
# torch elastic's summary of the rank it names the root cause ("Root Cause (first observed failure):", then "[0]:",
# "  rank      : 0 (local_rank: 0)", "  exitcode  : 1 (pid: 69811)"): a worker that exited with an error code (one a
# signal ended gives a negative code and says so on its "traceback : Signal 11 (SIGSEGV) received by PID" line)
_ELASTIC_EXIT = re.compile(r"\s*exitcode\s*: [1-9]\d* \(pid: \d+\)\s*")
_ELASTIC_ROOT = "Root Cause (first observed failure)"
# the phrases of an exception whose type a paste lost (a failed C++ CHECK, the KV-cache size checks, the status Triton
# gives a model it could not load, ...): see phrases.LOST_TYPE_PHRASES
_LEVEL_FREE = frozenset(text for text, _ in LOST_TYPE_PHRASES)
# and of every failure an engine prints at any level (phrases.ANY_LEVEL_PHRASES too)
_ANY_LEVEL = frozenset(text for text, _ in LOST_TYPE_PHRASES + ANY_LEVEL_PHRASES)
# vLLM's record of the batch whose execution failed, naming that failure, at WARNING when pickling its
# input failed too ("Failed to pickle inputs of failed execution: CUDA error: an illegal memory access ...")
_FAILED_EXECUTION = "inputs of failed execution: "
# a server's JSON answer to a request it aborted, its reason in the finish reason (SGLang's
# "finish_reason":{"type":"abort","message":"Decode transfer failed ... it might be dead","status_code":500}):
# the failure as the server reported it to the client, whatever its log said
_ABORTED_RESPONSE = re.compile(r'"finish_reason":\s*\{"type":\s*"abort",\s*"message":\s*"((?:[^"\\]|\\.){8,})"')
# a server's OpenAI-style error answer (vLLM's ErrorResponse, '{"error":{"message":"...","type":
# "InternalServerError","param":null,"code":500}}', or its older flat '{"object":"error","message":...}'), quoted in
# any component's line, its quotes often escaped by the client that logged it (a Go klog record's
# 'responseBody={\"error\":{\"message\":\"...\"'): the server failed to serve the request, in its own words.
# A 4xx answer too where it is what a client printed (curl's output, a line with no level) or an error record: a
# window that shows one shows why the request failed ("TTS model did not produce audio output", "exceeds the
# pre-allocated encoder cache size"); a server's own INFO record of a client's mistake is routine, not its failure
_SERVER_ERROR_BODY = re.compile(r'\\?"message\\?":\s*\\?"(?P<m1>.{8,400}?)\\?",\s*\\?"type\\?":\s*\\?"\w+\\?"[^{}]{0,80}?'
                                r'\\?"code\\?":\s*(?P<c1>[45])\d\d\b|'
                                # a gateway's body with the code first and no type ('{"error":{"code":500,"message":
                                # "invalid character ..."}}')
                                r'\\?"code\\?":\s*(?P<c2>[45])\d\d,\s*\\?"message\\?":\s*\\?"(?P<m2>(?:[^"\\]|\\[^"]){8,400}?)\\?"\s*[,}]')
# a failure's message quoted in prose after words that say it was thrown ("... crashes and throws the panic
# 'Assertion failed: emplaceDone'"), or quoted on a line of its own under a sentence that announces it ("an error
# occurs during request:" / "`handling callback was invoked with status -3 (Input/output error)`")
_PROSE_THROWN = re.compile(r"\b(?:throws?|threw|thrown|raises?|raised|hits?|gets?|got|reports?|reported|shows?) "
                           r"(?:the |an? )(?:panic|error|exception|assertion(?: error)?)[:,]? ?"
                           r"(?:'([^']{6,200})'|\"([^\"]{6,200})\"|`([^`]{6,200})`)")
_ANNOUNCES = re.compile(r"\b(?:an?|the|this|following) (?:error|exception|panic|failure)\b[^:`]{0,80}:\s*$", re.I)
_LINE_QUOTE = re.compile(r"`([^`]{8,300})`\s*")


def prose_failure(msg: str, recent: Sequence[str]) -> str | None:
    """The failure message a line of prose quotes as thrown, or that a whole-line quote gives under a sentence
    announcing an error (``recent``: the records so far, this line last); None for any other line."""
    text = msg.strip()
    if (m := _PROSE_THROWN.search(text)) is not None:
        return next(g for g in m.groups() if g)
    if text[:1] == "`" and (q := _LINE_QUOTE.fullmatch(text)) is not None and len(recent) > 1 and _ANNOUNCES.search(
            recent[-2]):
        return q.group(1)
    return None


# a status word a harness or test runner writes for a step that failed, before its reason ("[06] Stack 'x':
# FAILED: ...", "nok8s_deploy (x): FAILED - Timed out waiting for ...")
_FAILED_STATUS = re.compile(r"(?<![\w-])FAILED(?::| -) \S")
# a line headed by a C function's name, as ggml and llama.cpp write their own (LOG_ERR "%s: ...")
_C_FUNCTION = re.compile(r"(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|main): ")
# a native library's own error line, its lower-case name heading it ("rocblaslt error: Could not load
# .../TensileLibrary_lazy_gfx942.dat"; a sentence's "the error: ..." is not one), or behind the bracketed source file
# that tags its lines, the error a code ("[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  file=... line=172"):
# what failed, said before the engine's record of it
# or a program's argument parser refusing its command line (argparse's "vllm: error: unrecognized arguments: --task
# embedding", a subcommand's "vllm serve: error: argument --x: invalid choice", a program named in two words, "TRL CLI:
# error: argument command: invalid choice: 'vllm-serve'", under its usage lines)
_LIBRARY_ERROR = re.compile(r"(?!(?:the|this|that|an?|my|same|following|no|any|which|what|an?other)\b)"
                            r"(?:[a-z][a-z0-9_.+-]{1,30} error: [A-Z]|\[[\w.-]{1,40}\.(?:cpp|cc|cu|c|h)\] [a-z]\w{1,30} error: \d|"
                            r"[\w.-]{1,40}(?: [A-Za-z][\w-]{1,30})?: error: (?:unrecognized arguments|argument |"
                            r"the following arguments are required)|"
                            # Rust's clap refusing a command line (uv's "error: unexpected argument '--torch-backend'
                            # found", TGI's launcher's "error: invalid value 'True' for '--disable-custom-kernels'")
                            r"error: (?:unexpected argument|invalid value) ')|"
                            # the container engine's client relaying its daemon's refusal ("docker: Error response from
                            # daemon: pull access denied for llm-nim, repository does not exist ...")
                            r"(?:docker|podman|nerdctl): Error response from daemon: |"
                            # CANN's error manager reporting what failed on an Ascend NPU, its code then the process
                            # ("EZ9999: [PID: 14897] 2025-07-23-10:35:42.381.401 The error from device(chipId:7, ...),
                            # ... there is an aivec error exception"), under a warning's "EZ9999: Inner Error!"
                            r"E[A-Z0-9]\d{4}: \[PID: \d+\] |"
                            # (or its newer shape, the error's name and code after the process and time: "[PID: 749]
                            # 2025-12-29-03:16:15.787.356 Get_Socket_Timeout(EI0006): Getting socket times out.")
                            r"(?:\[PID: \d+\] \S+ )?[A-Z]\w*\(E[A-Z0-9]\d{4}\): |"
                            # ggml's and llama.cpp's C functions, each line headed by the function's name (LOG_ERR
                            # "%s: ...", no level): "llama_model_load: error loading model: ...", "ggml_gallocr_reserve_n:
                            # failed to allocate CUDA0 buffer of size 1056964608", "main: error: unable to load model"
                            rf"{_C_FUNCTION.pattern}(?:error\b|failed\b|unable to\b)|"
                            # a program's own "error: ..." (Slurm's error(), Rust's and Go's command lines), behind the
                            # names of the programs that relay it ("slurmstepd: error: Detected 1 oom_kill event",
                            # "qdo-srun.py: srun#64: slurmstepd: error: ...", ollama's "parse: error parsing grammar")
                            r"(?:(?!(?:note|warning|hint|info|debug|tip):)[a-z][\w.#-]{2,30}: ){1,3}error:? (?=\S)|"
                            r"error: (?=\S)")
# a record whose format writes no level (SGLang's "[2026-05-21 16:07:41 DP6 TP6] Failed to update parameter online:
# ...", its logger.error as its logger.info; "Some requests fail to receive KV Cache transfer done signal") stating a
# failure: the engine's own error record
# ...), or one that ends on the exception it caught (SGLang's loader: "Corrupted safetensors file detected: /x.safetensors
# - SafetensorError: Error while deserializing header")
_UNLEVELLED_FAILURE = re.compile(r"Failed to [a-z]+ \S|[^\n]{0,60}?\b(?:fail|fails|failed) to [a-z]+ \S|"
                                 # (SGLang's "[2025-06-23 07:22:00] Error in parse_streaming_increment: Expecting value")
                                 r"Error (?:in|while|during|when|processing) [^:\n]{1,80}: \S|"
                                 r"[^\n]{0,300}? - (?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): \S")
# the same record pasted without its prefix, at the head of a line of its own: read only when it gives its reason
# after a colon (slime's "Failed to update parameter online: start (256) + length (256) exceeds dimension size"); and
# the "Error: <why>" a Rust program's main (candle, TGI's launcher, dynamo), Go's cobra or a shell tool ends with
# (and an application's "Error <doing what>: <why>", LM Studio's "Error when loading model: ValueError: Model type x not
# supported.")
# (or a CUDA sample's "Failed to allocate device vector A (error code unknown error)!", a GPU validator's check)
_PASTED_FAILURE = re.compile(r"Failed to [a-z]+ [^:\n]{0,80}(?:: \S|\(error code )|Error(?: [a-z][\w ]{2,40})?: \S")


# a native library's FATAL severity in the bracketed tags heading its line (TurboMind's "[TM][FATAL] comm\device_comm.cc
# (28): Check failed: ...", "[FATAL] ..."), or heading it bare (a C++ runtime's "FATAL: exception not rethrown" just
# before "Aborted (core dumped)"): the record a process aborts after
_FATAL_TAG = re.compile(r"(?:\[[\w.-]{1,20}\])*\[FATAL\] |FATAL: ")


def error_level(parsed: LogLine, msg: str) -> bool:
    """The line is a record at ERROR or CRITICAL level: the parser's level, or, for a format it does not
    know, the level word in the record's head (Python logging's "%(asctime)s - %(name)s - ERROR - ..." as
    gpustack writes it), as an error line with error words is read (see :func:`log_event`), a FATAL tag (:data:`_FATAL_TAG`), a FAILED
    status there (:data:`_FAILED_STATUS`), a native library's own error line (:data:`_LIBRARY_ERROR`), or a failure
    stated by a record of a format that writes no level (:data:`_UNLEVELLED_FAILURE`)."""
    if parsed.level is not None:
        return parsed.level in ("ERROR", "CRITICAL")
    if parsed.time is not None and parsed.format != "plain" and _UNLEVELLED_FAILURE.match(msg) is not None:
        return True
    if parsed.time is None and _PASTED_FAILURE.match(msg) is not None:  # (a compose service's prefix stripped too)
        return True
    return (level_word(msg, 48) in ("ERROR", "CRITICAL", "[E]") or _FAILED_STATUS.search(msg, 0, 80) is not None
            or _LIBRARY_ERROR.match(msg) is not None or _FATAL_TAG.match(msg) is not None)


# a CANN error code heading its line ("Memory_Allocation_Failure(EL0004): Failed to allocate memory.",
# "EJ0001: [PID: 468348] ... Failed to initialize"): what failed on an Ascend NPU, where the error block's first lines
# are often advice ("Note: ASCEND_LAUNCH_BLOCKING=1 will force ops ...") or PTA's "ERR00100 PTA call acl api failed"
_CANN_CODE = re.compile(r"(?:\b[A-Z]\w*\(|(?<![\w(]))E[A-Z0-9]\d{4}\)?: \S")


def coded_error(first: LogEvent | None, parsed: LogLine, msg: str, line_no: int) -> bool:
    """The error line ``msg`` (line ``line_no``) holds the CANN error code of the error block whose first error line
    is ``first`` (at most 4 lines before it), which has none: it says what failed, so it takes ``first``'s place."""
    return (first is not None and line_no - first.line <= 4 and "E" in msg and _CANN_CODE.search(msg) is not None
            and _CANN_CODE.search(first.text) is None and error_level(parsed, msg))


# an HTTP server's record of a 503 it answered (tower_http's TraceLayer logs every 5xx at ERROR: "response failed
# classification=Status code: 503 Service Unavailable ... uri=/live", a readiness probe answered while the model
# loads): not ready yet, not a failure (a 500 is one: a request failed inside)
_RESPONSE_RECORD = re.compile(r"\bresponse failed classification=Status code: 503\b")


# the last resort's other words for a failure where no record says ERROR: a server's access line for a request it
# failed inside (uvicorn's '"POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error'; a 503 is a server not
# ready yet), a server's own "Internal server error: <why>" (dynamo's frontend), a program refusing an argument it
# does not know (llama-box's "Unknown argument: --origin-rpc-server-main-gpu"), a gateway's proxy (GATEWAY_FAILURE), vLLM
# v0 saving the inputs of a model execution that failed, at INFO, before it reports why ("Writing input of failed
# execution to /tmp/err_execute_model_input_20241011-065131.pkl...": the why, when the window has it, is the root)
_QUIET_FAILURE = re.compile(r'"[A-Z]+ \S+ HTTP/[\d.]+" 500\b|\b[Ii]nternal [Ss]erver [Ee]rror: \S|'
                            + GATEWAY_FAILURE + "|"
                            r"^(?:error: )?[Uu]nknown (?:argument|option)s?:? ['\"]?-|\bWriting input of failed execution\b")


def quiet_failure(msg: str) -> bool:
    """The line says a failure in :data:`_QUIET_FAILURE`'s words (a plain ``in`` first: this runs on every line
    until a log's first error)."""
    return ('" 500' in msg or "nternal" in msg or "nknown" in msg or "upstream" in msg or "failed execution" in msg) \
        and _QUIET_FAILURE.search(msg) is not None


# rich-click's and typer's box around a command line's usage error ("╭─ Error ───╮" over "│ Missing command.   │"): the
# program refused its arguments and never started
_ERROR_BOX_TOP = re.compile(r"╭─+ Error ─+╮")


def _boxed_error(msg: str, recent: Iterable[str]) -> str | None:
    """The first line inside an "Error" box (``msg``, its rails already stripped, under the box's top border, the
    record before it in ``recent``), or None."""
    if not isinstance(recent, Sequence) or len(recent) < 2 or "╭─" not in recent[-2] or not msg.strip():
        return None
    return msg.strip() if _ERROR_BOX_TOP.fullmatch(recent[-2].strip()) is not None else None


# CANN's error manager heading a device error with "EH9999: Inner Error!", then saying what failed under the same code
# ("EH9999: [PID: 854] 2025-05-27-09:53:02.440.058 [Init][PlatformInfo]init runtime platform info failed, SocVersion =
# Ascend910B2[FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]")
_INNER_HEAD = re.compile(r"\b(E[A-Z0-9]\d{4}): Inner Error!?$")
_CANN_DETAIL = re.compile(r"\b(E[A-Z0-9]\d{4}): \[PID: \d+\] (?:\d{4}-\d\d-\d\d-[\d:.]+ )?(.+?)(?:\[FUNC:.*)?$")


def _cann_detail(event: LogEvent, msg: str, line_no: int) -> LogEvent | None:
    """``event`` (a CANN "Inner Error!" head at most 3 lines above) with the words of the line ``msg`` that says, under
    the same code, what failed; None when ``msg`` is no such line."""
    if line_no - event.line > 3 or "Inner Error" not in event.text or "[PID: " not in msg:
        return None
    head, detail = _INNER_HEAD.search(event.text.rstrip()), _CANN_DETAIL.search(msg.rstrip())
    if head is None or detail is None or detail.group(1) != head.group(1) or not detail.group(2).strip():
        return None
    return replace(event, text=detail.group(2).strip()[:400])


# a program's usage line (argparse's, a C program's "usage: ./llama-box [options]"), and the words of a refusal of its
# command line printed just above it ("Invalid argument: --chat-template, use one of the built-in templates")
_USAGE = re.compile(r"usage: \S+ \[")
_REFUSAL = re.compile(r"[Ee]rror|[Ii]nvalid|[Uu]nknown|[Uu]nrecognized|[Mm]issing|required|not allowed")
# a record's header with nothing after it ("ERROR 04-29 00:53:54"): its text went to other lines, or nowhere; a log
# that ends in one was cut inside the record (Extractor.finish), one in mid-log says nothing
_BARE_HEADER = re.compile(r"(?:ERROR|CRITICAL)[\d\s:.,/-]*")


def first_error(first: LogEvent | None, parsed: LogLine, msg: str, line_no: int, phase: str,
                server: str, recent: Iterable[str] = ()) -> LogEvent | None:
    """The log's first error line (the last resort: see ``Extractor.finish``) once the line ``msg`` (number ``line_no``,
    not blank, no other event) is read: this line when it is the first at an error level or the first to name a CUDA
    error without one (vLLM's cumem allocator: "CUDA Error: out of memory at .../cumem_allocator.cpp:56"), or when it holds the CANN
    code of the error block ``first`` heads (:func:`coded_error`); ``first`` with this line joined when ``first`` ended
    on a colon just above it and this line is indented under it, the detail it announced (torch's "Error(s) in loading
    state_dict for Linear:" / "<tab>size mismatch for bias: ..."), or with the words this line says under the code of
    a CANN "Inner Error!" ``first`` is (:func:`_cann_detail`); else None: ``first`` stays. ``recent``: as for
    :func:`log_event`, the records before it kept as its context."""
    if first is not None and (detail := _cann_detail(first, msg, line_no)) is not None:
        return detail
    if first is not None and (placed := _caller_step(first, parsed, msg, line_no)) is not None:
        return placed  # its caller's error line just below it names the step
    if first is not None and first.text.startswith("Error: ") and line_no - first.line <= 8 and (
            msg.strip() == "Caused by:" or ("Caused by:" in first.text and msg[:1] in " \t" and msg.strip())):
        # Rust's anyhow under a program's "Error: ...": the errors it came of, the deepest last (TEI's "Error: Could not
        # create backend", then "Caused by:" and "    Could not start backend: Runtime compute cap 52 is not ...")
        return replace(first, text=f"{first.text} {msg.strip()}"[:400])
    if (first is not None and first.text.startswith("usage: ") and line_no - first.line <= 40
            and error_level(parsed, msg)):
        return replace(first, line=line_no, text=msg.strip()[:400])  # argparse's error under the usage it printed
    if first is None and msg.startswith("usage: ") and _USAGE.match(msg):
        # a program printing its usage as it refuses its command line: the line it said why on just above, else this
        recent = tuple(recent)
        said = recent[-2].strip() if len(recent) > 1 and _REFUSAL.search(recent[-2]) else msg.strip()
        return LogEvent("error_line", line_no, said[:400], parsed.rank, phase if phase not in ("", "unknown")
                        else "startup_other", server, recent[:-1])
    if (first is None and ((error_level(parsed, msg) and not _BARE_HEADER.fullmatch(msg.strip()))
                           or quiet_cuda_error(parsed, msg, line_no, phase, server) or quiet_failure(msg))
            and not ("classification=" in msg and _RESPONSE_RECORD.search(msg))) or coded_error(first, parsed, msg, line_no):
        return LogEvent("error_line", line_no, msg.strip()[:400], parsed.rank, phase, server, tuple(recent)[:-1])
    if first is not None and line_no == first.line + 1 and msg[:1] in (" ", "\t") and first.text.endswith(":"):
        return replace(first, text=f"{first.text} {msg.strip()}"[:400])
    return None


def log_event(parsed: LogLine, msg: str, line_no: int, phase: str, server: str,
              recent: Iterable[str] = ()) -> LogEvent | None:
    """The telling log line (OOM kill, Xid, fatal signal, NCCL warning...) this line is, if any.

    ``phase`` is the timeline's; the words of the line are weighed only if it becomes the root cause.
    ``recent``: the log's latest records, this line last (the event keeps those before it)."""
    if (said := _boxed_error(msg, recent)) is not None:  # a usage error: before anything started, unless the timeline says
        return LogEvent("error_line", line_no, said, parsed.rank, "startup_other" if phase in ("", "unknown") else phase,
                        server, tuple(recent)[:-1])
    if '"abort"' in msg and (aborted := _ABORTED_RESPONSE.search(msg)) is not None:
        said = aborted.group(1).replace('\\"', '"')[:400]
        return LogEvent("error_line", line_no, said, parsed.rank, phase, server, tuple(recent)[:-1])
    if "code" in msg and "essage" in msg and (body := _SERVER_ERROR_BODY.search(msg)) is not None and (
            "5" in (body.group("c1"), body.group("c2")) or parsed.level not in ("INFO", "DEBUG", "TRACE")):
        said = (body.group("m1") or body.group("m2")).replace('\\"', '"')
        # a server's answer to a request: serving, unless the timeline says which request (the warm-up's)
        return LogEvent("error_line", line_no, said, parsed.rank, "serving" if phase in ("", "unknown") else phase,
                        server, tuple(recent)[:-1])
    if parsed.level is None and parsed.format == "plain" and ("`" in msg or "'" in msg or '"' in msg):
        recent = tuple(recent)
        said = prose_failure(msg, recent)
        if said is not None:  # prose has no level: what it quotes as thrown is the error line
            return LogEvent("error_line", line_no, said, parsed.rank, phase, server, recent[:-1])
    if "exitcode" in msg and _ELASTIC_EXIT.fullmatch(msg) is not None:
        before = tuple(recent)[:-1]
        if any(_ELASTIC_ROOT in r for r in before[-6:]):
            return LogEvent("process_died", line_no, msg.strip(), parsed.rank, phase, server, before)
    level: str | None = ""
    for kind, m in event_matches(msg):
        if (kind == "error_line" and m.group("lost") is None and m.group("any") is None
                and _FAILED_EXECUTION not in msg):
            # error words count only on an error line
            if level == "":
                level = parsed.level
                if level is None:
                    word = level_word(msg, 48)
                    level = "ERROR" if word in ("ERROR", "[E]", "CRITICAL") else None
            if level not in ("ERROR", "CRITICAL"):
                continue
        text = msg.strip()  # the line without its log prefixes: what it says, not who printed it
        if len(text) > 400:  # a pasted line that lost its newlines: keep the part that matters,
            # the failure it names first (Ray's "A worker died or was killed ..." before its hints
            # that "the process was killed by the OOM killer")
            m = min((n for _, n in event_matches(msg, after=kind)), key=lambda n: n.start(), default=m)
            text = "…" + msg[max(0, m.start() - 120): m.end() + 200].strip() + "…"
        # the timeline's phase; the words of the line are weighed only if it becomes the root cause
        rank = parsed.rank
        if rank is None and "[rank" in msg[:80]:  # torch's "[rankN]:" behind a prefix the parser does not know
            found = _TORCH_RANK.search(msg, 0, 80)
            rank = "rank" + found.group(1) if found else None
        if rank is None and "Rank " in msg:  # a line without a rank prefix (one wrapped off its own)
            found = _C10D_RANK.search(msg)
            rank = "rank" + found.group(1) if found else None
        if rank is None and "ank " in msg:
            found = _ON_RANK.search(msg)
            rank = "rank" + found.group(1) if found else None
        return LogEvent(kind, line_no, text, rank, phase, server, tuple(recent)[:-1])
    return None


def lost_type(event: LogEvent) -> bool:
    """An error line of an engine's own failure words (:data:`_LEVEL_FREE`): an exception whose type the
    paste lost, so it counts as a bare exception line would, in line order with the other failures."""
    return event.kind == "error_line" and any(w in event.text for w in _LEVEL_FREE)


# pybind11's text of a Python exception raised under C++ (error_already_set::what(): "AttributeError: 'AsyncLLM' object
# has no attribute 'engine'\n\nAt:\n  /opt/.../model.py(365): _setup_metrics"), as a C++ record quotes it, its line
# breaks escaped or not (Triton's Python backend: "Failed to initialize Python stub: <that text>")
_PYBIND_RAISED = re.compile(rf"(?:^|[\s:\"'])(?P<type>{RAISED_NAME}): (?P<message>.+?)(?:\\n|\n)+At:(?:\\n|\n)|"
                            # Triton's own words before it, also when the window cuts the record before "At:"
                            rf"Python stub: (?P<type2>{RAISED_NAME}): (?P<message2>(?:[^\\\n]|\\[^n])+)")


# an error record naming the exception a call raised, its type and message quoted whole (MindIE's "Failed to get vocab
# size from tokenizer wrapper with exception: ModuleNotFoundError: No module named 'mindie_llm'")
# (or an application's own words before the exception it reports: "Error when loading model: ValueError: ...")
_RECORD_RAISED = re.compile(rf"(?:\bwith exception|^Error [a-z][a-z ]{{2,40}}): (?P<type>{RAISED_NAME}): (?P<message>\S.*)")


def line_cause(e: LogEvent) -> tuple[Literal["exception", "log_line"], str | None, str]:
    """(kind, exception type, message) of a root cause a log line gives: the Python exception an error record
    quotes in pybind11's words or after "with exception: ", else the line itself."""
    if e.kind != "error_line":
        return "log_line", None, e.text
    m = _PYBIND_RAISED.search(e.text)
    if m is not None:
        return "exception", m.group("type") or m.group("type2"), (m.group("message") or m.group("message2")).strip()
    r = _RECORD_RAISED.search(e.text)
    return ("exception", r.group("type"), r.group("message").strip()) if r is not None else ("log_line", None, e.text)


# CUDA errors that poison the context: every later call in the process fails, whatever it says
_STICKY_CUDA = re.compile(r"illegal memory access|misaligned address|unspecified launch failure|illegal instruction")


def cuda_cause(message: str, line: int, events: Sequence[LogEvent]) -> LogEvent | None:
    """The line that says which CUDA error a failure (its message, its line) came after: the kernel's
    own assertion when the failure names a device-side assert; NCCL's warning of the CUDA failure when the failure is
    NCCL's "unhandled cuda error" ("init.cc:1582 NCCL WARN Cuda failure 'CUDA driver version is insufficient ...'"
    before "Failed, NCCL error .../nccl_utils.cc:296 'unhandled cuda error ...'"); else an error line naming a sticky
    CUDA error (an illegal memory access...) printed in the 12 lines before a failure that does not; for an
    "unspecified launch failure" (a kernel that trapped), the error line it printed in the 12 lines before ("DeepEP
    dispatch NVL receiver timeout, ...")."""
    if "device-side assert" in message:
        return next((e for e in events if e.kind == "device_assert"), None)
    if "unhandled cuda error" in message:  # ncclUnhandledCudaError: NCCL warned of the CUDA call's own error just before
        return next((e for e in reversed(events) if e.kind == "nccl_warn" and 0 < line - e.line <= 4
                     and _NCCL_CUDA.search(e.text) is not None), None)
    if "unspecified launch failure" in message:  # what a kernel's trap leaves: its own report just before says why
        return next((e for e in reversed(events) if e.kind == "error_line" and 0 < line - e.line <= 12
                     and not _STICKY_CUDA.search(e.text)), None)
    if _STICKY_CUDA.search(message):
        return None
    return next((e for e in events if e.kind == "error_line" and 0 < line - e.line <= 12 and _STICKY_CUDA.search(e.text)),
                None)


# a CUDA error as the runtime or a kernel's own check prints it, with no level ("CUDA error (.../flash_fwd_combine_launch_
# template.h:60): an illegal memory access was encountered", "Failed: Cuda error .../custom_all_reduce.cuh:164 'invalid
# argument'", "no kernel image is available for execution on the device")
_QUIET_CUDA = re.compile(r"[Cc][Uu][Dd][Aa] (?:runtime )?[Ee]rror|no kernel image is available|illegal memory access|"
                         r"ROCm error|HIP error")
_DEATHS = ("process_died", "fatal_signal")


def quiet_cuda_error(parsed: LogLine, msg: str, line_no: int, phase: str, server: str) -> LogEvent | None:
    """The line as an error line when it names a CUDA error without a level: kept aside by the scanner, and an
    event only if a process's death or a fatal signal follows it (see :func:`death_cause`)."""
    if parsed.level is not None or not ("CUDA" in msg or "Cuda" in msg or "kernel image" in msg or "ROCm" in msg
                                        or "HIP" in msg):
        return None
    return LogEvent("error_line", line_no, msg.strip()[:400], parsed.rank, phase, server) if _QUIET_CUDA.search(msg) else None


# NCCL's own warning that a CUDA call it made failed ("init.cc:1582 NCCL WARN Cuda failure 'CUDA driver version is
# insufficient for CUDA runtime version'"): the CUDA error, in NCCL's words
_NCCL_CUDA = re.compile(r"NCCL WARN (?:Cuda failure|CUDA error)\b")


def death_cause(line: int, events: Sequence[LogEvent]) -> LogEvent | None:
    """The error line printed in the 2 lines before a process's death or fatal signal at ``line`` (vLLM's "Worker proc
    ... died unexpectedly", a shell's "Aborted (core dumped)"), or NCCL's warning of a CUDA failure there: what the
    process died of, the death its consequence; else the first watchdog timeout before it (:data:`_WATCHDOG_TIMEOUT`);
    else, as the last event before it in the 40 lines above, a failure an engine prints at any level (:data:`_ANY_LEVEL`:
    ggml's "CUDA error: an illegal memory access was encountered", then the backtrace it aborts with; glibc's "*** buffer
    overflow detected ***", then the abort's reports)."""
    if not any(e.line == line and e.kind in _DEATHS for e in events):
        return None
    # (the same death reported again by another handler just before -- absl's "*** SIGABRT received ...", Ray's copy of
    # it -- is not its cause: look past them)
    last = next((e for e in reversed(events) if e.line < line and e.kind not in _DEATHS), None)
    return next((e for e in reversed(events) if 0 < line - e.line <= 2 and (
        e.kind == "error_line" or (e.kind == "nccl_warn" and _NCCL_CUDA.search(e.text) is not None))), None) or next(
        (e for e in events if e.line < line and e.kind == "nccl_warn" and _WATCHDOG_TIMEOUT.search(e.text)), None) or (
        last if last is not None and last.kind == "error_line" and line - last.line <= 40
        and any(w in last.text for w in _ANY_LEVEL) else None)


# c10d's watchdog timing out a collective: it then tears the process down (TORCH_NCCL_ASYNC_ERROR_HANDLING), so a death
# reported after it, however much later (Ray's raylet: "A worker died or was killed ..."), is its consequence
_WATCHDOG_TIMEOUT = re.compile(r"Watchdog caught collective operation timeout|watchdog got stuck|Heartbeat monitor timed out")


# the first frame of a numbered native backtrace, and the words that make the line before it an error report
_BACKTRACE_TOP = re.compile(r"\s*1\s+0x[0-9a-fA-F]+\s")
_ERROR_WORDS = re.compile(r"[Ee]rror|[Ff]ailed|[Ee]xception|[Aa]ssert")


def backtrace_head(prev: tuple[int, str], msg: str, line_no: int, rank: str | None, phase: str,
                   server: str) -> LogEvent | None:
    """The line just before a numbered native backtrace's first frame (``1  0x7f55... f(...) + 78``), as an
    error line, when it names an error: an application that logs an engine's error with the C++ stack
    under it ("Failed to predict: Encountered an error in forwardAsync function: ..."), whatever its level."""
    at, text = prev
    if at != line_no - 1 or _BACKTRACE_TOP.match(msg) is None or _NUM_FRAME.match(msg) is None:
        return None
    return LogEvent("error_line", at, text.strip(), rank, phase, server) if _ERROR_WORDS.search(text) else None


def cause_above(event: LogEvent, quiet: LogEvent | None, first: LogEvent | None, events: Sequence[LogEvent],
                line_no: int, stated: LogEvent | None = None) -> LogEvent | None:
    """What the failure ``event`` (on line ``line_no``) came after, printed just above it with no level and not an event
    itself: for a process's death, the CUDA error ``quiet`` named, or the log's first error line ``first`` when nothing
    else was reported before it and its words say a failure (llamafile's "ggml_gallocr_reserve_n: failed to allocate
    CUDA0 buffer of size ...", then "error: Uncaught SIGSEGV"; not a crash handler's own frame at an error level), or
    else the failure a line with no level ``stated`` (:func:`workbench.tracebacks.plain.stated_failure`: "Could not load library
    libcudnn_ops_infer.so.8", then "Aborted (core dumped)"); for
    an error line of a C function's, ``first`` when it is the callee's just above it (llama.cpp prints the innermost
    failure first, then each caller's: "gguf_init_from_file: failed to open GGUF file '...'", then "llama_model_load:
    error loading model: ..."); else None."""
    if event.kind in _DEATHS:
        cause = quiet or (first if first is not None and not events and _ERROR_WORDS.search(first.text) else None) \
            or (stated if not events else None)
        return cause if cause is not None and line_no - cause.line <= 2 else None
    if (event.kind == "error_line" and first is not None and 0 < line_no - first.line <= 2
            and first not in events and _C_FUNCTION.match(first.text) and _C_FUNCTION.match(event.text)):
        return first
    return None


def process_header(last: tuple[int, str] | None, phase: str, server: str, recent: Iterable[str]) -> LogEvent | None:
    """A log's last line that is not blank (its number, its text) as a dead process when it is
    multiprocessing's "Process <name>:", the header printed above the traceback of a process whose
    target raised (the log cut before the stack, maybe before the colon)."""
    if last is None:
        return None
    parsed = parse_line(last[1])
    text = parsed.message.strip()
    if _PROCESS_CUT.fullmatch(text) is None:
        return None
    return LogEvent("process_died", last[0], text, parsed.rank, phase, server, tuple(recent))


# a record that is only its header at an error level: a level word with the date, time and brackets around it
# ("ERROR 04-29 00:53:54", "[2025-01-02 10:00:00] ERROR"), or cut inside its location ("ERROR 10-23 08:05:13 [multiproc_")
_HEADER_ONLY = re.compile(r"[\[(]?[\d\-:./T, ]*[\])]?\s*(?:ERROR|CRITICAL)\b[\s\d\-:./T,\[\]]*(?:\[[\w.\-]*(?::\d*)?)?")


def cut_record(last: tuple[int, str] | None, phase: str, server: str, recent: Iterable[str]) -> LogEvent | None:
    """A log's last line that is not blank (its number, its text) as an error line when it is a record at ERROR or
    CRITICAL level cut right after its header or inside its first word ("[core.py:825] Ru"): the log ends where an
    error record began, what it said lost."""
    if last is None:
        return None
    parsed = parse_line(last[1])
    text = parsed.message.strip()
    if parsed.level is not None:  # a format the parser knows: its message is empty, or cut in its first word
        cut = cut_error_record(parsed.level, text)
    else:  # one it does not: the line is the header alone
        cut = _HEADER_ONLY.fullmatch(text) is not None
    if not cut:
        return None
    return LogEvent("error_line", last[0], text, parsed.rank, phase, server, tuple(recent))


def native_enough(frames: list[LogEvent]) -> bool:
    """Whether the native frames read outside any traceback (the first three kept) make a backtrace: three frames, or
    c10's head "Exception raised from f at file:N (most recent call first):" and a frame under it (a torch error
    whose message and exception line the window cut off above, its frame list cut below)."""
    return len(frames) >= 3 or (len(frames) == 2 and frames[0].text.startswith("Exception raised from "))


# NCCL's return-code trace under its warning ("[0] NCCL INFO init.cc:1402 -> 6", "bootstrap.cc:701 -> 6",
# "transport/shm.cc:551 -> 2"): the calls the error came back through.  Through the communicator's set-up -- init.cc,
# its bootstrap, the transports' connect (transport.cc), the shared-memory, P2P and NVLS transports' setup, the
# topology search (graph/) -- the warning is an init failure; through proxy.cc, enqueue.cc or the network transport's
# progress it is a collective's, at run time, and says no phase
_NCCL_INIT_TRACE = re.compile(r"NCCL INFO (?:init|bootstrap|transport|transport/(?:shm|p2p|nvls)|graph/\w+)\.cc:\d+ -> \d")


def follow(events: list[LogEvent], parsed: LogLine, msg: str, line_no: int) -> None:
    """Put the latest events in the step the line ``msg`` just below them names, where the timeline gave them none:
    NCCL's return trace of its warnings through the communicator's set-up (``nccl_init``, each warning of the last
    twelve lines), or a caller's error line within two lines of the latest event naming its step
    ("ggml_backend_cuda_buffer_type_alloc_buffer: ... cudaMalloc failed: out of memory", then "llama_kv_cache_init:
    failed to allocate buffer for kv cache")."""
    last = events[-1]
    if line_no - last.line > 12:
        return
    if " -> " in msg and _NCCL_INIT_TRACE.search(msg) is not None:
        for i in range(len(events) - 1, -1, -1):
            e = events[i]
            if line_no - e.line > 12:
                break
            if e.kind == "nccl_warn" and e.phase in ("", "unknown"):
                events[i] = replace(e, phase="nccl_init")
    elif last.kind == "error_line" and (placed := _caller_step(last, parsed, msg, line_no)) is not None:
        events[-1] = placed


def _caller_step(said: LogEvent, parsed: LogLine, msg: str, line_no: int) -> LogEvent | None:
    """``said``, an error line the timeline gave no phase, in the step its caller's error line ``msg`` names within two
    lines below it ("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size ...", then
    "llama_kv_cache_init: failed to allocate buffer for kv cache"); else None."""
    if (line_no - said.line <= 2 and said.phase in ("", "unknown") and error_level(parsed, msg)
            and (step := text_evidence((msg,))[0]) is not None):
        return replace(said, phase=step)
    return None
