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
  before decides which, else the first one after (a bare uvicorn line read as warmup turns serving).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from workbench.code_phases import NATIVE_SERVING, code_phase, completion, is_step, owns, resolve
from workbench.logformats import LogLine, any_of, any_part_of, finds, parse_line, parse_time

__all__ = [
    "PHASES",
    "PhaseFailure",
    "PhaseTracker",
    "PhaseTransition",
    "decide_phase",
    "known_phase",
    "phase_from_frames",
    "phase_of_message",
    "stack_evidence",
    "text_evidence",
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
    # TensorRT-LLM prints its version when it is imported (every rank of an mpirun does): the program is starting,
    # when nothing else is known yet
    (r"TensorRT-LLM version: \d", "startup_other", 0, "progress"),
    # TensorRT's builder at work on an engine ("[TRT] [I] Global timing cache in use.", "[TRT] [I] [GraphReduction] ...",
    # "[TRT] [I] Detected 14 inputs and 1 output network tensors."): an engine is being built before anything serves
    (r"\[TRT\] \[[IVW]\] (?:Global timing cache in use|\[GraphReduction\]|Detected \d+ inputs and \d+ output network|"
     r"\[MemUsageChange\] Init builder kernel library)", "startup_other", 0, "progress"),
    # lmdeploy choosing its PyTorch engine and checking what it needs (triton, its kernels) before building it
    (r"Checking environment for PyTorch Engine|Try to run with pytorch engine", "startup_other", 0, "progress"),
    # Triton loading a model: its backend's initialisation, the instance group a backend reports it builds
    (r"TRITONBACKEND_Model(?:Instance)?Initialize|Instance group type: KIND_", "startup_other", 0, "progress"),
    (r"Init torch distributed begin", "nccl_init", 1, "start"),
    (r"is assigned as DP rank|world_size=\d+ rank=\d+ local_rank=|is using nccl==", "nccl_init", 1, "progress"),
    # vLLM's CPU worker checking its preloaded allocators as its init_device begins ("libtcmalloc is not found in
    # LD_PRELOAD. For best performance, ..."), just before it binds its threads and joins the process group
    (r"is not found in LD_PRELOAD", "nccl_init", 1, "progress"),
    # torch's TCPStore client waiting on the rendezvous store (c10d's socket.cpp) timed out: the ranks were
    # still meeting to build their process groups
    (r"\[c10d\] (?:waitForInput: socket [^\n]{0,300} timed out after \d+ms|The client socket has timed out)",
     "nccl_init", 1, "progress"),
    (r"Init torch distributed ends", "startup_other", 1.5, "end"),
    # torch's Gloo process group reports its rendezvous done: the distributed init is over
    (r"\[Gloo\] Rank \d+ is connected to \d+ peer ranks", "startup_other", 1.5, "end"),
    # (LocalAI trying its backends in turn on a model: "INF Loading model 'b5869d55...' with backend llama-cpp")
    (r"Load weight begin|Starting to load model|Loading (?:drafter|draft) model|Loading model '[^']+' with backend ",
     "weight_loading", 2, "begin"),
    # ktransformers' optimize pass building the model from its rules before it loads the GGUF tensors into it
    # ("Injecting model.layers.0.self_attn as ktransformers.operators.attention . KDeepseekV2Attention")
    (r"^Injecting model(?:\.\S+)? as ", "weight_loading", 2, "progress"),
    # llama.cpp's loader (ggml-based servers: ollama's runner, llama-cpp-python) reading a model's tensors
    # (and its loader passing over a tensor the architecture does not use: "model has unused tensor blk.46.nextn.
    # shared_head_norm.weight (size = 16384 bytes) -- ignoring")
    (r"load_tensors: loading model tensors|\bmodel has unused tensor \S", "weight_loading", 2, "progress"),
    # SGLang's models' load_weights naming a checkpoint tensor it has no parameter for ("Parameter model.layers.0.mixer.
    # out_proj.input_scale not found in params_dict"): the weights are being read
    (r"\bnot found in params_dict\b", "weight_loading", 2, "progress"),
    # ... and then creating its context, which allocates the KV cache and the compute buffers ("llama_new_context_with_model:
    # KV self size = 128.00 MiB", newer "llama_context: ..." and "llama_kv_cache_unified: ...")
    (r"\bllama_new_context_with_model: |\bllama_init_from_model: |\bllama_context: |\bllama_kv_cache(?:_unified)?: ",
     "kv_cache_alloc", 3, "progress"),
    # SGLang's diffusion runtime (multimodal_gen) loading a pipeline's component, its checkpoint files
    (r"Loading \w+, default_dtype: |Loading model from \d+ safetensors files?", "weight_loading", 2, "begin"),
    # lmdeploy's PyTorch engine names each checkpoint file it loads ("INFO - loading weights - \"model-00001...\"")
    # vLLM's bar over a checkpoint read by an alternative loader ("Loading safetensors using Fastsafetensor loader")
    (r"Loading (?:safetensors|pt|bin) checkpoint shards|Loading weights:|(?:^|- )loading weights\b(?! took)|"
     r"Loading safetensors using \w+ loader",
     "weight_loading", 2, "progress"),
    (r"Load weight end", "kv_cache_alloc", 3, "end"),
    # (vLLM v1's loader reports "Loading weights took 12.3 seconds" before it processes the weights it read -- repacks
    # them for Marlin, quantises them --, the runner "Model loading took ... GiB" once that is done: only the second
    # ends the step; v0's "Loading model weights took" comes after both.  What comes next in both is the sizing of the
    # KV cache -- v1's compile and profiling run, v0's determine_num_available_blocks --, so a failure after it and
    # before any later marker is the KV cache's)
    (r"Loading weights took", "weight_loading", 2, "progress"),
    (r"Loading model weights took|Model loading took", "kv_cache_alloc", 2.5, "end"),
    # vLLM v1 dropping the engine core's Torch threads once its workers loaded their weights (the multiproc executor's
    # wait_for_ready; a GPU worker's load_model as it ends): what comes next is the KV cache's sizing, which prints
    # nothing as it begins ("Reducing Torch threads from 2 to 1 for serving.")
    (r"Reducing Torch threads from \d+ to 1 for serving", "kv_cache_alloc", 2.5, "end"),
    (r"KV Cache is allocated|Memory pool end|Available KV cache memory|GPU KV cache size|# GPU blocks:|Maximum concurrency for|Memory profiling takes|Profiling CUDA graph memory", "kv_cache_alloc", 3, "progress"),
    # vLLM v1 sizes the KV cache by profiling a forward pass (determine_available_memory -> profile_run), which is
    # where torch.compile runs: the compile's total, the profiling run's time, the KV cache reserved by
    # kv_cache_memory_bytes instead of profiling, kv_cache_utils' padding warning ("may waste ... KV cache memory")
    # (vLLM's engine core choosing the cache's layout as its _initialize_kv_caches begins, before the memory profile:
    # "Using LBHNC KV cache layout.")
    (r"Using \w+ KV cache layout\.", "kv_cache_alloc", 3, "progress"),
    (r"torch\.compile (?:takes|took) [\d.]+ s in total|Initial profiling/warmup run took|memory for KV Cache|"
     r"KV cache memory\b", "kv_cache_alloc", 3, "progress"),
    # (the compile that profiling run starts: its cache directory, dynamo's bytecode transform -- "Using cache directory:
    # /root/.cache/vllm/torch_compile_cache/71bb364cc9/rank_0 for vLLM's torch.compile", "Dynamo bytecode transform
    # time: 41.22 s")
    (r"for vLLM's torch\.compile|Dynamo bytecode transform time", "kv_cache_alloc", 3, "progress"),
    # vLLM v1's profile_run sizing the multimodal encoder's cache before its dummy encoder run ("Encoder cache will be
    # initialized with a budget of 3027 tokens, and profiled with 1 image items of the maximum feature size."): the
    # memory profiling that sizes the KV cache has begun
    (r"Encoder cache will be initialized with a budget", "kv_cache_alloc", 3, "progress"),
    (r"Capture (?:draft (?:extend )?)?cuda graph begin|Capture [\w ]{0,40}CUDA graph begin", "cuda_graph_capture", 4, "begin"),
    # vLLM v0's banner before it captures ("Capturing the model for CUDA graphs. This may lead to ...")
    # vllm-ascend's bar for its ACL graphs ("Capturing ACL graphs (mixed prefill-decode, PIECEWISE)")
    # TensorRT-LLM's PyTorch backend capturing its graphs in its warm-up ("Creating CUDA graph instances for 196 batch
    # sizes.", "Run generation only CUDA graph warmup for batch size=196"): each "CUDA graph warmup" captures one
    # (vLLM's own record of each graph it captures, at DEBUG: "Capturing a cudagraph on (FULL,BatchDescriptor(...))")
    (r"[Cc]apturing CUDA graph|Capturing cudagraphs|Capturing a cudagraph on|Capturing batches|Capture cuda graph bs|"
     r"Capturing the model for CUDA graphs|Capturing ACL graph|Capturing torchair graph|CUDA graphs can take additional|"
     r"Creating CUDA graph instances for|CUDA graph warmup for batch size",
     "cuda_graph_capture", 4, "progress"),
    (r"Capture (?:draft (?:extend )?)?cuda graph end|Capture [\w ]{0,40}CUDA graph end", "startup_other", 4.5, "end"),
    # (SGLang's start-up line, not the attribute an idle check's error quotes: "self.max_total_num_tokens=270331")
    (r"(?<![\w.])max_total_num_tokens=", "startup_other", 4.6, "progress"),
    (r"Graph capturing finished", "warmup", 5, "end"),
    (r"init engine \(profile, create kv cache, warmup model\) took", "startup_other", 5.5, "end"),
    (r"Uvicorn running on|Application startup complete", "warmup", 5, "http_up"),
    (r"warmup error|[Ww]armup failed", "warmup", 5, "begin"),
    # a warm-up run before the graphs are captured: vLLM v1's compile_or_warm_up_model ("Compile and warming up
    # model for size"), TensorRT-LLM's model engine ("Run warmup with 128 tokens")
    # vLLM's TPU model runner precompiling its shapes ("Compiling the model with different input shapes.", "Compiling
    # sampling with different input shapes.")
    (r"Compile and warming up model for size|Run warmup with \d+ tokens|Compiling [\w ]{1,40} with different input shapes",
     "warmup", 3.8, "begin"),
    # FlashInfer's (and TensorRT-LLM's) autotuner timing kernels on dummy runs, which the engines do in their warm-up
    # before capturing graphs (vLLM's kernel_warmup: "[Autotuner]: Autotuning process starts ...", SGLang's model
    # runner: "Running FlashInfer autotune with cache: ...")
    (r"\[Autotuner\]: Autotuning process starts|Running FlashInfer autotune", "warmup", 3.8, "begin"),
    # vLLM's Gaudi (HPU) model runner warming up each bucket, its graphs with it ("[Warmup][Graph/prompt][351/352]
    # batch_size:1 query_len:128 ...", "[Warmup][Prompt][3/40]", "[Warmup][Decode][12/64]")
    (r"\[Warmup\]\[[\w/]+\]\[\d+/\d+\]", "warmup", 3.8, "progress"),
    # a program's own warm-up banner ("🔥 Warming up model (TRT-LLM ...)...", vLLM's "Warming up sampler with 256
    # dummy requests", mistral.rs' "Beginning dummy run." after "Model loaded."): its first runs before it serves
    # (llama.cpp's own: "common_init_from_params: warming up the model with an empty run")
    (r"\b[Ww]arming up (?:the )?(?:model|sampler)\b|Beginning dummy run", "warmup", 5, "begin"),
    # SGLang's warm-ups run after its server is up (warmup.py: "Running warmup compile-deep-gemm"): the batch
    # that follows is the warm-up request's
    (r"\bRunning warmup \S", "warmup", 5, "begin"),
    # ollama's runner up with its model loaded ("llama runner started in 4.01 seconds"); Triton's endpoints, which
    # it starts once its models loaded ("Started GRPCInferenceService at 0.0.0.0:8001", "Started HTTPService at ...")
    # Gin's access log (ollama) answering a request with success ('[GIN] 2025/04/14 - 20:20:32 | 200 | 4.24s |
    # 127.0.0.1 | POST "/api/generate"'): ollama warms its runner up inside, so a request it answered was served
    # (vLLM's own line names where it listens -- "Starting vLLM API server 0 on http://0.0.0.0:8000" --; a wrapper's
    # "Starting vLLM server: /opt/venvs/vllm/bin/vllm" (gpustack) launches it and says nothing of readiness)
    (r"Starting vLLM (?:API )?server(?: \d+)? on\b|fired up and ready to roll|llama runner started in|"
     r"Started (?:GRPCInferenceService|HTTPService) at |\[GIN\] [^|]*\| 200 \|[^|]*\|[^|]*\| (?:POST|GET) +\"/|"
     # ktransformers' local chat taking a prompt ("Chat: What is 2+2?"): its model is loaded and it answers
     r"^Chat: \S",
     "serving", 6, "ready"),
    # a request object in a dump (SGLang's watchdog prints its current batch's Req(rid=...)) is serving too
    # vLLM's front end logs each request it hands to the engine (async_llm.py's "Added request", logger.py's
    # "Received request")
    # vLLM v1's dump of a scheduled batch (SchedulerOutput's fields; the header dump_engine_exception logs
    # first, "Dumping input data for V1 LLM engine", comes only from the busy loop's execute_model error path,
    # never from a start), verl's rollout line before each generation
    (r"Decode batch[.,]? |Prefill batch[.,]? |Avg prompt throughput:|\"(?:POST|GET) /v1/|\bReq\(rid=|"
     r"\b(?:Added|Received) request \S|\b(?:total_)?num_scheduled_tokens=|scheduled_cached_reqs=|"
     r"Dumping scheduler (?:output|stats)|Dumping input data for V1 LLM engine|[Gg]enerating sequences|"
     # an OpenAI-style request id in any component's line (a KV connector's "Storing KV cache ... for request
     # cmpl-e79e...") is a request being served
     r"\b(?:chat)?cmpl-[0-9a-f]{8}|"
     # the server's access log answering a request with success ('"POST /update_weights_from_distributed HTTP/1.1"
     # 200 OK', an RL trainer pushing weights to a running engine): its HTTP server is up and taking work
     r"\"POST /[^\s\"]* HTTP/[\d.]+\" 200\b|"
     # (and its probes answered: '"GET /metrics HTTP/1.1" 200 OK', "/health", "/v1/models": up and answering)
     r"\"GET /(?:metrics|health|v1/models)\b[^\s\"]* HTTP/[\d.]+\" 200\b|"
     # vLLM's progress bar over the prompts LLM.generate runs ("Processed prompts: 40%|... est. speed input: 91.2
     # toks/s, output: 240.71 toks/s]"): an offline engine generating
     r"\b(?:input|output): \d+(?:\.\d+)? toks/s|"
     # a component's structured record of a request it handles (a gateway's klog 'requestID="b826c66e-..."
     # requestPath="/v1/chat/completions"'): requests are being served
     r"\brequest(?:ID|Id|_id)=\"?[\w-]{8,}|\brequestPath=\"?/|"
     # TurboMind taking a request into its batch ("[TM][INFO] [ProcessInferRequests] Request for 1 received.")
     r"\[ProcessInferRequests\] Request for \d+ received|"
     # llama.cpp's server working on a task ("slot update_slots: id  3 | task 0 | new prompt", older "INFO [
     # update_slots] kv cache rm", "srv  log_server_r: done request: POST /completion 127.0.0.1 200"), koboldcpp's
     # prompt and generation counters ("Processing Prompt [BLAS] (512 / 12710 tokens)", "Generating (12 / 512 tokens)")
     # (llama-box's, gpustack's llama.cpp server, logging each request it takes: "log_server_request: rid 17339378 |
     # POST /v1/chat/completions 192.168.0.172:53941")
     r"\bupdate_slots\b|\blog_server_r: (?:done )?request: (?:POST|GET) /\S* \S+ 200\b|"
     r"\blog_server_request: (?:rid \d+ \| )?(?:POST|GET) /|"
     r"\b(?:Processing Prompt(?: \[BLAS\])?|Generating) \(\d+ / \d+ tokens\)|"
     # mistral.rs' engine logging its running throughput ("Throughput (T/s) 0.60, Prefix cache hitrate 0.00%, 0 running")
     r"\bThroughput \(T/s\) \d", "serving", 6, "batch"),
)
_COMPILED = tuple(re.compile(pat) for pat, *_rest in _RULES)
# for each rule, words one of which every match of its pattern holds: plain ``in`` tests pick the
# rules worth a regex search (tests/unit/logs/test_tracebacks_prefilter.py holds them to it)
_RULE_NEEDLES: tuple[tuple[str, ...], ...] = (
    ("server_args=", "LLM engine", "vLLM API server version", "non-default args:"),
    ("TensorRT-LLM version: ",),
    ("[TRT] [",),
    ("Checking environment for PyTorch Engine", "Try to run with pytorch engine"),
    ("TRITONBACKEND_Model", "Instance group type: "),
    ("Init torch distributed begin",),
    ("is assigned as DP rank", "local_rank=", "is using nccl=="),
    ("is not found in LD_PRELOAD",),
    ("[c10d] ",),
    ("Init torch distributed ends",),
    ("peer ranks",),
    ("Load weight begin", "Starting to load model", "Loading dra", "' with backend "),
    ("Injecting model",),
    ("load_tensors: loading model tensors", "model has unused tensor "),
    ("not found in params_dict",),
    ("llama_new_context_with_model: ", "llama_init_from_model: ", "llama_context: ", "llama_kv_cache"),
    (", default_dtype: ", " safetensors file"),
    (" checkpoint shards", "Loading weights:", "loading weights", "Loading safetensors using"),
    ("Load weight end",),
    ("Loading weights took",),
    ("Loading model weights took", "Model loading took"),
    ("Reducing Torch threads",),
    ("KV Cache is allocated", "Memory pool end", "Available KV cache memory", "GPU KV cache size", "# GPU blocks:",
     "Maximum concurrency for", "Memory profiling takes", "Profiling CUDA graph memory"),
    (" KV cache layout.",),
    ("s in total", "profiling/warmup run took", "memory for KV Cache", "KV cache memory"),
    ("for vLLM's torch.compile", "Dynamo bytecode transform time"),
    ("Encoder cache will be initialized",),
    ("graph begin",),
    ("Capturing CUDA graph", "capturing CUDA graph", "Capturing cudagraphs", "Capturing a cudagraph", "Capturing batches",
     "Capture cuda graph bs",
     "Capturing the model for CUDA graphs", "Capturing ACL graph", "Capturing torchair graph", "CUDA graphs can take additional",
     "CUDA graph instances", "CUDA graph warmup"),
    ("graph end",),
    ("max_total_num_tokens=",),
    ("Graph capturing finished",),
    ("init engine (profile, create kv cache, warmup model) took",),
    ("Uvicorn running on", "Application startup complete"),
    ("warmup error", "armup failed"),
    ("Compile and warming up", "Run warmup with", " with different input shapes"),
    ("Autotuning process starts", "Running FlashInfer autotune"),
    ("[Warmup][",),
    ("Warming up ", "warming up ", "Beginning dummy run"),
    ("Running warmup ",),
    ("Starting vLLM ", "fired up and ready to roll", "llama runner started in", "Started GRPCInferenceService",
     "Started HTTPService", "[GIN] ", "Chat: "),
    ("Decode batch", "Prefill batch", "Avg prompt throughput:", " /v1/", "Req(rid=", "Added request", "Received request",
     "num_scheduled_tokens=", "scheduled_cached_reqs=", "Dumping scheduler ", "Dumping input data", "enerating sequences",
     "cmpl-", " HTTP/", " toks/s", "requestID=", "requestId=", "request_id=", "requestPath=", "[ProcessInferRequests]",
     "update_slots", "log_server_r", "Processing Prompt", "Generating (", "Throughput (T/s) "),
)
_CHECKS = tuple(zip(_RULE_NEEDLES, _COMPILED, ((phase, order, kind) for _p, phase, order, kind in _RULES), strict=True))
# words one of which every rule needs (checked with ``in`` before any regex runs)
_ANCHORS = ("server_args=", "LLM engine", "vLLM", "non-default", "Init torch", "assigned as DP", "world_size=", "using nccl",
            "armup",
            "Load weight", "Starting to load", "Loading", "Model loading", "KV Cache", "KV cache", "Memory p",
            "GPU blocks", "Maximum concurrency", "Capture", "Capturing", "capturing CUDA graph", "CUDA graphs can", "max_total_num_tokens", "Graph capturing",
            "CUDA graph instances", "CUDA graph warmup",
            "init engine", "Uvicorn", "Application startup", "fired up", "batch", "Avg prompt", "/v1/", "Req(rid=",
            "Profiling CUDA", "ed request", "torch.compile", "Dynamo bytecode", "profiling/warmup", "Compile and warming", "input shapes", "scheduled_",
            "Dumping scheduler", "enerating sequences", "TensorRT-LLM version", "Checking environment", "Try to run with", "peer ranks", "TRITONBACKEND_Model", "Instance group type",
            "[c10d] ", "loading weights", "Warming up", "warming up", "dummy run", "llama_new_context",
            "llama_init_from_model", "llama_context", "llama_kv_cache", "params_dict", "cmpl-", " HTTP/1.", " toks/s", "requestI", "request_id=", "requestPath=",
            "Encoder cache", "load_tensors", "Autotuning process", "FlashInfer autotune", "[Warmup][", "ProcessInferRequests",
            "llama runner started", "Started GRPCInferenceService", "Started HTTPService", "[GIN] ", "update_slots", "log_server_r", "Processing Prompt", "Generating (",
            "Throughput (T/s)", "[TRT] [", "Injecting model", "Chat: ", "unused tensor", "in LD_PRELOAD",
            "Reducing Torch threads")
