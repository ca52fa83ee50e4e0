"""What held-outs 131-134 (small servers, kernel libraries, serving platforms, evaluation and fine-tuning tools) showed
missing, each a general rule: an error-level record whose words name no failure, more failure lines with no level
(a kernel's assert with its expression in backticks, Python refusing ``-m``, Go's exec on a child a signal ended, a
usage error in rich-click's box), and more phase evidence (a request served once uvicorn was up, the error lines a
loader's callers print after it, the code line above a cut traceback under its carets, words of a check at start-up, a
model download, a server trying its backends on a model)."""

from __future__ import annotations

import pytest

from workbench.tracebacks import analyze


def _root(log: str) -> tuple[str | None, str, str] | None:
    root = analyze(log).root_cause
    return None if root is None else (root.kind, root.message, root.phase)


def test_an_error_record_naming_no_failure_is_read_after_records_of_its_format() -> None:
    # the format's records before it made the scanner read it as dull: it named no failure word
    log = ("[2025-07-15 07:38:13,185] LMCache INFO: Reqid: cmpl-d3f721a2193146fbbc0153fc9a3f3443-0, Total tokens 12\n"
           "[2025-07-15 07:38:13,197] LMCache ERROR: The number of retrieved tokens is less than the expected number of "
           "tokens! This should not happen! (vllm_v1_adapter.py:476:lmcache.integration.vllm.vllm_v1_adapter)\n")
    root = _root(log)
    assert root is not None and root[0] == "log_line" and "number of retrieved tokens is less" in root[1]
    assert root[2] == "serving"  # the request id of the record before it


@pytest.mark.parametrize(("log", "said", "phase"), [
    ("TensorCompare.cu:109 _assert_async_cuda_kernel: Assertion `probability tensor contains either inf, nan or "
     "element < 0` failed\nSubprocess scheduler_0 crashed with exit code -3. Triggering SIGQUIT for cleanup...\n",
     "probability tensor contains either inf, nan or element < 0", "serving"),
    ("$ bentoml serve gemma:2b --port 33009\nModel loading...\n"
     "/home/user/.openllm/venv/608482142055440317/bin/python: No module named bentoml\n",
     "No module named bentoml", "startup_other"),
    ('[INFO] Request 10.0.1.135 "POST /upstream/qwen/infill HTTP/1.1" 502 41 "axios/1.8.4" 293.769421ms\n'
     "[DEBUG] <qwen-coder-14B-FIM> cmd.Wait() returned error: signal: aborted (core dumped)\n",
     "signal: aborted (core dumped)", "unknown"),
    ("Usage: slurm_script [OPTIONS] COMMAND [ARGS]...\nTry 'slurm_script --help' for help.\n"
     "╭─ Error ──────────────────────────────╮\n│ Missing command.                     │\n"
     "╰──────────────────────────────────────╯\n", "Missing command.", "startup_other"),
])
def test_failure_lines_with_no_level(log: str, said: str, phase: str) -> None:
    root = _root(log)
    assert root is not None and root[0] == "log_line" and said in root[1] and root[2] == phase


def test_a_box_not_titled_error_is_no_failure() -> None:
    assert analyze("╭─ Options ──────────╮\n│ --help  Show this. │\n╰────────────────────╯\n").root_cause is None


_UP = ("INFO:     Started server process [32884]\nINFO:     Waiting for application startup.\n"
       "INFO:     Application startup complete.\nINFO:     Uvicorn running on http://0.0.0.0:10002\n")
_ASGI = ("ERROR:    Exception in ASGI application\nTraceback (most recent call last):\n"
         '  File "/opt/app/server.py", line 12, in handle\n    data = parse(body)\nValueError: bad body\n')


@pytest.mark.parametrize(("access", "phase"), [
    ('INFO:     172.17.0.1:47250 - "POST /api/generate HTTP/1.1" 200 OK\n', "serving"),
    ('INFO:     127.0.0.1:47250 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n', "serving"),
    # SGLang's own warm-up request to itself once uvicorn is up: still the warm-up
    ('INFO:     127.0.0.1:47250 - "POST /generate HTTP/1.1" 200 OK\n', "warmup"),
])
def test_a_request_answered_once_the_http_server_is_up_is_serving(access: str, phase: str) -> None:
    root = analyze(_UP + access + _ASGI).root_cause
    assert root is not None and root.exception_type == "ValueError" and root.phase == phase


