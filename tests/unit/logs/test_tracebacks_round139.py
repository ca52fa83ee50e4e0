"""What held-outs 139-142 (speculative decoding and LoRA, local engines, model vendors' bring-up, communication
layers) showed missing, each a general rule: failure lines with no level in C programs' own shape (ggml's and
llama.cpp's "function: failed to ..."), an application's "Error <doing>: Type: message", a one-space-indented
exception line, Kubernetes' OOMKilled and Cosmopolitan's crash report; which line a failure came after (a callee's
error above its caller's, a failure above the death it caused); and phase evidence from the lines under a failure
(NCCL's return trace through its init, a caller's words), from words (NCCL's init checks, NVSHMEM's heap, a device
the runtime refused, a library or a model that did not load, SGLang's scheduler watchdog), from frames (the standard
library's and Werkzeug's request handlers), and from a server's own banner (lmdeploy's HINT before uvicorn). The failure
lines and the words of held-outs 143-146 (test_tracebacks_round143.py) are cases of the same tests here."""

from __future__ import annotations

import pytest

from workbench.logformats import parse_line
from workbench.phases import decide_phase
from workbench.tracebacks import analyze


def _root(log: str) -> tuple[str | None, str, str] | None:
    root = analyze(log).root_cause
    return None if root is None else (root.kind, root.message, root.phase)


@pytest.mark.parametrize(("log", "said", "phase"), [
    # llamafile (a ggml program): the innermost failure first, then each caller's; the caller names the step
    ("gml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 17179869216\n"
     "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
     "llama_new_context_with_model: llama_kv_cache_init() failed for self-attention cache\n"
     "main: error: unable to load model\n",
     "failed to allocate buffer of size 17179869216", "kv_cache_alloc"),
    # the callee's error line above its caller's error record: the callee's is the root
    ("main: loading model\n"
     "gguf_init_from_file: failed to open GGUF file '/home/user/models/gemma-3-12b-it-qat-q4_0.gguf'\n"
     "llama_model_load: error loading model: llama_model_loader: failed to load model\n"
     "llama_model_load_from_file_impl: failed to load model\n",
     "failed to open GGUF file", "weight_loading"),
    # a caller's words two lines under an error record that names no step
    ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 256.00 MiB on device 1: cudaMalloc failed: out of memory\n"
     "alloc_tensor_range: failed to allocate CUDA1 buffer of size 268435456\n"
     "llama_kv_cache_init: failed to allocate buffer for kv cache\n",
     "cudaMalloc failed: out of memory", "kv_cache_alloc"),
    # the failure just above a crash is what the process died of (the compute buffers reserved with the context)
    ("ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 1056964608\n\n"
     "error: Uncaught SIGSEGV (SEGV_MAPERR) at 0x8 on home pid 25983 tid 26011\n  ./llamafile-0.8.14\n",
     "failed to allocate CUDA0 buffer of size 1056964608", "kv_cache_alloc"),
    # (held-outs 143-146) programs' own error lines, with no level
    # Slurm's slurmd log: its error() under the time and the step
    ("[2024-07-05T14:10:54.164] [51.0] pyxis: starting container: pyxis_51.0\n"
     "[2024-07-05T14:11:11.152] [51.0] error: pyxis: couldn't start container\n",
     "pyxis: couldn't start container", "startup_other"),
    # relayed by the programs around it
    ("qdo-srun.py: srun#64: slurmstepd: error: Detected 1 oom_kill event in StepId=43622791.67. Some of the step "
     "tasks have been OOM Killed.\n", "Detected 1 oom_kill event", "unknown"),
    # llama.cpp's grammar parser as ollama's runner prints it, behind compose's prefix: a request's grammar
    ('ollama  | parse: error parsing grammar: unknown escape at \\d"{4,4} "-\\d"{2,2} "\n',
     "error parsing grammar: unknown escape", "serving"),
    # no level, a time before it
    ("[2025-06-23 07:22:00] Error in parse_streaming_increment: Expecting value: line 1 column 1 (char 0)\n",
     "Error in parse_streaming_increment: Expecting value", "serving"),  # a request's output parsed as it streams
    # Rust's anyhow under TEI's "Error:": the deepest cause is in the message
    ("text-embeddings-1  | Error: Could not create backend\ntext-embeddings-1  | \ntext-embeddings-1  | Caused by:\n"
     "text-embeddings-1  |     Could not start backend: Runtime compute cap 52 is not compatible with compile time "
     "compute cap 75\n", "Runtime compute cap 52 is not compatible", "startup_other"),
    # a CUDA sample's check, as a GPU validator runs it
    ("[Vector addition of 50000 elements]\nFailed to allocate device vector A (error code CUDA driver version is "
     "insufficient for CUDA runtime version)!\n", "CUDA driver version is insufficient", "unknown"),
    ("[task 2025-07-01T05:06:30.004+00:00] [train] nvidia-smi failed with return code 18\n"
     "[task 2025-07-01T05:06:30.005+00:00] [train] [nvidia-smi(stdout)] Failed to initialize NVML: Driver/library "
     "version mismatch\n", "Failed to initialize NVML: Driver/library version mismatch", "startup_other"),
    # ONNX Runtime's own error record, its severity letter the level
    ("2025-12-28 12:17:36.369097028 [E:onnxruntime:, inference_session.cc:2280 operator()] Exception during "
     "initialization: /onnxruntime/ov_interface.cc:79 Exception while Reading network\n",
     "Exception while Reading network", "weight_loading"),
])
def test_failure_lines_with_no_level(log: str, said: str, phase: str) -> None:
    root = _root(log)
    assert root is not None and root[0] == "log_line" and said in root[1] and root[2] == phase