_FAILURE_RE = re.compile(
    r"hit an exception|Traceback \(most recent call last\)|failed to start|WorkerProc failed|"
    r"died unexpectedly|scheduler (?:is dead|died)|Initialization failed|Received sigquit|SIGQUIT received|"
    r"Engine core initialization failed|CUDA out of memory|OutOfMemoryError|^Killed$|Segmentation fault|"
    r"terminate called after throwing"
)
_FAILURE_ANCHORS = ("exception", "Traceback", "fail", "died", "dead", "sigquit", "SIGQUIT", "out of memory",
                    "OutOfMemory", "Killed", "Segmentation", "terminate called")
_ANCHOR = any_part_of(_ANCHORS)  # a rare-lettered end of each (see any_part_of): the rules decide
_FAILURE_ANCHOR = any_of(_FAILURE_ANCHORS)
_INIT_FAILED = re.compile(r"failed to start|[Ii]nitialization failed|failed to initiali[sz]e")
# an access line's success for a request other than SGLang's own warm-up one (its server POSTs /generate, or /encode
# for an embedding model, to itself once uvicorn is up): a client was served ('"POST /api/generate HTTP/1.1" 200 OK',
# '"POST /v1/chat/completions HTTP/1.1" 200 OK')
_SERVED = re.compile(r'"POST /(?!(?:generate|encode)\b)[^\s"]* HTTP/[\d.]+" 200\b')
_ORDER = {"nccl_init": 1, "weight_loading": 2, "kv_cache_alloc": 3, "cuda_graph_capture": 4, "warmup": 5, "serving": 6}


def phase_of_message(message: str) -> tuple[str, float, str] | None:
    """The (phase, order, kind) rule a message matches, or None."""
    if _ANCHOR.search(message) is None:
        return None
    for needles, pattern, rule in _CHECKS:
        for needle in needles:
            if needle in message:
                if pattern.search(message):
                    return rule
                break
    return None