def test_a_loader_s_callers_error_after_a_bare_failure_line_gives_its_phase() -> None:
    log = ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 7825.94 MiB on device 0: cudaMalloc failed: out of "
           "memory\nllama_model_load: error loading model: failed to allocate buffer\n")
    assert _root(log) == ("log_line", "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 7825.94 MiB on device 0: "
                          "cudaMalloc failed: out of memory", "weight_loading")


def test_the_code_line_above_a_cut_traceback_is_read_under_its_carets() -> None:
    prefix = "ERROR 04-21 20:40:51 [engine.py:140] "
    lines = ["    ret_token_mask = engine.retrieve(", "                     ^^^^^^^^^^^^^^^^",
             '  File "/usr/local/lib/python3.12/dist-packages/nvtx/nvtx.py", line 122, in inner',
             "    result = func(*args, **kwargs)",
             '  File "/usr/local/lib/python3.12/dist-packages/lmcache/experimental/storage_backend/storage_manager.py", '
             "line 236, in get", "    memory_obj = backend.get_blocking(key)"]
    root = analyze("".join(prefix + line + "\n" for line in lines)).root_cause
    assert root is not None and root.phase == "serving"  # LMCache's retrieve runs in a request


@pytest.mark.parametrize(("log", "phase"), [
    ("> ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla "
     "V100-SXM2-32GB GPU has compute capability 7.0.\n", "startup_other"),
    ("RuntimeError: synStatus=8 [Device not found] Device acquire failed.\n", "startup_other"),
    ('ERROR 06-11 21:06:33 [core.py:515] RuntimeError: Data processing error: CAS service error : Error : single flight '
     'error: Real call failed: ReqwestError(reqwest::Error { kind: Status(429) }, "https://transfer.xethub.hf.co/x")\n',
     "weight_loading"),
    ("1:03PM INF [llama-cpp] Attempting to load\n"
     "1:03PM INF Loading model 'b5869d55688a529c3738cb044e92c331' with backend llama-cpp\n"
     '1:03PM ERR failed starting/connecting to the gRPC service error="rpc error: code = Unavailable desc = '
     'connection error"\n', "weight_loading"),
    ("E0601 12:27:13.738561 12761 transfer_task.cpp:673] Failed to submit all transfers, error code is "
     "InvalidArgument\n", "serving"),
    ("(WorkerDict pid=1143757) resume_memory_occupation kv_cache\n(WorkerDict pid=1143757) [torch_memory_saver.cpp] "
     "CUresult error  result=1 file=csrc/torch_memory_saver.cpp func=resume line=206\n", "serving"),
    ("ERROR: Model worker crashed: Llama.cpp failed decoding: Decode Error 1: NoKvCacheSlot\n", "serving"),
    ("mistralrs-svc0  | 2025-06-22T01:42:38.525982Z  INFO mistralrs_core::engine::logger: Throughput (T/s) 0.60, Prefix "
     "cache hitrate 0.00%, 0 running, 0 waiting\nmistralrs-svc0  | thread '<unnamed>' panicked at /root/.cargo/registry/"
     "src/cudarc-0.13.9/src/driver/safe/core.rs:257:76:\nmistralrs-svc0  | called `Result::unwrap()` on an `Err` value: "
     "DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, \"an illegal memory access was encountered\")\n", "serving"),
])
def test_words_and_markers_that_place_a_failure(log: str, phase: str) -> None:
    root = analyze(log).root_cause
    assert root is not None and root.phase == phase


@pytest.mark.parametrize("last", ["Fatal Python error: Segmentation fault", "ERROR:    Exception in ASGI application",
                                  "EE9999: Inner Error!"])
def test_a_log_ending_in_a_report_s_head_is_cut_inside_the_report(last: str) -> None:
    log = ("INFO 01-01 00:00:00 [engine.py:10] Added request cmpl-1234567890abcdef.\n"
           "ERROR 01-01 00:00:01 [engine.py:12] RuntimeError: the batch failed\n" + last + "\n")
    final = analyze(log).final
    assert final is not None and final.truncated
    whole = analyze(log + "Current thread 0x00007f (most recent call first):\n  File \"/x/y.py\", line 3 in <module>\n")
    assert whole.final is not None and not whole.final.truncated


