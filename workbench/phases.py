"""Startup phases of an SGLang or vLLM server, read from its log lines.

A server start walks through ``nccl_init`` -> ``weight_loading`` -> ``kv_cache_alloc`` ->
``cuda_graph_capture`` -> ``warmup`` -> ``serving``. ``startup_other`` covers the gaps
between the named steps (config parsing, torch.compile, scheduler setup) and ``unknown``
is where no line has told us anything yet.

:class:`PhaseTracker` is fed lines one at a time (the live "watch a start" feature feeds
it journal lines as they arrive) and reports transitions, the current phase, whether the
server declared itself ready, and the first failure line of the current start.
:func:`timeline` runs trackers over a whole log and returns DataFrame-ready rows;
:func:`track` returns the trackers themselves (one per server in the log).
:func:`phase_from_frames` names the phase a traceback's stack belongs to.

Rules, on the message once :func:`workbench.logformats.parse_line` removed the prefixes
(server_logs.md sections 2, 6 and 7):

* a "begin" line (``Load weight begin``, ``Capture draft cuda graph begin``) always moves
  to its phase, even backwards (a draft model loads after the target's graphs);
* "progress" and "end" lines only move forwards, so a lagging rank's ``Load weight end``
  does not pull the phase back from ``cuda_graph_capture``;
* a start line (``server_args=``, ``Initializing a V1 LLM engine``, ``Init torch distributed
  begin``...) after the server was ready or had failed is a restart: ``ready`` and
  ``failure`` reset and ``restarts`` counts up;
* batch / request lines mean ``serving`` only when nothing else is known (a window that
  begins mid-run), since SGLang's own warmup request logs a ``Prefill batch.`` too;
* ``Uvicorn running on`` / ``Application startup complete`` mean ``warmup`` for SGLang
  (its warmup request follows) and ``serving`` for vLLM; a vLLM-shaped line anywhere
  before decides which.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from workbench.logformats import LogLine, parse_line, parse_time

__all__ = [
    "PHASES",
    "PhaseFailure",
    "PhaseTracker",
    "PhaseTransition",
    "phase_from_frames",
    "phase_of_message",
    "timeline",
    "track",
]

PHASES: tuple[str, ...] = (
    "nccl_init",
    "weight_loading",
    "kv_cache_alloc",
    "cuda_graph_capture",
    "warmup",
    "serving",
    "startup_other",
    "unknown",
)


@dataclass(frozen=True)
class PhaseTransition:
    """The server entered ``phase`` at ``started_at`` (None when the line had no time)."""

    phase: str
    started_at: datetime | None
    line: str
    line_no: int
    restart: bool = False


@dataclass(frozen=True)
class PhaseFailure:
    """The first line of the current start that says something failed, and the phase then."""

    phase: str
    at: datetime | None
    line: str
    line_no: int


# (pattern, phase, order, kind). Order places a rule on the startup path; kinds:
# start (a new start), begin (may go backwards), progress/end (forwards only),
# ready (declared ready), batch (serving, only when nothing else is known),
# http_up (warmup for SGLang, ready for vLLM). Each pattern is tried only when one of
# the literal words it needs is in the line (plain ``in`` tests are much cheaper than
# a regex search over every line).
_RULES: tuple[tuple[str, str, float, str], ...] = (
    (r"server_args=|Initializing an? (?:V1 )?LLM engine|vLLM API server version|non-default args:", "startup_other", 0, "start"),
    (r"Init torch distributed begin", "nccl_init", 1, "start"),
    (r"is assigned as DP rank|world_size=\d+ rank=\d+ local_rank=|vLLM is using nccl==", "nccl_init", 1, "progress"),
    (r"Init torch distributed ends", "startup_other", 1.5, "end"),
    (r"Load weight begin|Starting to load model", "weight_loading", 2, "begin"),
    (r"Loading (?:safetensors|pt|bin) checkpoint shards|Loading weights:", "weight_loading", 2, "progress"),
    (r"Load weight end", "kv_cache_alloc", 3, "end"),
    (r"Loading (?:model )?weights took|Model loading took", "startup_other", 2.5, "end"),
    (r"KV Cache is allocated|Memory pool end|Available KV cache memory|GPU KV cache size|# GPU blocks:|Maximum concurrency for|Memory profiling takes", "kv_cache_alloc", 3, "progress"),
    (r"Capture (?:draft (?:extend )?)?cuda graph begin|Capture [\w ]{0,40}CUDA graph begin", "cuda_graph_capture", 4, "begin"),
    (r"Capturing CUDA graph|Capturing batches|Capture cuda graph bs", "cuda_graph_capture", 4, "progress"),
    (r"Capture (?:draft (?:extend )?)?cuda graph end|Capture [\w ]{0,40}CUDA graph end", "startup_other", 4.5, "end"),
    (r"max_total_num_tokens=", "startup_other", 4.6, "progress"),
    (r"Graph capturing finished", "warmup", 5, "end"),
    (r"init engine \(profile, create kv cache, warmup model\) took", "startup_other", 5.5, "end"),
    (r"Uvicorn running on|Application startup complete", "warmup", 5, "http_up"),
    (r"Starting vLLM (?:API )?server|fired up and ready to roll", "serving", 6, "ready"),
    (r"Decode batch[.,]? |Prefill batch[.,]? |Avg prompt throughput:|\"(?:POST|GET) /v1/", "serving", 6, "batch"),
)
_COMPILED = tuple(re.compile(pat) for pat, *_rest in _RULES)
# words one of which every rule needs (checked with ``in`` before any regex runs)
_ANCHORS = ("server_args=", "LLM engine", "vLLM", "non-default", "Init torch", "assigned as DP", "world_size=",
            "Load weight", "Starting to load", "Loading", "Model loading", "KV Cache", "KV cache", "Memory p",
            "GPU blocks", "Maximum concurrency", "Capture", "Capturing", "max_total_num_tokens", "Graph capturing",
            "init engine", "Uvicorn", "Application startup", "fired up", "batch", "Avg prompt", "/v1/")
_FAILURE_RE = re.compile(
    r"hit an exception|Traceback \(most recent call last\)|failed to start|WorkerProc failed|"
    r"died unexpectedly|scheduler (?:is dead|died)|Initialization failed|Received sigquit|SIGQUIT received|"
    r"Engine core initialization failed|CUDA out of memory|OutOfMemoryError|^Killed$|Segmentation fault|"
    r"terminate called after throwing"
)
_FAILURE_ANCHORS = ("exception", "Traceback", "fail", "died", "dead", "sigquit", "SIGQUIT", "out of memory",
                    "OutOfMemory", "Killed", "Segmentation", "terminate called")
_ORDER = {"nccl_init": 1, "weight_loading": 2, "kv_cache_alloc": 3, "cuda_graph_capture": 4, "warmup": 5, "serving": 6}


def phase_of_message(message: str) -> tuple[str, float, str] | None:
    """The (phase, order, kind) rule a message matches, or None."""
    for anchor in _ANCHORS:
        if anchor in message:
            break
    else:
        return None
    for pattern, (_pat, phase, order, kind) in zip(_COMPILED, _RULES, strict=True):
        if pattern.search(message):
            return phase, order, kind
    return None


def _is_failure(message: str) -> bool:
    for anchor in _FAILURE_ANCHORS:
        if anchor in message:
            return _FAILURE_RE.search(message) is not None
    return False


class PhaseTracker:
    """Follows one server's startup, one line at a time.

    ``feed(line, at)`` takes a raw line (or an already parsed :class:`LogLine`) and the
    time it was logged (else the line's own timestamp is used) and returns the
    :class:`PhaseTransition` it caused, if any.
    """

    def __init__(self, *, year: int | None = None) -> None:
        self.year = year
        self.phase = "unknown"
        self.ready = False
        self.failure: PhaseFailure | None = None
        self.restarts = 0
        self.flavor: str | None = None  # "sglang" or "vllm", from the shape of the lines
        self.line_no = 0
        self._order: float = -1
        self._transitions: list[PhaseTransition] = []

    @property
    def transitions(self) -> list[PhaseTransition]:
        """Every transition so far, oldest first."""
        return list(self._transitions)

    @property
    def started_at(self) -> datetime | None:
        """When the current phase began (None if unknown or the line had no time)."""
        return self._transitions[-1].started_at if self._transitions else None

    def feed(self, line: str | LogLine, at: datetime | None = None, *, line_no: int | None = None) -> PhaseTransition | None:
        """Take the next line; ``line_no`` (default: one more than the last) numbers transitions."""
        self.line_no = self.line_no + 1 if line_no is None else line_no
        parsed = line if isinstance(line, LogLine) else parse_line(line)
        msg = parsed.message
        if self.flavor is None:
            if parsed.format == "vllm" or parsed.process is not None:
                self.flavor = "vllm"
            elif parsed.format == "sglang" or (parsed.format == "uvicorn" and parsed.time):
                self.flavor = "sglang"
        rule = phase_of_message(msg) if msg and not msg[0].isspace() else None
        if rule is None:
            if self.failure is None and msg and _is_failure(msg):
                self.failure = PhaseFailure(self.phase, self._time(parsed, at), parsed.raw, self.line_no)
            return None
        phase, order, kind = rule
        restart = False
        if kind == "http_up":
            if self.flavor == "vllm":
                phase, order, kind = "serving", 6, "ready"
        elif kind == "batch":
            if self.phase != "unknown":
                return None
        if kind == "start":
            if self.ready or self.failure is not None:
                restart = True
                self.restarts += 1
                self.ready = False
                self.failure = None
            elif order < self._order and not (self.phase == "startup_other" and self._order <= 1):
                return None
        elif kind != "begin" and order < self._order:
            return None
        if kind == "ready":
            self.ready = True
        self._order = order
        if phase == self.phase and not restart:
            return None
        self.phase = phase
        tr = PhaseTransition(phase, self._time(parsed, at), parsed.raw, self.line_no, restart)
        self._transitions.append(tr)
        return tr

    def _time(self, parsed: LogLine, at: datetime | None) -> datetime | None:
        return at if at is not None else parse_time(parsed.time, year=self.year)


def track(text: str, *, year: int | None = None) -> dict[str, PhaseTracker]:
    """One tracker per server (``"host|service"``, see :func:`timeline`) fed every line of ``text``."""
    trackers: dict[str, PhaseTracker] = {}
    for line_no, raw in enumerate(text.split("\n"), 1):
        parsed = parse_line(raw)
        server = f"{parsed.host or ''}|{parsed.service or ''}"
        tracker = trackers.get(server)
        if tracker is None:
            tracker = trackers[server] = PhaseTracker(year=year)
        tracker.feed(parsed, line_no=line_no)
    return trackers


def timeline(text: str, *, year: int | None = None) -> list[dict[str, Any]]:
    """Phase rows of a whole log, one tracker per server, in line order.

    Columns: server ("host|service" from the journal or compose prefix, "|" when the
    line has neither), phase, started_at, ended_at (the next row of the same server),
    duration_s, line_no (1-based), line, restart, failed_in. A start that failed gets a
    row with phase ``failed`` whose ``failed_in`` names the phase it died in.
    ``pandas.DataFrame(rows)`` gives the table.
    """
    trackers: dict[str, PhaseTracker] = {}
    rows: list[dict[str, Any]] = []
    for line_no, raw in enumerate(text.split("\n"), 1):
        parsed = parse_line(raw)
        server = f"{parsed.host or ''}|{parsed.service or ''}"
        tracker = trackers.get(server)
        if tracker is None:
            tracker = trackers[server] = PhaseTracker(year=year)
        before = tracker.failure
        tr = tracker.feed(parsed, line_no=line_no)
        if tr is not None:
            if tr.restart and before is not None:
                rows.append(_failed_row(server, before))
            rows.append({"server": server, "phase": tr.phase, "started_at": tr.started_at, "line_no": tr.line_no,
                         "line": tr.line, "restart": tr.restart, "failed_in": None})
    for server, tracker in trackers.items():
        if tracker.failure is not None:
            rows.append(_failed_row(server, tracker.failure))
    rows.sort(key=lambda r: r["line_no"])
    last: dict[str, dict[str, Any]] = {}
    for row in rows:
        row["ended_at"] = None
        row["duration_s"] = None
        prev = last.get(row["server"])
        if prev is not None:
            prev["ended_at"] = row["started_at"]
            a, b = prev["started_at"], row["started_at"]
            if a is not None and b is not None and _comparable(a, b):
                prev["duration_s"] = (b - a).total_seconds()
        last[row["server"]] = row
    return rows


def _failed_row(server: str, f: PhaseFailure) -> dict[str, Any]:
    return {"server": server, "phase": "failed", "started_at": f.at, "line_no": f.line_no, "line": f.line,
            "restart": False, "failed_in": f.phase}


def _comparable(a: datetime, b: datetime) -> bool:
    return (a.tzinfo is None) == (b.tzinfo is None)


# Frame rules: (function names, path fragments) -> phase. Checked from the innermost frame
# outwards; the first frame that names a phase decides.
_FRAME_RULES: tuple[tuple[frozenset[str], tuple[str, ...], str], ...] = (
    (frozenset({"capture", "capture_one_batch_size", "_capture_graph", "_capture_one_stream", "init_cuda_graphs",
                "init_device_graphs", "capture_model", "_capture_cudagraphs", "capture_graph",
                "_create_cudagraph", "init_piecewise_cuda_graphs"}), ("cuda_graph_runner.py", "cudagraph", "cuda_graph"), "cuda_graph_capture"),
    (frozenset({"load_weights", "load_model", "_load_weights", "get_model", "load_weights_and_postprocess",
                "_get_all_weights", "safetensors_weights_iterator", "process_weights_after_loading",
                "download_model", "_prepare_weights", "load_checkpoint"}), ("model_loader",), "weight_loading"),
    (frozenset({"init_memory_pool", "profile_max_num_token", "_initialize_kv_caches", "determine_available_memory",
                "get_kv_cache_configs", "initialize_kv_cache", "_check_enough_kv_cache_memory", "determine_num_available_blocks",
                "initialize_cache", "_allocate_kv_cache", "init_cache_engine", "profile_run", "_init_cache",
                "check_enough_kv_cache_memory", "get_kv_cache_config", "init_kv_cache"}), ("memory_pool.py",), "kv_cache_alloc"),
    (frozenset({"init_torch_distributed", "initialize_model_parallel", "init_distributed_environment",
                "ncclCommInitRank", "init_process_group", "init_world_group", "init_model_parallel_group",
                "ensure_model_parallel_initialized", "_init_distributed_environment"}), ("pynccl", "custom_all_reduce"), "nccl_init"),
    (frozenset({"_wait_and_warmup", "_execute_server_warmup", "compile_or_warm_up_model", "kernel_warmup",
                "_dummy_sampler_run", "warmup_model", "_warmup"}), (), "warmup"),
    (frozenset({"event_loop_normal", "event_loop_overlap", "event_loop_pp", "run_batch", "forward_batch_generation",
                "execute_model", "step", "run_busy_loop", "worker_busy_loop", "process_input_sockets",
                "event_loop_overlap_disagg_decode", "event_loop_overlap_disagg_prefill", "event_loop_normal_disagg_prefill",
                "event_loop_normal_disagg_decode", "generate_request", "_handle_batch_output"}), (), "serving"),
)


def phase_from_frames(frames: Iterable[tuple[str, str]]) -> str | None:
    """The phase a stack was in, from its (file, function) pairs listed outermost first.

    The innermost frame that matches a rule decides, so a capture that calls the model's
    forward is ``cuda_graph_capture`` and a KV-cache profile run inside
    ``determine_available_memory`` is ``kv_cache_alloc``. Path fragments only count for
    functions named ``__init__`` (constructors of runners and communicators).
    """
    for file, function in reversed(list(frames)):
        for names, paths, phase in _FRAME_RULES:
            if function in names:
                return phase
            if paths and function == "__init__" and any(p in file for p in paths):
                return phase
    return None