def _is_failure(message: str) -> bool:
    return _FAILURE_ANCHOR.search(message) is not None and _FAILURE_RE.search(message) is not None


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
        # the line where the server said its start failed ("EngineCore failed to start"), if any
        self.init_failed: int | None = None
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
                self._http_up_was_vllm()
            elif parsed.format == "sglang" or (parsed.format == "uvicorn" and parsed.time):
                self.flavor = "sglang"
            elif msg.startswith("HINT:") and "Please open http" in msg:
                # lmdeploy's api_server, just before uvicorn starts: as vLLM's, its HTTP server up is its server ready
                self.flavor = "vllm"
                self._http_up_was_vllm()
        rule = phase_of_message(msg) if msg and not msg[0].isspace() else None
        if rule is None:
            if self.failure is None and msg and _is_failure(msg):
                self.failure = PhaseFailure(self.phase, self._time(parsed, at), parsed.raw, self.line_no)
            if (self.init_failed is None and not self.ready and ("failed to " in msg or "nitialization failed" in msg)
                    and _INIT_FAILED.search(msg)):
                self.init_failed = self.line_no
            return None
        phase, order, kind = rule
        restart = False
        if kind == "http_up":
            if self.flavor == "vllm":
                phase, order, kind = "serving", 6, "ready"
        elif kind == "batch":
            if self.phase == "warmup" and _SERVED.search(msg) is not None:
                phase, order, kind = "serving", 6, "ready"  # a request answered once the HTTP server was up
            elif self.phase != "unknown":
                return None
        if kind == "start":
            if self.ready or self.failure is not None:
                restart = True
                self.restarts += 1
                self.ready = False
                self.failure = None
                self.init_failed = None
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

    def _http_up_was_vllm(self) -> None:
        """A bare ``Application startup complete`` read as SGLang's warmup before any line showed the flavor:
        the first vLLM-shaped line after it says the server was serving from that line on."""
        last = self._transitions[-1] if self._transitions else None
        if (last is not None and self.phase == "warmup" and self._order == 5 and not last.restart
                and phase_of_message(parse_line(last.line).message) == ("warmup", 5, "http_up")):
            self.phase, self._order, self.ready = "serving", 6, True
            self._transitions[-1] = replace(last, phase="serving")

    def _time(self, parsed: LogLine, at: datetime | None) -> datetime | None:
        return at if at is not None else parse_time(parsed.time, year=self.year)


def known_phase(tracker: PhaseTracker, trackers: dict[str, PhaseTracker]) -> str:
    """The phase ``tracker``'s server reached; while its own lines told nothing yet, the phase of the log's
    lines without a prefix (``"|"``: a progress bar whose carriage return ate a compose or journal prefix)."""
    plain = trackers.get("|") if tracker.phase == "unknown" else None
    return plain.phase if plain is not None else tracker.phase


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
    phases = {(server, tr.line_no): tr.phase for server, t in trackers.items() for tr in t.transitions}
    for row in rows:  # a transition a later line re-read (a bare uvicorn "ready" line turned out vLLM's)
        row["phase"] = phases.get((row["server"], row["line_no"]), row["phase"])
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


# Phase evidence from a stack and from the words of a failure.
#
# Precedence, strongest first (``decide_phase``):
#   1. a frame whose function names a start-up step (innermost first): warmup, cuda_graph_capture,
#      weight_loading, kv_cache_alloc, nccl_init. Frames include the callees named in each frame's
#      code line (a cut traceback still says what it was calling) and the method names a wrapper
#      prints (Ray's ``ray::Actor.method()``, vLLM's ``Error executing method 'load_model'``,
#      ``collective_rpc("load_model")``), which count as the outermost frames;
#   2. a frame of the serving loop (event loop, execute_model, a request handler) - but a failure
#      while the log says the server is warming up and not yet ready is ``warmup``, never serving;
#   3. the words of the error and of the line that announced it ("warmup error", "KV cache",
#      ``ncclCommInitRank``, "stream is capturing");
#   4. the start's timeline: the phase the log lines had reached (:class:`PhaseTracker`);
#   5. ``startup_other`` when the frames or words belong to start-up (constructors, imports,
#      engine creation, "failed to start") without naming a step;
#   6. ``unknown``.
# a request's KV cache moved between instances (disaggregated prefill and decode, a KV store): a function named so
_KV_MOVE = r"(?:^|_)(?:send|transfer|recv|receive|pull|push|fetch)(?:_\w*?)?_?kv_?caches?"
_FRAME_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"warm_?up|_dummy_sampler_run", re.I), "warmup"),
    # (not what else a program captures: uvicorn's capture_signals, a test's captured output)
    (re.compile(r"captur(?!e_(?:signals?|output|stdout|stderr|logs?|warnings|exceptions?)$)|cuda_?graph|cudagraph|"
                r"device_graphs"), "cuda_graph_capture"),
    (re.compile(r"load_\w*weight|load_model|^_load_w\d|^get_model$|weights_iterator|process_weights_after_loading|"
                r"download_model|_prepare_weights|load_checkpoint|_get_all_weights|^_load_module$|load_state_dict|"
                # a GGUF file's tensors (ktransformers' optimize_and_load_gguf, llama.cpp bindings' load_gguf)
                r"load_gguf|"
                # TensorRT's engine deserialisation (a TensorRT-LLM engine file holds the weights)
                r"^deserializePlugin$|^deserializeCudaEngine$|^deserialize_engine$"),
     "weight_loading"),
    # (not a request's KV cache sent between a prefill and a decode instance: "_send_kvcache_generic",
    # "_transfer_kv_cache_all_groups" are serving, :data:`_SERVING`;
    # nor an attention kernel reading the cache in a forward pass: flash-attn's flash_attn_with_kvcache, fwd_kvcache)
    (re.compile(r"^(?!.*" + _KV_MOVE + r"|.*(?:attn|attention)\w*_with_kv_?cache$|fwd_kv_?cache$)(?:.*?)(?:kv_cache|kvcache|"
                # SGLang's KV pools, its HiCache host pool too ("set_draft_kv_pool", "register_mem_host_pool_v2")
                r"kv_pool|host_pool|"
                r"memory_pool|^_init_pools$|profile_max_num_token|determine_available_memory|"
                r"determine_num_available_blocks|^profile_run$|cache_size|init_cache_engine|initialize_cache|"
                r"_allocate_kv|^_init_cache$|num_gpu_blocks|^build_cache_engine$|allocate_gpu_cache)"), "kv_cache_alloc"),
    (re.compile(r"init_torch_distributed|init_distributed|distributed_environment|model_parallel|process_group|"
                r"ncclCommInitRank|ncclGetUniqueId|init_world_group|createComm|mscclpp|^init_device$|_init_nccl|"
                r"init_communicator|"
                # torch's ProcessGroupNCCL creating a communicator (at a group's first collective: lazily), its unique id
                # passed through the store ("c10d::ProcessGroupNCCL::initNCCLComm", "broadcastUniqueNCCLID" in c10's frames)
                r"^initNCCLComm$|^broadcastUniqueNCCLID$|^allgatherUniqueNCCLIDs$"), "nccl_init"),
)
_SERVING = re.compile(
    r"event_loop|busy_loop|^run_batch$|forward_batch_generation|execute_model|engine_step|run_engine_loop|"
    r"^step(?:_async)?$|step_with_batch_queue|_process_engine_step|output_handler|^(?:async_)?generate$|"
    r"generate_sequences|^generate_request$|_generate_(?:non_)?streaming|completion_(?:stream|full)_generator|"
    # a request's structured-output grammar is compiled and checked while serving it
    r"_create_grammar|_check_grammar_completion|^compile_(?:grammar|json_schema|regex|ebnf)$|"
    r"^create_(?:chat_)?completion$|"
    # a tool-call or reasoning parser reading a model's output, whole or a streamed delta at a time (vLLM's ToolParser
    # and ReasoningParser methods, also in a plugin's copy: "/app/hermes_tool_parser.py ... extract_tool_calls_streaming")
    r"^extract_tool_calls(?:_streaming)?$|^extract_reasoning(?:_content)?(?:_streaming)?$|"
    # an OpenAI-style route or client call of a served model (a proxy's chat_completion, LiteLLM's router acompletion)
    r"^a?(?:chat_|text_)?completions?$|^generate_(?:chat_)?completions?$|"
    r"_executor_loop|process_batch_result|resolve_last_batch_result|^run_asgi$|execution_loop|^execute$|"
    # SGLang's overlap worker thread runs the scheduler's batches
    r"^forward_thread_func_?$|"
    r"_handle_batch_output|process_input_sockets|^recv_requests$|handle_request|^_forward_raw$|^forward_extend$|"
    r"^forward_decode$|"
    # TensorRT-LLM's executor threads (result dispatch in the proxy, the worker's response loop)
    r"^dispatch_result_task$|^await_response_task$|^_forward_step$|^_handle_responses$|^_fetch_new_requests$|"
    # SGLang's first router (model_rpc.py) and its scheduler's idle checks; vLLM's offline loop
    r"^exposed_step$|^forward_step$|^forward_(?:fill|prefill|decode|extend)_batch$|^handle_generate_request$|"
    r"^self_check_during_idle$|^on_idle$|^_run_engine$|_process_model_outputs|"
    # read in the engines' sources: SGLang's scheduler, vLLM v1's engine and runner, lmdeploy's engine loops
    r"^get_next_batch_to_run$|^get_new_batch_prefill$|^update_running_batch$|^process_input_requests$|"
    r"^prepare_for_(?:decode|extend)$|^stream_output|^sample_tokens$|^_update_states$|^add_request$|"
    r"^_handle_client_request$|^_?async_loop\w*$|^_async_step$|^_async_model_forward$|^async_forward$|"
    r"^main_loop$|^_main_loop_\w+$|^send_response_loop$|^preprocess_loop$|"
    # an RL trainer pushing new weights into its running rollout engine between generations (OpenRLHF's worker
    # extension update_weight, verl's update_weights_from_ipc, SGLang's update_weights_from_distributed / _tensor /
    # _disk, NeMo-RL's update_weights_via_ipc_zmq): the engine was built and serving
    r"^update_weights?(?:_from_\w+|_via_\w+)?$|"
    # the engine's background loop ending (vLLM v0's, Aphrodite's and lmdeploy's AsyncEngine: "Task finished
    # unexpectedly"), a loop that runs once the server is up
    r"^_raise_exception_on_finish$|"
    # an RL trainer's loop (verl's RayPPOTrainer.fit, OpenRLHF's and Lightning's fit): past the engines' start, every
    # step of it asks the rollout engines for generations
    r"^fit$|"
    # a trainer's own loop (Hugging Face's Trainer.train -> _inner_training_loop -> training_step, Megatron's
    # train_step and forward_backward_*, Lightning's training_step): past its start, each step runs the model
    r"^_inner_training_loop$|^training_step$|^train_step$|^forward_backward_\w+$|^train_epoch$|"
    # a request's KV cache sent between a prefill and a decode instance (SGLang's NIXL "_send_kvcache_generic",
    # vllm-ascend's Mooncake connector "_transfer_kv_cache_all_groups")
    + _KV_MOVE + "|"
    # a client's own call sending a request to the server (a benchmark's or an evaluation harness' send_request)
    r"^send_request$")
_STARTUP = re.compile(
    r"^__init__$|^<import>$|launch|startup|^run_server|build_async_engine_client|from_engine_args|"
    r"from_vllm_config|make_client|make_async_mp_client|make_arg_parser|_init_engines|^run_engine_core$|"
    r"^run_scheduler_process$|init_model_worker|init_tp_model_worker|_init_model_runner|init_draft_worker|"
    r"^_?initiali[sz]e(?:_\w+)?$|bootstrap(?!(?:_inner)?$)|TRITONBACKEND_Model(?:Instance)?Initialize|_init_executor|_init_workers|^init_worker|^worker_main$|create_engine_config|get_tokenizer|"
    r"^get_config$|from_pretrained|_build_model|_start_executor_workers|^create$|^lifespan$|^serve$|"
    r"subparser_init|_find_and_load|^exec_module$|soc_version|^Runtime$|^_run_module_as_main$|"
    # the import machinery a lazy module calls (transformers' _LazyModule.__getattr__ -> importlib.import_module)
    r"^import_module$|"
    # a process that starts a component (SGLang's start_router_process...), Ray Serve's replica start
    r"^start_\w+_process$|^exposed_init_model$|^check_ready$|^initialize_and_get_metadata$|^create_py_executor$|"
    # a framework's worker building its model or rollout engine (verl's init_model, actor_rollout_init_model)
    r"^build_model$|init_model$|"
    # a component's own set-up method (vLLM's initialize_nixl run on every worker before serving)
    r"^initiali[sz]e_\w+$")