@pytest.mark.parametrize("log", [
    # prose that only mentions a function and a failure, and a function's progress line, are no failure
    "common_init_from_params: warming up the model with an empty run - please wait ...\n",
    "the ggml_backend_cuda: failed paths are described below\n",
    "note: error is expected here when the cache is cold\n",
    "error log:INFO 07-01 10:00:00 [api_server.py:1] args: Namespace(host=None)\n",  # prose glued to a record
    "we saw error as follow:\n",
])
def test_a_line_that_states_no_failure_is_none(log: str) -> None:
    assert analyze(log).root_cause is None


@pytest.mark.parametrize(("log", "kind", "said"), [
    ("error: Uncaught SIGSEGV (SEGV_MAPERR) at 0x8 on home pid 25983 tid 26011\n", "fatal_signal", "Uncaught SIGSEGV"),
    ('finishedAt: "2025-12-17T10:56:44Z"\nreason: OOMKilled\nstartedAt: "2025-12-17T10:56:35Z"\n', "oom_kill",
     "reason: OOMKilled"),
])
def test_crash_and_kill_reports_with_no_level(log: str, kind: str, said: str) -> None:
    analysis = analyze(log)
    assert [e.kind for e in analysis.events] == [kind]
    assert analysis.root_cause is not None and said in analysis.root_cause.message


def test_an_application_s_error_naming_the_exception_it_caught() -> None:
    root = analyze("Failed to load model.\n\nError when loading model: ValueError: Model type gemma4 not supported. "
                   "Error: No module named 'mlx_vlm.models.gemma4'\n").root_cause
    assert root is not None and root.kind == "exception" and root.exception_type == "ValueError"
    assert root.message.startswith("Model type gemma4 not supported.")


def test_an_exception_line_one_space_in_is_a_bare_exception_line() -> None:
    # LM Studio's engine log: the record's header on one line, its message on the next, one space in
    log = ("2026-05-07 16:42:48 [DEBUG]\n KeyError: 'model_type'\n\nAt:\n"
           "  /Users/x/.lmstudio/lib/python3.11/site-packages/mlx_lm/utils.py(185): _get_classes\n")
    root = analyze(log).root_cause
    assert root is not None and (root.kind, root.exception_type, root.message) == ("exception", "KeyError", "'model_type'")
    # deeper, a paste that kept its indent (held-outs 178-181: an issue's fenced block indented under a list item); a
    # code line under it stays one
    indented = analyze("    KeyError: 'model_type'\n").root_cause
    assert indented is not None and (indented.exception_type, indented.message) == ("KeyError", "'model_type'")
    assert analyze("    raise KeyError('model_type')\n").root_cause is None


def test_nccl_s_return_trace_through_its_init_puts_its_warnings_in_nccl_init() -> None:
    host = "runner:202016:202235 [0] "
    log = (f"{host}misc/shmutils.cc:88 NCCL WARN Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes, error: "
           "No space left on device (28)\n\n"
           f"{host}misc/shmutils.cc:132 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-WU88OE (size "
           "9637888), error: No space left on device (28)\n"
           f"{host}NCCL INFO transport/shm.cc:551 -> 2\n{host}NCCL INFO transport/shm.cc:493 -> 2\n")
    analysis = analyze(log)
    assert [e.phase for e in analysis.events] == ["nccl_init", "nccl_init"]
    assert analysis.root_cause is not None and analysis.root_cause.phase == "nccl_init"
    # a collective's trace at run time (the proxy, the network transport's progress) names no step
    runtime = ("[0] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed by remote peer 10.10.1.3<36138>\n"
               "[0] NCCL INFO misc/socket.cc:80 -> 6\n[0] NCCL INFO proxy.cc:698 -> 6\n")
    root = analyze(runtime).root_cause
    assert root is not None and root.phase == "unknown"