def test_winston_s_lower_case_level_is_a_level() -> None:
    from workbench.logformats import parse_line
    line = parse_line("LibreChat         | 2024-09-01 21:43:29 error: Failed to fetch models from Mistral API")
    assert (line.level, line.time, line.message) == ("ERROR", "2024-09-01 21:43:29", "Failed to fetch models from Mistral API")
    assert parse_line("2024-07-26 08:57:28 warn: [OpenAIClient.chatCompletion][stream] API error").level == "WARNING"
    # not a lower-case word further on ("| RuntimeError: CUDA error: ..." after a time is no winston record)
    assert parse_line("2025-05-30 18:28:27.890 | RuntimeError: CUDA error: no kernel image").level is None
    root = analyze("2024-09-01 21:43:28 info: Server listening on all interfaces at port 3080\n"
                   "2024-09-01 21:43:29 error: Failed to fetch models from Mistral API\n").root_cause
    assert root is not None and root.message == "Failed to fetch models from Mistral API"


@pytest.mark.parametrize(("log", "serving"), [
    ("Traceback (most recent call last):\n  File \"/app/agent.py\", line 3, in run\n    client.chat.completions.create()\n"
     "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': '\"auto\" tool choice requires "
     "--enable-auto-tool-choice'}\n", True),
    ("Error in generating model output:\nError code: 500 - {'message': 'Internal server error'}\n", True),
    ("2025-04-28 10:00:01.123 | ERROR    | open_webui.retrieval.utils:generate_ollama_batch_embeddings:661 - Error "
     "generating ollama batch embeddings: 500, message='Internal Server Error', url='http://172.17.0.3:11434/api/embed'"
     "\n", True),
    ("2025-03-20 14:02:11.045 | ERROR    | app.llm:ask_tool:263 - OpenAI API error: Internal Server Error\n", True),
    # a connection the client could not make says nothing of the server's phase
    ("Traceback (most recent call last):\n  File \"/app/agent.py\", line 3, in run\n    client.chat.completions.create()\n"
     "openai.APIConnectionError: Connection error.\n", False),
])
def test_a_client_s_error_for_a_server_s_answer_is_serving(log: str, serving: bool) -> None:
    analysis = analyze(log)
    assert analysis.root_cause is not None and (analysis.root_cause.phase == "serving") == serving
    assert analysis.final is not None and not analysis.final.truncated  # "...error'}" announces no stack


def test_a_cann_inner_error_takes_the_words_said_under_its_code() -> None:
    prefix = "ERROR 05-27 09:53:02 [engine.py:448] "
    log = "".join(prefix + line + "\n" for line in [
        "[Error]: The internal ACL of the system is incorrect.", "EH9999: Inner Error!",
        "EH9999: [PID: 854] 2025-05-27-09:53:02.440.058 [Init][PlatformInfo]init runtime platform info failed, SocVersion "
        "= Ascend910B2[FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]",
        "        TraceBack (most recent call last):"])
    root = analyze(log).root_cause
    assert root is not None and root.message.endswith("init runtime platform info failed, SocVersion = Ascend910B2")
    other = log.replace("EH9999: [PID", "EZ1001: [PID")  # another code's line is another record
    assert analyze(other).root_cause.message != root.message  # type: ignore[union-attr]


def _stack(*frames: tuple[str, str], exc: str = "RuntimeError: boom") -> str:
    body = "".join(f'  File "/usr/lib/python3.12/site-packages/{path}", line 10, in {func}\n    x()\n' for path, func in frames)
    return f"Traceback (most recent call last):\n{body}{exc}\n"


@pytest.mark.parametrize(("frames", "phase"), [
    ((("vllm/model_executor/layers/sampler.py", "get_logprobs"),), "serving"),
    ((("vllm/spec_decode/spec_decode_worker.py", "_run_speculative_decoding_step"),
      ("vllm/spec_decode/spec_decode_worker.py", "_verify_tokens")), "serving"),
    # (as the window printed it: enqueue_output answers start-up RPCs too, the async output's get_output is a step's)
    ((("vllm/v1/executor/multiproc_executor.py", "enqueue_output"), ("vllm/v1/worker/gpu_model_runner.py", "get_output"),
      ("torch_npu/npu/streams.py", "synchronize")), "serving"),
    ((("xinference/api/restful_api.py", "stream_results"), ("xoscar/api.py", "__anext__")), "serving"),
    # v0's profile run samples too: the start-up frame outside the sampler decides
    ((("vllm/worker/model_runner.py", "profile_run"), ("vllm/model_executor/layers/sampler.py", "forward")),
     "kv_cache_alloc"),
])
def test_frames_of_an_engine_s_step_and_a_server_s_request(frames: tuple[tuple[str, str], ...], phase: str) -> None:
    root = analyze(_stack(*frames)).root_cause
    assert root is not None and root.phase == phase