# constructors of these files are the step itself (a CudaGraphRunner() is a capture)
_INIT_PATHS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("cuda_graph_runner.py", "cudagraph", "cuda_graph"), "cuda_graph_capture"),
    (("model_loader",), "weight_loading"),
    (("memory_pool.py",), "kv_cache_alloc"),
    (("pynccl", "custom_all_reduce", "parallel_state.py", "cuda_communicator", "device_communicators"), "nccl_init"),
    # a model runner being built (a plugin's subclass of vLLM's GPUModelRunner, which init_device builds after the
    # device is set, as vllm-omni's GPUARModelRunner): a start-up step of its own, not the NCCL set-up around it
    (("model_runner.py",), "startup_other"),
)
_PATH_RULES: tuple[tuple[str, str], ...] = (("/warmup.py", "warmup"),)
# the web framework's request path (middleware, routing, the HTTP protocol): serving, unless the
# stack also holds start-up frames (an app's lifespan start runs through the same middleware)
# torch's own code (dynamo's InstructionTranslator.step, an optimizer's step) runs at start-up as at serving: its
# names are no serving loop's
_TORCH_OWN = re.compile(r"[/\\]torch[/\\]")
# (and a WSGI app's: Flask streaming a response through Werkzeug)
_HTTP_PATHS = ("/starlette/", "/fastapi/", "/sse_starlette/", "/uvicorn/protocols/", "/werkzeug/", "/flask/")
_CALLEE = re.compile(r"(\w+)\s*\(")
# the innermost code line cut off inside the name of the method it calls ("... = self._initialize_kv"), on self or
# on a local of one name, often an object of the frame's own module (SGLang's run_scheduler_process, cut in
# "scheduler.run_event_"); the completion is looked up among the frame's file's functions only
_CUT_METHOD = re.compile(r"(?<![\w.])[A-Za-z_]\w*\.(_?\w{4,})$")
_QUOTED_METHOD = re.compile(r"""(?:rpc|_workers|method)\(\s*['"](\w+)['"]""")
# a function a code line hands to a pool or a thread, which runs it under that frame (TurboMind's "for _ in
# e.map(self.model_comm.process_weight, ...)", "executor.submit(self._load_shard, i)", "Thread(target=self.loop)")
_HANDED = re.compile(r"\b(?:map|submit|run_in_executor|apply_async|starmap)\(\s*(?:None,\s*)?(?:\w+\.)*(\w+)\s*[,)]|"
                     r"\btarget=(?:\w+\.)*(\w+)")
# also the target Python's threading names when a thread's function raised ("Exception in thread Thread-3
# (forward_thread_func):") and asyncio's callback that raised ("Exception in callback _log_task_completion(...)")
_WRAPPER_METHOD = re.compile(r"ray::[^\s(]*\.(\w+)\(\)|method '(\w+)'|collective_rpc\(\s*['\"](\w+)|"
                             r"while processing method (\w+)|Exception in thread [^()\n]*\((\w+)\):|"
                             # (or by its name alone, where the thread was given one: "Exception in thread
                             # WorkerAsyncOutputCopy:")
                             r"Exception in thread (\w+):|"
                             r"Exception in callback (\w+)\(|"
                             # TensorRT-LLM's thread-pool wrapper ("Error executing load_single_module with args (...)")
                             r"Error executing (\w+) with args\b|"
                             # vLLM v0's worker wrapper, the name unquoted ("Error executing method
                             # start_worker_execution_loop. This might cause deadlock in distributed execution.")
                             r"Error executing method (\w+)\.|"
                             # text-generation-inference's gRPC interceptor over the shard's service methods
                             # ("Method Warmup encountered an error.", "Method Prefill encountered an error.")
                             r"\bMethod (\w+) encountered an error")
# (and llama.cpp's loader giving up on a model file: "llama_model_load: error loading model: unknown model architecture")
# (and ollama's server giving up on the runner it started to load a model: "error loading llama server: ...", the runner
# that died while it waited for the load, "llama runner process has terminated: GGML_ASSERT(...) failed")
_LOAD_MODEL = re.compile(r"(?:(?:fail(?:ed)?|faild|unable) to|could not|couldn't) load (?:the )?model\b(?! config)|"
                         r"\berror loading model: |"
                         r"\berror loading llama server\b|\bllama runner process has terminated\b", re.I)