@pytest.mark.parametrize(("text", "phase"), [
    ("ncclInvalidUsage: Duplicate GPU detected : rank 3 and rank 0 both on CUDA device f000", "nccl_init"),
    ("RuntimeError: CUDA error: peer access is not supported between these two devices", "nccl_init"),
    ("/nvshmem/src/host/mem/mem_heap.cpp:1509: non-zero status: 2 cuMemCreate failed", "nccl_init"),
    ("rtSetDevice execute failed, reason=[device id error][FUNC:FuncErrorReason][FILE:error_message_manage.cc]",
     "startup_other"),
    ('20241128 03:48:41.743000 UTC 21264 ERROR Could not load engine: Could not load library "C:\\engine.dll"',
     "startup_other"),
    ("[llama-cpp] Fails: could not load model: rpc error: code = Unavailable desc = error reading from server: EOF",
     "weight_loading"),
    ("[DP0 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300.0, self.soft=False)", "serving"),
    ("ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 1056964608", "kv_cache_alloc"),
    # (held-outs 143-146)
    ('docker: Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]].',
     "startup_other"),
    ("common_chat_templates_init: failed to parse chat template (defaulting to chatml): Expected closing block tag",
     "startup_other"),
    ("KeyError: 'invalid tool call parser: openai (chose from { deepseek_v3, glm45, hermes })'", "startup_other"),
    ("[2024-07-05T14:11:11.152] [51.0] error: pyxis: couldn't start container", "startup_other"),
    ("The engine plan file is not compatible with this version of TensorRT, expecting library version 10.3",
     "weight_loading"),
    # (held-out 152)
    ("[sgl_kernel] CRITICAL: Could not load any common_ops library!", "startup_other"),
])
def test_words_that_name_a_step(text: str, phase: str) -> None:
    assert decide_phase((), (text,)) == phase


@pytest.mark.parametrize("frames", [
    # a Python 3.14 http.server request handled in a thread, the app's handler built for it (its __init__)
    (("/lib/python3.14/socketserver.py", "process_request_thread"), ("/lib/python3.14/socketserver.py", "finish_request"),
     ("/site-packages/mlx_lm/server.py", "__init__")),
    # Flask streaming a response through Werkzeug
    (("/site-packages/werkzeug/wrappers/response.py", "_iter_encoded"), ("/site-packages/flask/helpers.py", "generator"),
     ("/site-packages/mlxserver/generate.py", "generate_steps")),
])
def test_a_request_handler_s_frames_are_serving(frames: tuple[tuple[str, str], ...]) -> None:
    assert decide_phase([(file, function, None) for file, function in frames]) == "serving"


def test_a_vllm_worker_named_by_its_ranks_alone() -> None:
    line = parse_line('(Worker_TP3) ERROR 04:57:00 [multiproc_executor.py:1055]   File "x.py", line 287, in func')
    assert (line.format, line.rank) == ("vllm", "TP3")
    assert parse_line("(EngineCore_DP0) hello").rank is None  # an engine core's DP index is its name, not a rank


def test_lmdeploy_s_banner_says_its_http_server_up_is_ready() -> None:
    up = ("INFO:     Started server process [202693]\nINFO:     Waiting for application startup.\n"
          "INFO:     Application startup complete.\nINFO:     Uvicorn running on http://0.0.0.0:23333\n")
    tb = ("Exception in thread Thread-1 (_work_thread):\nTraceback (most recent call last):\n"
          '  File "/x/lmdeploy/vl/engine.py", line 80, in _work_thread\n    self.loop.run_until_complete(x())\n'
          "RuntimeError: boom\n")
    hint = "HINT:    Please open http://0.0.0.0:23333 in a browser for detailed api usage!!!\n"
    with_banner, without = analyze(hint + up + tb).root_cause, analyze(up + tb).root_cause
    assert with_banner is not None and with_banner.phase == "serving"
    assert without is not None and without.phase == "warmup"  # a bare uvicorn ready line: SGLang's warm-up starts