_TEXT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"stream is capturing|during CUDA graph capture|Capture cuda graph failed|cudaErrorStreamCapture|"
                r"graph by --disable-cuda-graph|"
                r"graph capture|"
                # a stream's capture state checked (CUDA's cudaStreamCaptureStatus, Ascend's ACL graph mode
                # "status == aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE INTERNAL ASSERT FAILED")
                r"capture_?status|aclmdlRICapture|"
                # SGLang's piecewise CUDA graphs (PCG) capture pass ("PCG capture stream is not set")
                r"\bPCG capture|"
                # SGLang's piecewise graphs failing as they are captured ("Piecewise CUDA Graph failed with error: ...")
                r"Piecewise CUDA Graph failed|"
                # the runtime's own capture calls failing ("cudaStreamEndCapture(stream, &handle_) failed: operation
                # failed due to a previous error during capture", hipStreamBeginCapture)
                r"\b(?:cuda|hip)Stream(?:Begin|End)Capture\b", re.I), "cuda_graph_capture"),
    # vLLM's "CUDA out of memory occurred when warming up sampler with 256 dummy requests"
    (re.compile(r"warm_?up|\bwarming up\b", re.I), "warmup"),
    (_LOAD_MODEL, "weight_loading"),
    # a model file the loader cannot use (llama.cpp's GGUF reader: "gguf_init_from_file: invalid magic characters 'tjgg'";
    # llama-cpp-python's "Model path does not exist: /app/models/model.gguf"; ollama's runner: "unable to load model"):
    # the weights are being read, over whatever start-up code called the loader
    (re.compile(r"\binvalid magic characters?\b|\bModel path does not exist\b|\bunable to load model\b"), "weight_loading"),
    # (a model's file named as what would not load, over whatever start-up code called the loader: llama-cpp-python's
    # "Failed to load model from file: .../model.gguf"; candle's weights lacking a tensor the model asks for, TEI's "Could
    # not start backend: cannot find tensor encoder.layer.0.attention.q_lin.weight")
    (re.compile(r"\bload (?:the )?model from (?:file|path)\b|\bcannot find tensor \S", re.I), "weight_loading"),
    # safetensors refusing a checkpoint file it reads (its Rust core's "SafetensorError: Error while deserializing
    # header: ...", "incomplete metadata, file not fully covered"): the weights are being read
    (re.compile(r"SafetensorError\b|Error while deserializing header"), "weight_loading"),
    # TGI's launcher fetching the weights (and a LoRA adapter's) before its shards start ("download:
    # text_generation_launcher: Download encountered an error", "Error: DownloadError")
    (re.compile(r"\bDownload encountered an error\b|\bError: DownloadError\b"), "weight_loading"),
    # the Hugging Face Hub's Xet storage refusing a model file's download ("RuntimeError: Data processing error: CAS
    # service error : ... Status(429) }, \"https://transfer.xethub.hf.co/xorbs/...")
    (re.compile(r"\bCAS service error\b|\btransfer\.xethub\.hf\.co\b"), "weight_loading"),
    # TensorRT reading a built engine (its weights are in it) back from its plan file (TensorRT-LLM's runtime: "Assertion
    # failed: Failed to deserialize cuda engine."; TensorRT's own "IRuntime::deserializeCudaEngine: Error Code 1")
    # (or refusing it: "The engine plan file is not compatible with this version of TensorRT"); and ONNX Runtime's session
    # reading a model file ("[E:onnxruntime:, inference_session.cc:2280 operator()] Exception during initialization:
    # ... Exception while Reading network")
    (re.compile(r"\b[Dd]eserializ\w* (?:the |a )?(?:cuda |CUDA |TensorRT |TRT )?engine\b|deserializeCudaEngine|"
                r"\bengine plan file is not compatible\b|\binference_session\.cc:\d+ [^\n]{0,40}\bException during "
                r"initiali[sz]ation\b"), "weight_loading"),
    # a weight loader refusing a checkpoint tensor for a parameter of another shape (vLLM's "Attempted to load weight
    # (torch.Size([1, 1, 2, 1, 2])) into parameter (torch.Size([1, 1, 1, 1, 2]))"): copying weights in
    (re.compile(r"\bload(?:ing|ed)? (?:the )?weights? \S[^\n]{0,120}\binto (?:the )?param", re.I), "weight_loading"),
    # torch's load_state_dict refusing a checkpoint (its "Error(s) in loading state_dict for Linear:", each tensor's
    # "size mismatch for bias: copying a param with shape torch.Size([3584]) from checkpoint, ...")
    (re.compile(r"Error\(s\) in loading state_dict|copying a param with shape [^\n]{0,80} from checkpoint"),
     "weight_loading"),
    # the loader's check, once the checkpoint is read, that it filled every parameter (vLLM's DefaultModelLoader: "Following
    # weights were not initialized from checkpoint: {...}"), or a tensor the checkpoint lacks
    (re.compile(r"\bnot initiali[sz]ed from (?:the )?(?:model )?checkpoint|\bmissing (?:from|in) (?:the )?checkpoint|"
                # vLLM's AutoWeightsLoader meeting a checkpoint tensor the model has no place for
                r"\bThere is no module or parameter named\b", re.I), "weight_loading"),
    # (and a loader finding no weight files at all, or a checkpoint tensor it does not expect: vLLM's "Cannot find any
    # model weights with '<model>'", "Unexpected weight: visual.blocks.0.attn.proj.weight"; a GGUF loader unable to name
    # its tensors: "Failed to map GGUF parameters (356):")
    # (or a quantised layer's shapes refused as its weights are created: "Weight input_size_per_partition = 192 is not
    # divisible by weight quantization block_k = 128", "... is not divisible by weight quantization block_n = 128.")
    # (and a model class built with arguments its code does not take: "TypeError: Ernie4_5_MoeForCausalLM.__init__() got
    # an unexpected keyword argument 'convert_from_hf'": the model itself is being built)
    # (and a rank's slice of a checkpoint tensor that does not fit it: torch's narrow() as a weight loader cuts the shard,
    # "start (0) + length (1280) exceeds dimension size (1024)"; a quantisation scheme or its config the loader cannot
    # use: "Unsupported weight strategy=block", "Cannot find the config file for awq"; an attention backend refused as
    # the model's layers are built: "Selected backend AttentionBackendEnum.FLASHINFER is not valid for this
    # configuration", "Attention backend 'sage_attn' is not supported by this attention layer")
    (re.compile(r"\bCannot find any model weights\b|\bUnexpected weight: \S|\bFailed to map GGUF parameters\b|"
                r"\bis not divisible by weight quantization block_[kn]\b|\bexceeds dimension size \(\d+\)|"
                r"\bUnsupported weight strategy\b|\bCannot find the config file for \w+\b|"
                r"\bSelected backend \S+ is not valid for this configuration\b|"
                r"\b[Aa]ttention backend '?[\w.]+'? is not supported by this attention layer\b|"
                r"\b\w+For(?:CausalLM|ConditionalGeneration)\.__init__\(\) (?:got|missing)\b"), "weight_loading"),
    # a message that is only a checkpoint parameter's name, quoted (the KeyError of a weight loader's lookup of a tensor
    # among the model's parameters: "'layers.0.mlp.down_proj.weight'")
    # (quantised checkpoints add their scales and packing: "'layers.32.self_attn.qkv_proj.k_scale'", "...g_idx'")
    (re.compile(r"^'(?:[\w-]+\.)+(?:weight|bias|qweight|qzeros|scales|g_idx|weight_scale\w*|[kvq]_scale|input_scale|"
                r"weight_zero_point|weight_packed|weight_shape)'$"), "weight_loading"),
    # SGLang's memory pool sizing found no room for a KV cache ("Not enough memory. Please try to increase
    # --mem-fraction-static.")
    # (and SGLang's HiCache sizing its host tier: "Not enough host memory available. ... Please reduce the size of the
    # hierarchical cache.")
    # (not a serving engine's statistics: vLLM's "Avg prompt throughput: ... GPU KV cache usage: 0.2%")
    # (llama.cpp's context, whose creation allocates its KV cache and compute buffers: "llama_init_from_model: failed to
    # initialize the context: ...", "common_init_: failed to create context with model '...'")
    # (vLLM's check of its own memory profile, which sizes the cache: "AssertionError: Error in memory profiling. Initial
    # free memory 82.94 GiB, current free memory 90.17 GiB")
    (re.compile(r"\bError in memory profiling\b|KV cache(?! usage)|kv_cache|cache blocks|num_gpu_blocks|Not enough memory\. Please try to increase "
                r"--mem-fraction-static|size of the hierarchical cache|"
                r"\bllama_init_from_model: failed to initiali[sz]e the context|failed to create context with model|"
                # (its compute buffers, reserved with the cache as the context is created: "ggml_gallocr_reserve_n: failed
                # to allocate CUDA0 buffer of size 1056964608", "failed to allocate compute pp buffers")
                r"\bggml_gallocr_reserve_n: failed|failed to allocate compute (?:pp )?buffers?"),
     "kv_cache_alloc"),
    (re.compile(r"ncclCommInitRank|[Nn]ccl_?[Cc]ommunicator|init_process_group|createComm|hcclCommInit|"
                r"(?:initiali[sz]e|init)\w* [^\n]{0,60}NCCL|NCCL[^\n]{0,60}\binit|"
                # a warning from NCCL's own init.cc (ncclCommInitRank's source: "init.cc:1582 NCCL WARN Cuda failure ...")
                r"\binit\.cc:\d+ NCCL WARN|"
                # (and its transports' and bootstrap's, which connect the ranks as a communicator is set up: "transport/
                # nvls.cc:254 NCCL WARN Cuda failure 1 'invalid argument'", RCCL's "transport/p2p.cc:239 NCCL WARN
                # hipIpcGetMemHandle failed"; HCCL's sockets between its ranks: "[hccl_socket.cc:100] ... [Listen] ...
                # fail", "[hccl_socket_manager.cc:778] ... wait socket establish timeout")
                r"\b(?:transport/\w+|bootstrap)\.cc:\d+ NCCL WARN|\bhccl_socket(?:_manager)?\.cc:\d+\]|"
                # NVSHMEM (DeepEP's transport) failing to connect its peers as it initialises ("ibv_modify_qp failed",
                # "transport create connect failed", "nvshmem setup connections failed")
                r"ibv_modify_qp failed|(?:transport create connect|connect EPS|ep_connect) failed|"
                r"nvshmem setup connections|"
                # the connections a communicator opens to its peers as it is set up: NCCL's sockets ("misc/socket.cc:484
                # NCCL WARN socketStartConnect: Connect to ... failed"), Gloo's mesh ("Gloo connectFullMesh failed"),
                # NVSHMEM's bootstrap ("bootstrap_net_init:160: No socket interface found")
                r"\bsocket(?:Start|Poll)Connect\b|\bncclSocketInit\b|\bconnectFullMesh\b|\bbootstrap_net_init\b|"
                # (and torch's TCPStore, the rendezvous every process group starts with: "The server socket has failed
                # to listen on any local network address. ... (errno: 98 - Address already in use)")
                r"\bThe (?:server|client) socket has (?:failed to|timed out)\b|"
                # (the rendezvous itself: torch's env:// init reading its variables ("Error initializing
                # torch.distributed using env:// rendezvous: environment variable RANK expected, but not set"), elastic's
                # rendezvous handlers, the store they meet at being built, c10d resolving the master's name ("[c10d] The
                # IPv6 network addresses of (job-01k7.internal, 50745) cannot be retrieved (gai error: -2 - ...)")
                r"\b[Rr]endezvous|\bTCPStore(?:::TCPStore|\()|"
                r"\benvironment variable (?:RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|LOCAL_RANK) expected\b|"
                r"\[c10d\] The (?:IPv6 |IPv4 )?(?:network addresses|hostname)\b|"
                # (its client reaching the store's server: "[c10d] TCP client failed to connect/validate to host
                # <host>:58159 - retrying (try=0, timeout=1800000ms, delay=610ms): Connection reset by peer")
                r"\[c10d\] TCP client failed to connect\b|"
                # NVSHMEM's own sources reporting a failure while it starts: its bootstrap, its transports (IBGDA's queue
                # pairs: "nvshmem_src/src/modules/transport/ibgda/ibgda.cpp:3005: non-zero status: 7 ibgda_rc_init2rtr
                # failed"), its init ("src/host/init/init.cu:998: non-zero status: 7 building transport map failed")
                r"/\w*nvshmem\w*/src/(?:host/(?:init|transport|topo|mem)|modules/(?:transport|bootstrap))/|"
                r"nvshmem initiali[sz]ation failed|"
                # NCCL's init refusing two ranks on one GPU ("Duplicate GPU detected : rank 3 and rank 0 both on CUDA
                # device f000"); CUDA refusing the peer access a custom all-reduce or a P2P transport enables between
                # the ranks' GPUs as they are connected ("peer access is not supported between these two devices")
                r"Duplicate GPU detected|peer access is not supported|"
                # Open MPI's UCX layer wiring up its ranks' endpoints ("pml_ucx.c:421  Error: ucp_ep_create(proc=47)
                # failed", "Failed to resolve UCX endpoint for rank 19"), MPI_Init's and the first collective's
                r"\bpml_ucx\.c:\d+|Failed to resolve UCX endpoint|"
                # HCCL connecting its ranks as a communicator's resources are set up ("Transport init error. Reason:
                # [Create][DestLink]Create Dest error!", "Get_Socket_Timeout(EI0006): Getting socket times out",
                # "... invoke the HcclAllocComResourceByTiling function of the hccl module"); torch's store waiting for
                # the ranks to join ("Timed out after 601 seconds waiting for clients. 1/2 clients joined."); vLLM
                # asking the store whether its ranks share a node as it sets up its groups ("Error ignored in
                # is_in_the_same_node: ... Timed out waiting 1800000ms for send operation to complete")
                r"\bTransport init error\b|\bGet_Socket_Timeout\b|\bHcclAllocComResource|"
                r"\bwaiting for clients\b|\b\d+/\d+ clients joined\b|\bis_in_the_same_node\b", re.I), "nccl_init"),
)
# (not a store's operation: Mooncake's "Failed to start put operation" is a request's KV cache being offloaded)
_TEXT_STARTUP = re.compile(r"initiali[sz]ation failed|[Ff]ailed to (?:start(?! (?:put|get)\b)|initiali[sz]e|init\b)|creation task|"
                           # (lmdeploy checking a model's config before it builds the engine: "<Model> check failed!")
                           r"<\w+> check failed\b|"
                           # a model's configuration read as the engine is configured: a config.json that is not JSON
                           # (transformers' "It looks like the config file at '...' is not a valid JSON file."), a model
                           # type the installed transformers or engine does not know ("Transformers does not recognize
                           # this architecture", MindIE's "unsupported model type: falcon_mamba"); lmdeploy's check of its
                           # environment before it builds an engine ("<Triton> environment test failed.")
                           r"\bis not a valid JSON file\b|\bdoes not recognize this architecture\b|"
                           r"\bunsupported model type\b|\benvironment test failed\b|"
                           # (Go's controllers and servers say "unable to": aibrix's "unable to initialize controllers")
                           r"\b(?:[Uu]nable to|[Cc]ould(?: not|n't)) (?:start|initiali[sz]e)\b|"
                           # the dynamic loader refusing to start a program whose library is missing ("executorWorker:
                           # error while loading shared libraries: libnvinfer.so.10: cannot open shared object file")
                           r"error while loading shared libraries|"
                           # (a program loading a library of its own as it starts: a backend's engine, a GPU's runtime:
                           # cortex's "Could not load engine: Could not load library \"...engine.dll\"")
                           r"\b(?:[Cc]ould not|[Cc]annot|[Ff]ailed to|[Uu]nable to) load (?:the |any )?(?:[\w.-]+ )?"
                           r"(?:shared )?librar(?:y|ies)\b|"
                           # (an accelerator's runtime refusing the device a worker binds to: CANN's "rtSetDevice execute
                           # failed, reason=[device id error]", "open device 1 failed, runtime result = 107001")
                           r"\b(?:rt|aclrt)SetDevice execute failed|\bopen device \d+ failed\b|"
                           # (macOS's: "dyld[41630]: Library not loaded: @rpath/libllama-common.0.dylib"); torch finding
                           # no usable GPU as it starts CUDA ("UserWarning: CUDA initialization: ... Error 803"); the
                           # fabric manager unable to bring the NVSwitches up
                           r"\bLibrary not loaded: |\bCUDA initiali[sz]ation: |from NVSwitch driver failed|"
                           # an extension module its library's ABI does not match, refused as it is imported
                           # ("ImportError: .../sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa")
                           r"\.so(?:\.\d+)*: undefined symbol: |"
                           # Open MPI's runtime failing to start its ranks ("It looks like orte_init failed") or to place
                           # them ("All nodes which are allocated for this job are already filled")
                           r"\borte_init failed\b|\bare already filled\b|"
                           # (and the launch layer under it: Open MPI's daemons ("ORTE was unable to reliably start one
                           # or more daemons", "OPAL ERROR: ... in file pmix3x_client.c"), the PMI wire-up between a job's
                           # ranks and Slurm or Hydra ("PMIX ERROR: ERROR in file ...", MPICH's "PMII_singinit: execv
                           # failed"), srun placing its tasks ("srun: error: Application launch failed: Unable to layout
                           # tasks on given cpus"), Slurm's container plugin bringing the task's image up before the
                           # task starts ("pyxis: couldn't start container", "slurmstepd: error: pyxis: ... [ERROR] URL
                           # ... returned error code: 401 Unauthorized"))
                           r"\bORTE was unable\b|\bOPAL ERROR\b|\bwas not built with SLURM'?s PMI support\b|"
                           r"\bPMIX? ERROR\b|\bPMII_\w+|\b(?:Task|Application) launch (?:for \S+ )?failed\b|"
                           r"\bpyxis: |\bspank plugin\b|"
                           # a node joining a Ray cluster ("Failed to connect to GCS at address :6379 within 5
                           # seconds", not a running cluster losing it: "... within 60 seconds. GCS may have been
                           # killed"; "Failed to get cluster ID from GCS server", the raylet's "Could not connect to
                           # socket .../sockets/raylet.1"), a cloud launcher's machines coming up ("Failed to SSH to
                           # 10.128.0.10 after timeout 600s", dstack's "No matching instance offers available") or
                           # Kubernetes refusing a pod its GPUs ("UnexpectedAdmissionError ... Allocate failed due to
                           # device plugin")
                           r"[Ff]ailed to connect to GCS at address\b|\bcluster ID from GCS\b|"
                           r"\braylet_client\.cc\b|\bFailed to SSH to\b|\bNo matching instance offers\b|"
                           r"\bUnexpectedAdmissionError\b|\bdevice plugin \w+ rpc failed\b|"
                           # Ray placing an engine's workers on its nodes before they start ("Waiting for creating a
                           # placement group of specs for 70 seconds", "No available node types can fulfill resource
                           # request", Ray Serve's "Placement group bundle cannot have more than 1 GPU")
                           r"\b[Pp]lacement group\b|\bNo available node types can fulfill\b|"
                           # the container runtime (or the NVIDIA toolkit's hook in it) refusing to start the server's
                           # container ("OCI runtime create failed", "nvidia-container-cli: requirement error: ...")
                           r"OCI runtime create failed|\bnvidia-container-cli: |"
                           # (or its image refused to it: "docker: Error response from daemon: pull access denied for
                           # llm-nim", "Head \"https://nvcr.io/v2/.../manifests/1.0.0\": unauthorized: authentication
                           # required", "manifest unknown")
                           r"\bpull access denied\b|\bmanifests/[^\s\"]+\"?: unauthorized\b|\bmanifest unknown\b|"
                           r"\bImagePullBackOff\b|\bErrImagePull\b|\b[Ff]ailed to pull (?:and unpack )?image\b|"
                           # (or the daemon refusing to run it at all: "docker: Error response from daemon: unknown or
                           # invalid runtime name: nvidia"), or the scheduler finding no node for the pod ("Warning
                           # FailedScheduling ... 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity")
                           r"\bError response from daemon\b|\bFailedScheduling\b|\b\d+/\d+ nodes are available\b|"
                           # (or the kubelet's probes of a server that never answered: "Startup probe failed: Get
                           # \"http://...:8000/v1/health/ready\": ... connection refused", "Readiness probe failed: HTTP
                           # probe failed with statuscode: 502"): the pod never became ready
                           r"\b(?:Startup|Readiness|Liveness) probe failed\b|"
                           # (or the kubelet unable to give it the devices it claimed: DRA's "failed to prepare dynamic
                           # resources: prepare dynamic resources: NodePrepareResources failed")
                           r"\bprepare dynamic resources\b|"
                           # (or Docker and CDI finding no GPU device for it: "could not select device driver \"nvidia\"
                           # with capabilities: [[gpu]]", "unresolvable CDI devices nvidia.com/gpu=all")
                           r"\bcould not select device driver\b|\bunresolvable CDI devices?\b|"
                           # a server reading its chat template or its tool and reasoning parsers' names as it starts
                           # (llama.cpp's "common_chat_templates_init: failed to parse chat template (defaulting to
                           # chatml)", vLLM's "KeyError: 'invalid tool call parser: openai (chose from {...})'")
                           r"\bfailed to parse chat template\b|\binvalid (?:tool call|reasoning) parser\b|"
                           # a server process that died or never answered its health check, in a log that shows
                           # nothing of its start's steps nor its readiness (the timeline comes first)
                           r"\bhealth check\b[^\n]{0,80}\btimed out|[Ff]ailed to serve model|exited unexpectedly|"
                           r"\bexited with code \d+|process failed to load\b|"
                           r"aborting startup|\binit state\b|"
                           # multiprocessing refusing to spawn a worker from a module run without its main guard ("An
                           # attempt has been made to start a new process before the current process has finished its
                           # bootstrapping phase."): an engine starting its workers
                           r"finished its bootstrapping phase|"
                           # a distributed runtime reaching its control plane as it starts (Dynamo's "Failed to connect to
                           # etcd server", "Failed to connect to NATS")
                           r"[Ff]ailed to connect to (?:the )?(?:etcd|NATS|nats)\b|"
                           # a C++ server's own start-up check ("[MIE05E030001] Initialize modelBackends_ failed", MindIE's
                           # "Init model instance failed", "[LLMInferModelInstance::Init] llmManager_ init fail!")
                           r"\b[Ii]nit(?:iali[sz]e)?(?: [\w ]{1,40}?)? fail(?:ed|s)?\b|"
                           # a module that would not import, an engine being built: the program was starting
                           r"failed to import|No module named|cannot import name|Building .{0,40}engine|"
                           # the program's argument parser refusing its command line (argparse's "vllm: error:
                           # unrecognized arguments: --task embedding"): it stops before anything starts
                           r": error: (?:unrecognized arguments|argument |the following arguments are required)|"
                           # Rust's clap refusing it ("error: invalid value 'True' for '--disable-custom-kernels'")
                           r"^error: (?:unexpected argument|invalid value) '|"
                           # a C++ server's own parser refusing it (llama-box's "Unknown argument: --origin-rpc-...")
                           r"^(?:error: )?[Uu]nknown (?:argument|option)s?:? ['\"]?-|"
                           # the listening socket a server (or torch's TCPStore) binds as it starts ("could not bind to
                           # address: 0.0.0.0:8000", "[Errno 98] Address already in use")
                           r"could not bind|[Ff]ailed to bind|[Aa]ddress already in use|"
                           # (or an address the host does not have: ZMQ's "Cannot assign requested address (addr='tcp://
                           # 10.27.91.102:13345')" as a data-parallel front end binds another node's address)
                           r"\bCannot assign requested address\b|"
                           # (MindIE's endpoint: "[MIE04E02041C] [endpoint] Failed to listen 172.17.0.3:40032")
                           r"\b[Ff]ailed to listen\b|"
                           # the devices a process is given as it starts ("EE1001: ... Set visible device failed, invalid
                           # device=6"); Slurm's container plugin: the launch layer's words above, "pyxis: "
                           r"\b[Ss]et visible devices? failed\b|"
                           # a model server that would not come up (xinference's "Failed to launch model"), vLLM's
                           # check of the model's architectures while it builds its config (its registry's "Model
                           # architecture X failed to be inspected", "Error in inspecting model architecture 'X'")
                           r"failed to launch|failed to be inspected|Error in inspecting model|"
                           # the model's architecture not found among those the engine or transformers know
                           # ("'X' is not a registered model", "Model architectures ['X'] are not supported for now")
                           r"is not a registered model|Cannot find model module|"
                           # (or found, but not for this build of it: "LiteWhisperForConditionalGeneration has no vLLM
                           # implementation", "GGUF model with architecture olmo2 is not supported yet", "Pipeline
                           # parallelism is not supported for this model")
                           r"\bhas no vLLM implementation\b|\bmodel with architecture \S+ is not supported\b|"
                           r"\b(?:Pipeline|Tensor|Expert|Data|Context) parallelism is not supported for this model\b|"
                           r"Model architectures? \[[^\]]{0,200}\] (?:are|is) not supported|"
                           # an engine placing its workers on the Ray cluster's GPUs ("Consider adjusting the Ray
                           # placement group")
                           r"\bRay placement group|"
                           # a launcher waiting for the server it started to come up ("error waiting for runner to be
                           # ready: llama.cpp terminated unexpectedly"): it died starting
                           r"\bwaiting for [\w .-]{0,30}to (?:be|become) ready\b|"
                           # uvicorn running an app's lifespan start-up, where an app that builds its model there
                           # loads it (llama-stack's inference server): a record just before a failure the timeline
                           # cannot place (vLLM builds its engine before, and its timeline knows it is serving)
                           r"Waiting for application startup\.|"
                           # Kubernetes restarting a container that keeps exiting ("0/1 CrashLoopBackOff"): each
                           # restart dies again before the container is ready
                           r"\bCrashLoopBackOff\b|"
                           # a readiness probe that gave up: the server never answered its models or health route,
                           # never came up ("Timed out waiting for http://localhost:8000/v1/models after 15s")
                           r"[Tt]imed out waiting for \S+/(?:v1/models|health|ready)\b|"
                           # Triton's model repository bringing up a model it could not ("failed to load 'm' version
                           # 1: Internal: unexpected error when creating modelInstanceState: ...")
                           r"failed to load '[^']+' version \d+|creating modelInstanceState|"
                           # and tritonserver giving up the server it was building ("error: creating server: Internal -
                           # failed to load all models")
                           r"error: creating server\b|failed to load all models|"
                           # and the status its model table gives a model it could not load ("UNAVAILABLE: Not found:
                           # unable to load shared library: ...")
                           r"(?-i:UNAVAILABLE): |"
                           # a serving platform bringing up one model server (gpustack's "Provisioning model instance")
                           r"\b(?:provision|start)\w* (?:\w+ )?model instance|"
                           # a library the program needs is missing ("NIXL is not available"): found when it starts
                           r"\bis not (?:available|installed)\b|"
                           # words placing the failure at the start themselves (vLLM's memory check as a worker starts:
                           # "Free memory on device cuda:1 (19.77/22.05 GiB) on startup is less than desired GPU memory
                           # utilization")
                           r"\bon start-?up\b|"
                           # words saying the failure came while something was being created or started ("crashes
                           # during NIXL agent creation", "When starting the ... workers, the process fails")
                           r"\b(?:during|while|when) (?:[\w-]+ ){0,4}?(?:creation|initiali[sz](?:ation|ing)|"
                           r"start-?up|starting)\b|"
                           # a constructor called with arguments its library version does not take (TypeError
                           # "Processor.__init__() got multiple values for argument 'tokenizer'"): components being built
                           r"__init__\(\) (?:got (?:an unexpected keyword|multiple values)|missing \d+ required)|"
                           # an engine that says it cannot start ("vLLM engine cannot start without GPU"), a config
                           # refused as it is built (pydantic's "1 validation error for ModelConfig", EngineArgs...)
                           r"\b(?:engine|server) cannot start\b|\bvalidation errors? for \w*(?:Config|Args)\b|"
                           # the engine refusing a combination of its own flags, or a size they set, as it reads them
                           # ("--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding", "...
                           # cannot be enabled at the same time", "Total number of attention heads (64) must be divisible
                           # by tensor parallel size (3)", "DeepEP v2 MoE is not validated for 'X'", "VLLM_USE_V1=1 is not
                           # supported with device type=cpu")
                           r"\bis incompatible with\b|\bcannot be enabled at the same time\b|"
                           r"\bmust be divisible by (?:the )?(?:tensor|pipeline|expert|data)[ -]parallel size\b|"
                           r"\bis not validated for\b|\bis not supported with device type\b|"
                           # the device checked as the engine is configured ("Bfloat16 is only supported on GPUs with
                           # compute capability of at least 8.0"), or not acquired at all (Habana's "synStatus=8 [Device
                           # not found] Device acquire failed.")
                           # (or the engine's own check of the GPU's architecture: SGLang's "ValueError: Unsupported
                           # compute capability: 12.0", "requires compute capability >= 9.0")
                           r"\bis only supported on GPUs with compute capability\b|\b[Dd]evice acquire failed\b|"
                           r"\b(?:unsupported|requires?) (?:GPU )?compute capability\b|"
                           # the visible devices named by UUID where a program reads indices (CUDA_VISIBLE_DEVICES=MIG-...:
                           # "invalid literal for int() with base 10: 'MIG-2e782cfd-...'")
                           r"invalid literal for int\(\) with base 10: '(?:MIG|GPU)-|"
                           # (or a port variable Kubernetes' service discovery set to its own service's URI, read where a
                           # number was meant: VLLM_PORT='tcp://10.100.120.175:80')
                           r"invalid literal for int\(\) with base 10: '[a-z]+://|"
                           # a tokenizer file written by a newer tokenizers than the one loading it, as the server
                           # builds its tokenizer ("data did not match any variant of untagged enum ModelWrapper")
                           r"\buntagged enum ModelWrapper\b", re.I)
# the Envoy proxy in front of a server (Istio, KServe, AIBrix and llm-d gateways) answering a request for a backend it
# could not reach: a request was being served (also a last resort's failure: tracebacks.events.quiet_failure)
GATEWAY_FAILURE = r"\bupstream connect error or disconnect/reset before headers\b|\bno healthy upstream\b"
# what an engine writes when a batch it was executing failed (vLLM v0 and v1 dump the batch's input)
# vLLM v1's run_engine_core logs "EngineCore encountered a fatal error" only once the core was built and
# its busy loop ran ("EngineCore failed to start" otherwise); TensorRT-LLM's batch manager names its
# serving functions (code_phases.NATIVE_SERVING) in its errors
# a collective watchdog that timed out on its 10,000th or later operation: the process had long been serving
# (a start issues tens to hundreds; torch's "WorkNCCL(SeqNum=158046, OpType=GATHER, ...)")
# vLLM v1's core logs "Invocation of X method failed" for a client's call its busy loop took (add_lora,
# wake_up, collective_rpc: the engine was up), and answers the client "Call to X method failed: ...";
# lmdeploy's "Engine loop failed with error" and TensorRT-LLM's older "Encountered an error in forward
# function" come from their loops over the batches (as its executor's "Encountered an error when fetching
# new request: ..." does)
_TEXT_SERVING = re.compile(r"inputs? of failed execution|Dumping input data|Dumping scheduler (?:output|stats)|"
                           # ollama's client told that the runner failed while it generated ("Error: an unknown error
                           # was encountered while running the model CUDA error: out of memory")
                           r"\bwhile running the model\b|"
                           # SGLang's scheduler checking its pools while it idles between requests ("ValueError:
                           # token_to_kv_pool_allocator memory leak detected! ...")
                           r"\bmemory leak detected\b|"
                           # a structured-output backend stepping a request's grammar (vLLM's xgrammar backend: "Failed to
                           # advance FSM for request resp_2021... for tokens 410")
                           r"\bFailed to advance FSM\b|"
                           # (and its token bitmask applied to a batch's logits: xgrammar's apply_token_bitmask_inplace);
                           # a request's tool_choice refused ("Invalid value for `function`: ... in `tool_choice`!"), a
                           # request's messages with no chat template to apply ("default chat template is no longer
                           # allowed, so you must provide a chat template")
                           r"\bapply_token_bitmask\w*|\bin `tool_choice`|\bdefault chat template is no longer allowed\b|"
                           # (and a request's output parsed as it streams: SGLang's function-call parsers'
                           # parse_streaming_increment, gpt-oss's Harmony parser's HarmonyError); an RL trainer pushing its
                           # weights into a running engine (SGLang's update_weights_from_tensor / _distributed / _disk; not
                           # its route in an access line, whose answer says whether the engine serves)
                           r"\bparse_streaming_increment\b|\bHarmonyError\b|(?<!/)\bupdate_weights_from_(?:tensor|distributed|disk)\b|"
                           # a cloud endpoint's client told the model failed its request (boto's "An error occurred
                           # (ModelError) when calling the InvokeEndpoint operation: Received server error (507)")
                           r"\bwhen calling the Invoke\w* operation\b|"
                           # a disaggregated deployment moving a request's KV cache between prefill and decode
                           # (NIXL's "transfer failure ... 'request_id'", SGLang's "Prefill transfer failed for request",
                           # Mooncake's transfer engine "Process failed for slice", its TCP transport's "writeBody failed")
                           r"NIXL transfer failure|\b[Tt]ransfer failed for request|Handshake failed for request|"
                           r"\bProcess failed for slice\b|Session::writeBody failed|\brequest_id\b|\breq\.rid=|"
                           # (a decode instance pulling a request's KV caches from its prefill peer: vLLM's Mooncake
                           # connector's "pulling kv_caches for ['973c...'] failed: Timeout waiting for P side ready",
                           # SGLang's "Some requests fail to receive KV Cache transfer done signal")
                           r"\b(?:pull|push|send|receiv|fetch|transferr)(?:ing|ed)? (?:the )?[Kk][Vv][ _]?[Cc]aches?\b|"
                           r"\b[Kk][Vv][ _]?[Cc]ache transfer\b|\bP side ready\b|"
                           # (and a KV store's writes and reads of requests' caches: Mooncake's "Failed to start put
                           # operation: RPC_FAIL", "Put operation failed with error: ...")
                           r"\b[Ff]ailed to (?:start|end) (?:put|get) operation|\b(?:Put|Get) operation failed\b|"
                           r"WorkNCCL\(SeqNum=\d{5,}|(?:Invocation of|Call to) \w+ method failed|Engine loop failed|"
                           # SGLang's scheduler watchdog: a batch's forward made no progress for its timeout ("Scheduler
                           # watchdog timeout (self.watchdog_timeout=300.0, self.soft=False)")
                           r"\bScheduler watchdog timeout\b|"
                           # a request's grammar (structured output) its sampler could not parse (llama.cpp's "parse: error
                           # parsing grammar: unknown escape at ...", as ollama's runner prints it)
                           r"\berror parsing grammar\b|"
                           # mistral.rs' engine loop reporting a step it ran ("prompt step - Model failed with error:
                           # ..."), TGI's router in a batch's span ("batch{batch_size=1}:prefill:prefill{id=0 size=1}:")
                           r"\bstep - Model failed with error\b|\bbatch\{batch_size=\d+\}:(?:prefill|decode)\b|"
                           # Triton's Python backend failing a request's batch ("Failed to process the request(s) for
                           # model 'x', message: ...")
                           r"Failed to process the request\(s\)|"
                           # Replicate's cog failing a prediction it was running ("FatalWorkerException: Prediction failed
                           # for an unknown reason. It might have run out of memory? (exitcode -6)"): a request
                           r"\bPrediction failed\b|"
                           # torch.multinomial's check of a sampler's probabilities (a request's batch being sampled:
                           # "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed")
                           r"probability tensor contains either|"
                           r"Encountered an error in forward\w* function|Encountered an error when fetching new request|"
                           # Mooncake's transfer engine moving a request's KV cache between instances ("Failed to submit
                           # all transfers, error code is InvalidArgument", "Failed to complete transfers after 60 seconds",
                           # its client's "Transfer failed for task1")
                           r"\bFailed to (?:submit|complete) (?:all )?transfers\b|\bTransfer failed for task\b|"
                           # an RL trainer waking a colocated engine between rollouts (SGLang's and verl's
                           # "resume_memory_occupation", torch_memory_saver's "func=resume"): the engine was up, as for
                           # vLLM's wake_up (code_phases)
                           r"\b(?:resume|release)_memory_occupation\b|\btorch_memory_saver\b[^\n]*\bfunc=resume\b|"
                           # llama.cpp finding no room in its KV cache for a request's batch ("decode: failed to find a
                           # memory slot for batch of size 512", its bindings' "NoKvCacheSlot"); CLIP encoding a request's
                           # image (llava in ollama and llama.cpp's server: "clip_image_batch_encode")
                           r"\bNoKvCacheSlot\b|\bfailed to find (?:a )?(?:KV|kv|memory) (?:cache )?slot\b|"
                           r"\bclip_image_(?:batch_)?encode\b|"
                           # a client's report of a server's error answer to its request, with the HTTP status it
                           # answered (the OpenAI SDK's APIStatusError "Error code: 400 - {'object': 'error', ...}",
                           # "HTTP Error 400: Bad Request", "failed with status code 404", "400 status code (no body)",
                           # '{"error":{"code":400,"message":...'), or of a streamed answer cut short (httpx's "peer
                           # closed connection without sending complete message body")
                           r"\b(?:HTTP Error|status code|Error code:?) [45]\d\d\b|\b[45]\d\d status code\b|"
                           r"\"code\": ?[45]\d\d\b|\bpeer closed connection without sending complete message body\b|"
                           # (and aiohttp's for a server's 5xx answer: "500, message='Internal Server Error', url='http://
                           # 172.17.0.3:11434/api/embed'"; a client's "API error: Internal Server Error")
                           r"\b5\d\d, message='[^']*', url='|\bAPI error: Internal Server Error\b|"
                           # TensorRT-LLM's PyTorch executor's own record that its loop over the batches died ("Executor
                           # loop crashed on this rank; hard-killing all 8 ranks")
                           r"Executor loop crashed|"
                           # SGLang's ScheduleBatch, out of KV slots for the batch it is building
                           r"(?:Decode|Prefill) out of memory|alloc_req_slots runs out of memory|"
                           # an error a server logs for a request, or for the response it streams back to one
                           # (gpustack's proxy: "Error processing streaming response: 'usage'")
                           r"[Ee]rror (?:on|for|processing) (?:streaming )?(?:request|response)\b|\bRequest failed\b|"
                           # a load client's report of a request it sent that failed (evalscope's "Request: {'messages':
                           # [...], ...} failed, state_code: None")
                           r"\bRequest: \{.*\} failed\b|"
                           # the command line of a load or evaluation client sending requests to a running server (lm-eval
                           # on its OpenAI-style completions, vLLM's and SGLang's serving benchmarks, evalscope's perf):
                           # what failed after it failed while the server served
                           r"\blm[_-]eval\b.*--model[= ]local-(?:chat-)?completions\b|\bvllm bench serve\b|"
                           r"\bbenchmark_serving\.py\b|\bsglang\.bench_serving\b|\bevalscope perf\b|"
                           # a server's answer to a request it failed inside: its access line's 500 (uvicorn's '"POST
                           # /v1/chat/completions HTTP/1.1" 500 Internal Server Error'), its own "Internal server error:
                           # Failed to generate completions: ..." (dynamo's frontend)
                           r'"[A-Z]+ \S+ HTTP/[\d.]+" 500\b|\b[Ii]nternal [Ss]erver [Ee]rror: |[Ff]ailed to generate completions\b|'
                           + GATEWAY_FAILURE + "|"
                           # a step that failed for one request (SGLang's "Decode transfer failed for request rank=0
                           # decode_req.req.rid=...", vLLM's "Mooncake transfer failed for request cmpl-...")
                           r"\bfailed for request\b|"
                           # an OpenAI-style request id in the error's words (a KV connector's "Failed to transfer KV
                           # cache for request chatcmpl-270f82b6-..."): that request was being served, whatever the
                           # other words name (the timeline reads the same id as serving)
                           r"\b(?:chat)?cmpl-[0-9a-f]{8}|"
                           # a router forwarding a request to generate to an engine's worker (SGLang's router: "Generate
                           # request to http://localhost:8001 failed (attempt 1/3)")
                           r"\b[Gg]enerate request to\b|"
                           # an HTTP client's error for a request to an engine's generation route (httpx's "Server
                           # error '503 Service Unavailable' for url 'http://10.78.210.151:4674/generate'", an RL
                           # framework's rollout calling its router): a request was being served; a probe of the
                           # health or models route is a start-up's (_TEXT_STARTUP)
                           r"\bfor url '?\S*?/(?:generate|v1/(?:chat/)?completions)\b|"
                           # (vllm-omni's stage engines say it of themselves: "StageEngineCoreProc encountered a fatal error.")
                           r"EngineCore(?:Proc)? encountered a fatal error|"
                           # vLLM v1's client watches its engine cores only once they reported ready ("Engine core proc
                           # EngineCore_DP0 died unexpectedly, shutting down client."; a start that failed says "Engine
                           # core initialization failed")
                           r"\bEngine core proc \S+ died unexpectedly\b|"
                           # SGLang's scheduler watchdog, which fires only while a batch it is running makes no progress
                           # ("Watchdog timeout (self.watchdog_timeout=300)")
                           r"Watchdog timeout \(self\.watchdog_timeout=|"
                           # an API server's record of an endpoint that raised while answering (llama-stack's "Error
                           # executing endpoint route='/v1/inference/chat-completion' method='post'")
                           r"[Ee]rror executing endpoint\b|"
                           # prose placing a failure in the handling of requests ("an error occurs during request:",
                           # "while processing the requests", "during benchmarking")
                           r"\b(?:during|while (?:handling|processing|serving)|when (?:handling|processing|serving)) "
                           r"(?:an? |the |each |concurrent )?(?:requests?|benchmark(?:s|ing)?)\b|"
                           # prose telling of a request it sent and the server's answer ("When requesting
                           # `http://host:8000/v1/embeddings`, an error code 500 is returned")
                           r"\b[Ww]hen (?:requesting|sending (?:an? |the )?requests?|calling (?:the )?(?:API|endpoint))\b|"
                           r"\b(?:error|status) code 5\d\d (?:is|was) returned\b|"
                           # the error a dead engine raises to the requests that reach it (vLLM v0's MQEngineDeadError
                           # "Engine loop is not running", v1's EngineDeadError "EngineCore encountered an issue"): its
                           # loop had been serving them
                           r"Engine loop is not running|\bEngineDeadError\b|EngineCore encountered an issue|"
                           # uvicorn's record of a request whose handler raised ("ERROR:    Exception in ASGI
                           # application", the traceback under it)
                           r"Exception in ASGI application|"
                           # vLLM v1's AsyncLLM losing the loop that hands the engine's outputs to the requests
                           r"\boutput_handler failed\b|"
                           # a request its client dropped, aborted as it was served (SGLang's "Request is disconnected
                           # from the client side (type 1). Abort request obj.rid=..."); a captured CUDA graph replayed
                           # for a batch (SGLang's "EAGLE draft cuda graph replay padding: raw_bs=3 graph_bs=4"): capture
                           # is start-up's, replay a batch's
                           r"\bRequest is disconnected\b|\bAbort request\b|\b[Cc]uda ?[Gg]raph replay\b|"
                           # a request refused for its length (SGLang's "The input (85050 tokens) is longer than the
                           # model's context length (32768 tokens).", vLLM's "This model's maximum context length is
                           # 4096 tokens. However, you requested ..."): checked as each request comes
                           r"\b(?:input|prompt)\b[^\n]{0,40}\bis longer than the (?:model's )?(?:context length|maximum "
                           r"model length)|maximum context length is \d+ tokens|"
                           # vLLM's OpenAI handlers of requests, named by the location of their log records
                           # ("[serving_chat.py:1001] openai_harmony.HarmonyError: ...")
                           r"\bserving_(?:chat|completion|responses|embedding)\.py:\d+|"
                           r"\b(?:" + "|".join(NATIVE_SERVING) + r")\b")
# a collective library named by an error during start-up: its communicator was being set up
# (torch's DistStoreError: the TCPStore rendezvous of the process groups, "Timed out ... waiting for clients")
_COLLECTIVE = re.compile(r"\b[NH]CCL\b|\bnccl|\bhccl|DistStoreError|DistNetworkError|"
                         # Intel oneCCL and its transport layer (ATL over libfabric): XPU's communicators
                         r"\boneCCL\b|\bCCL_ERROR\b|\bATL\b|\batl_ofi")


# an engine's configuration code: its functions name the steps they configure ("_maybe_enable_breakable_cudagraph",
# "_set_cudagraph_sizes", "resolve_kv_cache_layout"), which they do not run; the frames around them say the step
# (vLLM's config package and its argument parsing, SGLang's and TensorRT-LLM's server arguments)
_CONFIG_FILES = re.compile(r"(?:^|/)(?:vllm/config/|vllm/engine/arg_utils\.py$|sglang/srt/server_args\.py$|"
                           r"tensorrt_llm/llmapi/llm_args\.py$)")


def _frame_phase(file: str, function: str) -> str | None:
    for pattern, phase in _FRAME_RULES:
        if pattern.search(function):
            return None if _CONFIG_FILES.search(file) else phase
    if function == "__init__":
        for paths, phase in _INIT_PATHS:
            if any(p in file for p in paths):
                return phase
    for path, phase in _PATH_RULES:
        if path in file:
            return phase
    return None


def stack_evidence(frames: Iterable[tuple[str, str, str | None]],
                   timeline_phase: str = "unknown") -> tuple[str | None, bool, bool]:
    """(start-up step, serving seen, start-up seen) of a stack of (file, function, code), outermost first.

    The code line of each frame adds the functions it calls, as frames just inside it. Frames of the
    engines' own code are read in :mod:`workbench.code_phases` first: its outermost serving or start-up
    frame says which side of readiness the stack is on (serving: no step, whatever inner frames are
    called; start-up: never serving), and its innermost step beats a step guessed from a name -- unless a
    span of steps around it leaves that step out (:func:`~workbench.code_phases.owns`): then the span's.
    """
    expanded: list[tuple[str, str, bool]] = []
    last: tuple[str, str | None] = ("", None)
    importing = False  # the innermost whole frame imports a module: whatever called it, the program was loading it
    caller = None
    for file, function, code in frames:
        last = (file, code)
        expanded.append((file, function, False))
        if function != "?":
            importing = False
        imported = function == "<module>" and caller is not None and caller not in _RUNNERS
        caller = function
        if function == "<module>" and code and code.lstrip().startswith(("import ", "from ")):
            expanded.append((file, "<import>", True))  # an import chain: the program is still starting
            importing = True
            continue
        if code and not _stdlib(file):
            for name in _callees(code):
                expanded.append((file, name, True))
        if imported:  # this module's own code ran as something imported it
            expanded.append((file, "<import>", True))
            importing = True
    cut = _CUT_METHOD.search(last[1]) if last[0] and last[1] and "(" not in last[1] else None
    if cut is not None and (whole := completion(last[0], cut.group(1))) is not None:
        expanded.append((last[0], whole, True))  # the innermost code line cut inside the method it calls
    serving = startup = http = False
    known_step = guessed_step = side = None
    for file, function, callee in reversed(expanded):  # innermost first
        known, phase, is_serving, is_startup = _frame_evidence(file, function, callee)
        if known is not None:
            if known != "neutral":
                side = "serving" if known == "serving" else "startup"
                if known_step is None and is_step(known):
                    known_step = resolve(known, timeline_phase, guessed_step)
                elif known_step is not None and not owns(known, known_step):
                    # an outer span the step inside it falls out of: the callee's step is part of the outer one
                    # (vLLM's profile_cudagraph_memory captures graphs to size the KV cache: kv_cache_alloc)
                    known_step = resolve(known, timeline_phase)
            continue
        if phase is not None and guessed_step is None:
            guessed_step = phase
        if guessed_step is None:
            serving = serving or is_serving
            startup = startup or is_startup
            http = http or any(p in file for p in _HTTP_PATHS)
    if side == "serving":
        return None, True, False
    if importing and side is None:  # a name that sounds like serving (a CLI's "generate" command) above an import
        serving = False
    step = known_step or guessed_step
    if side == "startup":
        return step, False, True
    if step is not None:
        return step, serving, True
    return None, serving or (http and not startup), startup


_CALLEES: dict[str, tuple[str, ...]] = {}
# functions that run a script's or a cell's module code (runpy, IPython, exec): a "<module>" frame under any other frame
# is a module being imported (the program was loading it: "python -c 'import sgl_kernel'" -> sgl_kernel/__init__.py)
_RUNNERS = frozenset({"_run_code", "_run_module_code", "run_path", "run_module", "run_code", "exec", "?"})
# Python's own library (not its site-packages): its code lines call the library's own functions, whose names an
# engine may reuse (asyncio's "self.run_forever()" over a TGI warm-up is not mini-sglang's scheduler loop)
_STDLIB = re.compile(r"/lib/python3(?:\.\d+)?/(?!(?:site|dist)-packages/)")
_STDLIB_FILES: dict[str, bool] = {}


def _stdlib(file: str) -> bool:
    found = _STDLIB_FILES.get(file)
    if found is None:
        found = _STDLIB.search(file.replace("\\", "/")) is not None
        if len(_STDLIB_FILES) < 4096:
            _STDLIB_FILES[file] = found
    return found


def _callees(code: str) -> tuple[str, ...]:
    """The functions a frame's code line calls (``f(``), the methods it names (``rpc("load_model")``) and the functions
    it hands to a pool or a thread (:data:`_HANDED`)."""
    found = _CALLEES.get(code)
    if found is None:
        found = tuple(_CALLEE.findall(code)) + tuple(_QUOTED_METHOD.findall(code)) + tuple(
            a or b for a, b in _HANDED.findall(code))
        if len(_CALLEES) < 8192:
            _CALLEES[code] = found
    return found


_EVIDENCE: dict[tuple[str, str, bool], tuple[str | None, str | None, bool, bool]] = {}


def _frame_evidence(file: str, function: str, callee: bool = False) -> tuple[str | None, str | None, bool, bool]:
    """(the engines' table phase, step, serving, start-up) of one frame (or of a function its code line
    calls); the last three are guessed from the names. Remembered, since a log repeats its stacks."""
    key = (file, function, callee)
    found = _EVIDENCE.get(key)
    if found is None:
        if "." in function:  # IPython 8 names a method by its qualified name ("AsyncEngine.__call__")
            function = function.rsplit(".", 1)[-1] or function
        found = (code_phase(file, function, callee=callee), _frame_phase(file, function),
                 _SERVING.search(function) is not None and not _TORCH_OWN.search(file),
                 _STARTUP.search(function) is not None)
        if len(_EVIDENCE) < 8192:  # bounded: a log with more distinct frames just stops remembering
            _EVIDENCE[key] = found
    return found


# the two long phrase tables, run by RE2 where it gives the same answer (:func:`workbench.logformats.finds`)
_finds_serving, _finds_startup = finds(_TEXT_SERVING), finds(_TEXT_STARTUP)
# whether any of the steps' phrase rules holds, each with its flags
_TEXT_RULE_ANY = re.compile("|".join(f"(?{'i' if p.flags & re.I else '-i'}:{p.pattern})" for p, _ in _TEXT_RULES))
_finds_text_rule = finds(_TEXT_RULE_ANY)


_WRAPPED = re.compile(r"[ \t]*\r?\n[ \t]*")


def text_evidence(texts: Iterable[str | None]) -> tuple[str | None, bool, bool, bool]:
    """(start-up step, serving, start-up seen, step from a wrapper's method name) from the words of a failure (a
    message wrapped over lines read as one line)."""
    words = [_WRAPPED.sub(" ", t) if "\n" in t else t for t in texts if t]
    methods = [("", name) for t in words for m in _WRAPPER_METHOD.finditer(t) for name in m.groups() if name]
    step, serving, startup = stack_evidence((f, n, None) for f, n in methods) if methods else (None, False, False)
    if step is not None:
        return step, serving, True, True
    serving = serving or any(_finds_serving(t) for t in words)
    for text in words:
        if not _finds_text_rule(text):  # (most words name no step: one pass says so)
            continue
        for pattern, phase in _TEXT_RULES:
            if pattern.search(text):
                return phase, serving, True, False
    return None, serving, startup or any(_finds_startup(t) for t in words), False


def decide_phase(frames: Iterable[tuple[str, str, str | None]], texts: Iterable[str | None] = (),
                 timeline_phase: str = "unknown", *, ready: bool = False) -> str:
    """The phase of one failure from its stack, its words and the log's timeline (precedence above)."""
    frames = list(frames)
    step, serving, startup = stack_evidence(frames, timeline_phase)
    if step is not None:
        return step
    text_step, text_serving, text_startup, from_method = text_evidence(texts)
    if from_method and text_step is not None:
        return text_step
    if serving or text_serving:
        return "warmup" if timeline_phase == "warmup" and not ready else "serving"
    if text_step is not None and not (startup and _only_load_model(texts)):
        return text_step
    if timeline_phase not in ("unknown", ""):
        return timeline_phase
    if startup or text_startup:
        return startup_step(texts)
    if any(_rpc_loop(file, function) for file, function, _code in frames):
        return "serving"
    return "unknown"


# a worker's loop over the RPCs its engine sends (vLLM v1's worker_busy_loop, v0's _run_worker_process, lmdeploy's and
# verl's executor loops): it carries the start-up RPCs too, so the code table holds it neutral, but with no step in
# the stack, no words and no timeline to say otherwise, the call it was running is the one it runs all day long --
# execute_model, a request's batch ("WorkerProc hit an exception" cut after "worker_busy_loop"; "WorkerProc failed."
# inside the broadcast queue's dequeue the loop waits on)
_RPC_LOOPS = (("multiproc_executor.py", "worker_busy_loop"), ("multiproc_worker_utils.py", "_run_worker_process"),
              ("vllm_rollout", "_loop_forever"), ("lmdeploy/pytorch/engine/executor/", "_main_loop"),
              # the broadcast queue the busy loop waits on for the next call
              ("shm_broadcast.py", "dequeue"))


def _rpc_loop(file: str, function: str) -> bool:
    file = file.replace("\\", "/")
    return any(name == function and path in file for path, name in _RPC_LOOPS)


def model_forward(frames: Iterable[tuple[str, str]]) -> bool:
    """A model's own ``forward`` (not torch's module machinery) is among the (file, function) frames: with no step named
    by the stack, the words or the timeline, a server runs it for a batch it serves -- start-up runs a forward only
    inside a named step (the memory profile, the capture, the warm-up), which would have said so."""
    return any(function == "forward" and not _TORCH_OWN.search(file) for file, function in frames)


def _only_load_model(texts: Iterable[str | None]) -> bool:
    """The words give a step only as "Failed to load model X": over a stack of start-up code (xinference's worker
    launching a model's actor, whose load builds the whole engine) they name that start, not the weights' step."""
    words = [t for t in texts if t]
    return not any(p.search(t) for t in words for p, _phase in _TEXT_RULES if p is not _LOAD_MODEL)


def startup_step(texts: Iterable[str | None]) -> str:
    """``nccl_init`` when the words of a start-up failure name NCCL/HCCL (the only collective work of a
    start that no other step claims is setting up the communicators), else ``startup_other``."""
    return "nccl_init" if any(t and _COLLECTIVE.search(t) for t in texts) else "startup_other"


def phase_from_frames(frames: Iterable[tuple[str, str]]) -> str | None:
    """The phase a stack was in, from its (file, function) pairs listed outermost first.

    The innermost frame that names a start-up step decides, so a capture that calls the model's
    forward is ``cuda_graph_capture``; else a serving-loop frame means ``serving``; None when the
    frames name neither (:func:`decide_phase` adds the other evidence and the fallbacks).
    """
    step, serving, _startup = stack_evidence((f, n, None) for f, n in frames)
    if step is not None:
        return step
    return "serving" if serving else None
