"""Mechanisms added from misses of held-outs 34 (vLLM and SGLang) and 35 (projects around them), each measured once
untuned first, on lines written in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.logformats import parse_line
from workbench.tracebacks import analyze


def test_torch_rank_prefixes_indented_by_a_paste_still_carry_frames() -> None:
    """ms-swift#9435: a stack pasted inside a list item, each "[rank1]:" line indented by one or two blanks."""
    log = "\n".join((
        " [rank1]:     engine = Engine(",
        "  [rank1]:              ^^^^^^^",
        '  [rank1]:   File "/app/swift/infer_engine/vllm_engine.py", line 203, in __init__',
        "  [rank1]:     self._prepare_engine()",
        '  [rank1]:   File "/app/swift/infer_engine/vllm_engine.py", line 226, in _prepare_engine',
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and list(rc.ranks) == ["rank1"]
    assert rc.innermost_frame is not None and rc.innermost_frame.function == "_prepare_engine"


def test_a_launchers_word_that_the_server_never_came_up_is_a_failure_of_its_start() -> None:
    """instructlab#3466: "vLLM failed to start." with no traceback (the server's output was not shown)."""
    for line in ("vLLM failed to start.  Retry with --enable-serving-output to learn more about the failure.",
                 "SGLang server failed to start."):
        rc = analyze(f"INFO loading config\n{line}\nUsing unknown model family\n").root_cause
        assert rc is not None and rc.kind == "log_line" and rc.message.startswith(line.split(".")[0])
        assert rc.phase == "startup_other"


def test_pipe_separated_records_give_their_level_and_message() -> None:
    """Loguru's default format (Open WebUI, truenas/apps#3143: the container's own time glued in front) and Python
    logging's "asctime | levelname | name | " (FastChat)."""
    p = parse_line("2025-09-10 11:16:22.307 | ERROR    | open_webui.routers.ollama:send_get_request:106 - Connection "
                   "error: Cannot connect to host localhost:11434 ssl:default")
    assert (p.level, p.time) == ("ERROR", "2025-09-10 11:16:22.307") and p.message.startswith("Connection error:")
    glued = parse_line("2025-09-10 18:16:22.307225+00:002025-09-10 11:16:22.307 | INFO     | uvicorn.protocols.http."
                       "httptools_impl:send:476 - 10.0.0.1:56095 - \"GET /api/v1/folders/ HTTP/1.1\" 200")
    assert glued.level == "INFO" and glued.message.startswith("10.0.0.1:56095")
    fc = parse_line("2024-08-27 12:54:55 | INFO | model_worker | Loading the model on worker 1")
    assert fc.level == "INFO" and fc.message == "Loading the model on worker 1"


def test_a_logger_that_took_over_stderr_gives_its_lines_no_level() -> None:
    """FastChat's build_logger redirects stderr into a logger at ERROR: "| ERROR | stderr |" is every line a library
    wrote (a loading bar here), not an error; frames after it, with torch's rank prefix, are still read."""
    bars = "2025-07-02 16:41:30 | ERROR | stderr | Loading safetensors checkpoint shards:   0% Completed | 0/2\n"
    assert analyze("2025-07-02 16:41:29 | INFO | model_worker | Loading the model\n" + bars).root_cause is None
    p = parse_line('2024-10-14 01:39:49 | ERROR | stderr | [rank0]:   File "/x/vllm_worker.py", line 290, in <module>')
    assert p.level is None and p.rank == "rank0" and p.message.startswith('  File "/x/vllm_worker.py"')


def test_an_error_record_behind_a_glued_container_time_is_the_failure() -> None:
    """truenas/apps#3143: the container runtime's time glued to Open WebUI's loguru record, which says at ERROR that
    the front end cannot reach its backend (aiohttp's ClientConnectorError)."""
    log = ("2025-09-10 18:16:22.307225+00:002025-09-10 11:16:22.307 | ERROR    | open_webui.routers.ollama:send_get_request:106 - Connection error: "
           "Cannot connect to host localhost:11434 ssl:default [Connect call failed ('127.0.0.1', 11434)]\n"
           '2025-09-10 11:16:22.312 | INFO     | uvicorn.protocols.http.httptools_impl:send:476 - 10.0.0.1:56095 - '
           '"GET /api/v1/folders/ HTTP/1.1" 200\n')
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "Cannot connect to host localhost:11434" in rc.message


def test_a_warm_up_run_inside_the_event_loop_is_warmup_not_serving() -> None:
    """text-generation-inference#1672: the shard's gRPC Warmup, run by asyncio's loop ("self.run_forever()" is
    asyncio's, not an engine's scheduler loop of that name), into the model class's warmup, cut there."""
    conda = "/opt/conda/lib/python3.10"
    tgi = f"{conda}/site-packages/text_generation_server"
    log = "\n".join((
        f'  File "{conda}/asyncio/base_events.py", line 636, in run_until_complete',
        "    self.run_forever()",
        f'  File "{conda}/asyncio/base_events.py", line 603, in run_forever',
        "    self._run_once()",
        f'  File "{conda}/site-packages/grpc_interceptor/server.py", line 165, in invoke_intercept_method',
        "    return await self.intercept(",
        f'  File "{tgi}/server.py", line 95, in Warmup',
        "    max_supported_total_tokens = self.model.warmup(batch)",
        f'  File "{tgi}/models/causal_lm.py", line 74, in warmup',
        "    self.generate_token",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "warmup"


def test_a_scheduler_loop_called_from_the_engines_own_code_is_still_serving() -> None:
    """mini-sglang: its launcher's "scheduler.run_forever()" (a callee named outside the standard library)."""
    log = "\n".join((
        "Process minisgl-TP0-scheduler:",
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
        "    self.run()",
        '  File "/workspace/mini-sglang/python/minisgl/server/launch.py", line 31, in _run_scheduler',
        "    scheduler.run_forever()",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "serving"


def test_a_worker_death_reported_after_a_watchdog_timeout_is_its_consequence() -> None:
    """verl#3873: c10d's watchdog times out an all-reduce on rank 3 and tears the process down; Ray's raylet reports
    the dead worker later, after other lines.  The timeout is the root cause."""
    log = "\n".join((
        "(TaskRunner pid=152455) step:1 - global_seqlen/min:1309",
        "(WorkerDict pid=97397, ip=10.0.0.2) [rank3]:[E1023 02:44:30.941975491 ProcessGroupNCCL.cpp:632] [Rank 3] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=26, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=1200000) ran for 1200007 milliseconds before timing out.",
        "(TaskRunner pid=152455) step:2 - global_seqlen/min:1311",
        "",
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the "
        "problem, check the logs for the dead worker. RayTask ID: ffff Worker ID: 2c61",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and "Watchdog caught collective operation timeout" in rc.message
    assert list(rc.ranks) == ["rank3"]


def test_a_dump_of_other_threads_alone_is_a_cut_crash_where_the_threads_were() -> None:
    """sglang#30399: faulthandler's "Thread 0x… (most recent call first):" stacks with no "Fatal Python error" or
    "Current thread" in the window (a hang watchdog's dump of every thread, its header cut off): a failure, in the
    phase the threads' frames name (the prefill scheduler's event loop, stuck in an all-gather: serving)."""
    srt = "/sgl-workspace/sglang/python/sglang/srt"
    log = "\n".join((
        "Thread 0x0000fffff7ff46a0 (most recent call first):",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py", line 4193 in '
        "all_gather_into_tensor",
        f'  File "{srt}/disaggregation/prefill.py", line 518 in event_loop_overlap_disagg_prefill',
        f'  File "{srt}/managers/scheduler.py", line 4199 in dispatch_event_loop',
        f'  File "{srt}/managers/scheduler.py", line 4210 in run_scheduler_process',
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "serving"
    assert analyze("Thread 0x00007f (most recent call first):\n\nINFO done\n").root_cause is None  # no frame: nothing


def test_vllm_v0s_unquoted_method_name_in_its_worker_wrapper_gives_the_phase() -> None:
    """vllm#5477: "Error executing method start_worker_execution_loop." (v0, no quotes): the worker's serving loop."""
    log = ("\x1b[36m(RayWorkerWrapper pid=4183, ip=10.0.0.2)\x1b[0m ERROR 06-03 23:13:39 worker_base.py:148] Error "
           "executing method start_worker_execution_loop. This might cause deadlock in distributed execution.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "serving"


def test_an_sglang_record_that_ends_on_the_exception_it_caught_is_an_error_line() -> None:
    """sglang#14754: SGLang's format writes no level; its loader's record ends on the exception ("... - SafetensorError:
    ..."), during the weights' load (the timeline's phase), on TP0."""
    log = "\n".join((
        "[2025-12-09 14:26:49 TP0] Load weight begin. avail mem=94.10 GB",
        "[2025-12-09 14:26:49 TP0] Ignore import error when loading sglang.srt.models.mindspore: name 'ms' is not defined",
        "[2025-12-09 14:26:50 TP0] Corrupted safetensors file detected: /models/model-00008-of-00121.safetensors - "
        "SafetensorError: Error while deserializing header: incomplete metadata",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.message.startswith("Corrupted safetensors file detected")
    assert rc.phase == "weight_loading" and list(rc.ranks) == ["TP0"]


def test_a_bare_safetensors_error_is_weight_loading() -> None:
    """sglang PR 13870: safetensors' own error, alone."""
    rc = analyze("safetensors_rust.SafetensorError: Error while deserializing header: \n"
                 "invalid JSON in header: EOF while parsing a value at line 1 column 0\n").root_cause
    assert rc is not None and rc.exception_type == "safetensors_rust.SafetensorError" and rc.phase == "weight_loading"


def test_sglangs_capture_hints_alone_say_a_cut_capture_failure() -> None:
    """sglang#6218: only the tail of the hints SGLang prints under "Capture cuda graph failed" is in the window."""
    log = ("3. disable torch compile by not using --enable-torch-compile\n"
           "4. disable cuda graph by --disable-cuda-graph. (Not recommonded. Huge perf loss)\n"
           "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "cuda_graph_capture"


def test_a_piecewise_graph_failure_line_comes_before_the_init_traceback_it_causes() -> None:
    """sglang PR 27811 (and 27650): "Piecewise CUDA Graph failed with error: ..." on TP7, no level, then TP5's
    scheduler traceback of the same start: the capture failed first."""
    log = "\n".join((
        "[2026-06-10 13:08:34 TP7] Piecewise CUDA Graph failed with error: 'TcPiecewiseForwardContext' object has no "
        "attribute 'num_tokens'",
        "Piecewise CUDA Graph is enabled by default as an experimental feature.",
        "To work around this error, add --disable-piecewise-cuda-graph to your launch command.",
        "[2026-06-10 13:08:34 TP5] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/python/sglang/srt/managers/scheduler.py", line 4048, in run_scheduler_process',
        "    scheduler = Scheduler(",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and "has no attribute 'num_tokens'" in rc.message and rc.phase == "cuda_graph_capture"


def test_a_programs_own_capture_failure_line_is_the_failure_in_capture_not_warmup() -> None:
    """huggingface/speech-to-speech#354: a logger with no level field, warming up the handler, then "CUDA graph capture
    failed: ... '_warmup'": the words name the capture (an attribute called _warmup does not make it warm-up)."""
    log = ("2026-07-14 08:20:50,764 - speech_to_speech.TTS.qwen3_tts_handler Warming up Qwen3TTSHandler\n"
           "2026-07-14 08:20:50,764 - speech_to_speech.TTS.qwen3_tts_handler CUDA graph capture failed: "
           "'GGMLQwen3TTS' object has no attribute '_warmup'\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.phase == "cuda_graph_capture"


def test_a_kernel_autotune_before_the_failure_puts_the_start_in_warmup() -> None:
    """vllm#30324: vLLM's kernel warm-up runs FlashInfer's autotuner after the KV cache is sized; the start then fails."""
    p = "(EngineCore_DP0 pid=12178)"
    log = "\n".join((
        f"{p} INFO 12-09 16:00:55 [kv_cache_utils.py:1286] GPU KV cache size: 625,408 tokens",
        f"{p} 2025-12-09 16:01:03,591 - INFO - autotuner.py:256 - flashinfer.jit: [Autotuner]: Autotuning process "
        "starts ...",
        f"{p} 2025-12-09 16:01:05,084 - INFO - autotuner.py:262 - flashinfer.jit: [Autotuner]: Autotuning process ends",
        f"{p} ERROR 12-09 16:01:05 [core.py:843] EngineCore failed to start.",
        f"{p} ERROR 12-09 16:01:05 [core.py:843] Traceback (most recent call last):",
        f'{p} ERROR 12-09 16:01:05 [core.py:843]   File "/venv/vllm/v1/engine/core.py", line 834, in run_engine_core',
        f"{p} ERROR 12-09 16:01:05 [core.py:843]     engine_core = EngineCoreProc(*args, **kwargs)",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "warmup"


def test_the_record_just_above_a_traceback_under_its_header_is_its_message() -> None:
    """HabanaAI/vllm-fork#2223: logger.exception(e) writes str(e) (no error words) then the stack under one header;
    the Gaudi runner's "[Warmup][Graph/...]" lines before put the start in warm-up."""
    h = "ERROR 01-26 14:30:12 [engine.py:474]"
    log = "\n".join((
        "INFO 01-26 14:30:11 [hpu_model_runner.py:3943] [Warmup][Graph/mix/prompt][1/352] batch_size:1 query_len:8192",
        "INFO 01-26 14:30:11 [hpu_model_runner.py:3943] [Warmup][Graph/mix/decode][1/112] batch_size:16 query_len:1",
        f"{h} not enough values to unpack (expected 3, got 2)",
        f"{h} Traceback (most recent call last):",
        f'{h}   File "/vllm-fork/vllm/engine/multiprocessing/engine.py", line 462, in run_mp_engine',
        f"{h}     engine = MQLLMEngine.from_vllm_config(",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and "not enough values to unpack" in rc.message and rc.phase == "warmup"


def test_a_flattened_logged_repr_gives_the_exception_type() -> None:
    """kvcache-ai/Mooncake#504: vLLM v0's engine loop logs repr(e) then the stack, a paste lost the newlines."""
    h = "ERROR 06-16 11:58:22 [engine.py:166]"
    log = (f"{h} IndexError('Dimension out of range (expected to be in range of [-2, 1], but got 2)') {h} Traceback "
           f'(most recent call last): {h}   File "/vllm/vllm/engine/multiprocessing/engine.py", line 164, in start '
           f"{h}     self.run_engine_loop()\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "IndexError" and rc.message.startswith("Dimension out of range")
    from workbench.tracebacks.patterns import own_record

    assert own_record("Failed to import sglang ", "sglang") == ("Failed to import sglang ", False)  # a format's name


def test_rust_tracing_json_records_give_their_level_also_when_cut() -> None:
    """opea-project/GenAIExamples#1202: text-generation-inference's launcher logs JSON (tracing-subscriber's "fields"),
    the record cut by the window inside the shard's stderr it quotes."""
    from workbench.tracebacks.prefixes import json_log

    whole = ('{"timestamp":"2024-11-27T22:44:00Z","level":"ERROR","fields":{"message":"Shard complete standard error '
             'output:\\n\\nTraceback (most recent call last):"},"target":"text_generation_launcher"}')
    assert json_log(whole) == "ERROR: Shard complete standard error output:"
    cut = whole[:120]
    assert json_log(cut) == "ERROR: Shard complete standard error output:"
    rc = analyze(cut + "\n").root_cause
    assert rc is not None and rc.kind == "log_line" and "Shard complete standard error output" in rc.message


def test_the_dynamic_loader_refusing_a_program_is_a_start_failure() -> None:
    """NVIDIA/nim-deploy#18: TensorRT-LLM's executorWorker cannot start, its library missing (no level, under MPI)."""
    log = ("INFO 06-20 20:55:22.673 utils.py:218] Setting free_gpu_memory_fraction to 0.9\n"
           "/usr/local/lib/python3.10/dist-packages/tensorrt_llm/bin/executorWorker: error while loading shared "
           "libraries: libnvinfer.so.10: cannot open shared object file: No such file or directory\n"
           "--------------------------------------------------------------------------\n"
           "Child job 2 terminated normally, but 1 process returned\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "error while loading shared libraries" in rc.message
    assert rc.phase == "startup_other"


def test_a_rust_cli_refusing_its_arguments_is_an_error_line() -> None:
    """skypilot PR 6507: uv (clap) refusing a flag in a task's setup, under a process prefix."""
    log = ("(setup pid=1293) Using CPython 3.10.13 interpreter\n"
           "(setup pid=1293) error: unexpected argument '--torch-backend' found\n"
           "(setup pid=1293) Usage: uv pip install --no-cache <PACKAGE>\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "unexpected argument '--torch-backend' found" in rc.message


def test_an_api_servers_error_for_an_endpoint_is_serving() -> None:
    """llama-stack#1648: "Error executing endpoint route='/v1/inference/chat-completion'" over a rich box."""
    log = ("ERROR    2025-03-18 19:56:54,709 __main__:195 server: Error executing endpoint "
           "route='/v1/inference/chat-completion' method='post'\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "serving"


def test_a_function_that_loads_some_weights_is_weight_loading() -> None:
    """TensorRT-LLM#7703: the fused MoE's "load_all_fp4_weight_scales_and_alphas", alone in a cut window."""
    log = ('.venv/lib/python3.12/site-packages/tensorrt_llm/_torch/modules/fused_moe/quantization.py", line 1613, in '
           "load_all_fp4_weight_scales_and_alphas\n    logger.warning(\n    ^^^^^^\nNameError: name 'logger' is not "
           "defined\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "NameError" and rc.phase == "weight_loading"


def test_an_indented_paste_with_its_own_bracketed_tag_learns_that_tag() -> None:
    """vllm#39814: every line indented two blanks in a fence, tagged "[S]" before vLLM's process prefix."""
    p = "  [S] (APIServer pid=2954713)"
    log = "\n".join((
        f'{p}   File "/usr/lib/python3.12/asyncio/runners.py", line 118, in run',
        f"{p}     return self._loop.run_until_complete(task)",
        f'{p}   File "/home/u/vllm/vllm/entrypoints/openai/api_server.py", line 680, in run_server',
        f"{p}     await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)",
        f'{p}   File "/home/u/vllm/vllm/entrypoints/openai/api_server.py", line 694, in run_server_worker',
        f"{p}     async with build_async_engine_client(",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.innermost_frame is not None and rc.innermost_frame.function == "run_server_worker"
    assert rc.phase == "startup_other"


def test_nvshmems_connection_errors_are_a_failure_of_the_communicators_start() -> None:
    """sglang#7450 and #7888: DeepEP's NVSHMEM transport failing to connect its peers, lines with no level."""
    log = ("/sgl-workspace/nvshmem/src/modules/transport/ibrc/ibrc.cpp:418: non-zero status: 22 ibv_modify_qp failed\n"
           "\n"
           "/sgl-workspace/nvshmem/src/modules/transport/ibrc/ibrc.cpp:1433: non-zero status: 7 ep_connect failed\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "ibv_modify_qp failed" in rc.message and rc.phase == "nccl_init"
    rc = analyze("transport create connect failed \n/x/nvshmem/src/host/transport/transport.cpp:400: non-zero status: "
                 "7 \nconnect EPS failed \n").root_cause
    assert rc is not None and rc.message.startswith("transport create connect failed") and rc.phase == "nccl_init"


def test_a_dump_with_no_fatal_line_in_the_window_has_no_type() -> None:
    """sglang PR 5390: faulthandler's "Current thread" stack with the "Fatal Python error" line above the window:
    the type is cut off, not invented."""
    log = ("Current thread 0x00007f3c (most recent call first):\n"
           '  File "/sgl/srt/managers/scheduler.py", line 10 in event_loop_normal\n')
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type is None
    rc = analyze("Fatal Python error: Segmentation fault\n\n" + log).root_cause  # (the line read: it is the root)
    assert rc is not None and rc.kind == "log_line" and rc.message == "Fatal Python error: Segmentation fault"


def test_an_exception_of_a_packages_exceptions_module_after_hit_an_exception_is_read() -> None:
    """sglang PR 19573: "Scheduler hit an exception: torch._dynamo.exc.Unsupported: ..." (no Error in the name), the
    cause of the chain that follows."""
    log = "\n".join((
        "[2026-02-28 15:04:30 TP0] Scheduler hit an exception: torch._dynamo.exc.Unsupported: Logger not supported for "
        "non-export cases.",
        "The above exception was the direct cause of the following exception:",
        "Traceback (most recent call last):",
        '  File "/sgl/srt/managers/scheduler.py", line 3118, in run_scheduler_process',
        "    scheduler = Scheduler(",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "torch._dynamo.exc.Unsupported" and list(rc.ranks) == ["TP0"]


def test_tensorrt_llms_numbered_frames_with_library_offsets_are_a_native_backtrace() -> None:
    """triton-inference-server/tensorrtllm_backend#129: the backend's frames, its report cut above the window, through
    Triton's model instance initialisation: a start-up failure."""
    lib = "/opt/tritonserver/backends/tensorrtllm/libtriton_tensorrtllm.so"
    log = "\n".join((
        f"4       0x7f674a8395f5 {lib}(+0x515f5) [0x7f674a8395f5]",
        f"5       0x7f674a8374db {lib}(+0x4f4db) [0x7f674a8374db]",
        "7       0x7f674a81b235 TRITONBACKEND_ModelInstanceInitialize + 101",
        "8       0x7f67f459aa86 /opt/tritonserver/bin/../lib/libtritonserver.so(+0x1a4a86) [0x7f67f459aa86]",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "startup_other"


def test_clap_refusing_a_value_is_a_start_failure() -> None:
    """text-generation-inference#1451: the launcher's clap refusing "--disable-custom-kernels True"."""
    log = ("error: invalid value 'True' for '--disable-custom-kernels'\n  [possible values: true, false]\n\n"
           "For more information, try '--help'.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.phase == "startup_other"
    assert "invalid value 'True' for '--disable-custom-kernels'" in rc.message


def test_ggmls_cuda_errors_with_no_level_are_failures() -> None:
    """ollama#9562, TabbyML/tabby#1498, llama.cpp#1866: ggml's CUDA backend prints its errors with no level, and its
    "failed to initialize CUDA:" ahead of the generic wording that needs one."""
    rc = analyze("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 3257.82 MiB on device 0: cudaMalloc failed: "
                 "out of memory\nllama_model_load: error loading model: unable to allocate CUDA0 buffer\n").root_cause
    assert rc is not None and rc.kind == "log_line" and "cudaMalloc failed: out of memory" in rc.message
    rc = analyze("llama-cpp    | ggml_cuda_init: failed to initialize CUDA: unknown error\n").root_cause
    assert rc is not None and "failed to initialize CUDA: unknown error" in rc.message and rc.phase == "startup_other"


def test_an_exception_line_a_paste_glued_to_its_raise_is_read() -> None:
    """unslothai/unsloth#2107: "raise AttributeError(AttributeError: '...' object has no attribute 'vllm_engine'"."""
    log = ("Traceback (most recent call last):\n"
           '  File "/envs/u/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1928, in __getattr__\n'
           "    raise AttributeError(AttributeError: 'Qwen2ForCausalLM' object has no attribute 'vllm_engine'\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "AttributeError"
    assert rc.message == "'Qwen2ForCausalLM' object has no attribute 'vllm_engine'"
    assert rc.innermost_frame is not None and rc.innermost_frame.code == "raise AttributeError("


def test_a_cuda_error_printed_without_a_level_is_the_failure_when_nothing_else_is() -> None:
    """vllm PR 12981: the cumem allocator's "CUDA Error: ... at .../cumem_allocator.cpp:56", alone in the window."""
    log = ("CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:56\n"
           "CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:57\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.message.startswith("CUDA Error: out of memory")


def test_an_exception_line_after_the_tail_of_vllms_prefix_is_read() -> None:
    """vllm#20305: the window begins inside vLLM's prefix, at its source location, before the exception line."""
    log = ("[multiproc_executor.py:492] ValueError: Free memory on device (31.44/47.38 GiB) on startup is less than "
           "desired GPU memory utilization (0.95, 45.01 GiB).\n"
           "ERROR 06-30 13:53:19 [core.py:515] EngineCore failed to start.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "ValueError" and "less than desired GPU memory" in rc.message


def test_a_cxx_type_whose_message_wrapped_to_the_next_line_keeps_its_name() -> None:
    """mlx-serve#44: "libc++abi: terminating due to uncaught exception of type std::runtime_error: " then the message."""
    log = ("libc++abi: terminating due to uncaught exception of type std::runtime_error:\n"
           "[METAL] Command buffer execution failed: Insufficient Memory\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "std::runtime_error"


def test_ktransformers_server_backends_prefill_is_serving() -> None:
    """kvcache-ai/ktransformers#976: the server backend's chunked prefill into the model's forward, cut there."""
    kt = "/usr/lib/python3.11/site-packages/ktransformers"
    log = "\n".join((
        f'  File "{kt}/server/backend/interfaces/ktransformers.py", line 217, in prefill',
        "    logits = self.chunk_prefill(input_ids[:, chunk_start:chunk_end], cache_position)",
        f'  File "{kt}/server/backend/interfaces/ktransformers.py", line 200, in chunk_prefill',
        "    logits = self.model(",
        f'  File "{kt}/models/modeling_deepseek.py", line 1731, in forward',
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "serving"


def test_an_orchestrators_initialize_and_bootstrap_frames_are_start_up() -> None:
    """vllm-omni#3981 and #8076: the API server's orchestrator initialising its stages (_initialize_stage_replicas;
    #8076's _bootstrap_orchestrator too), cut there; threading's own _bootstrap frames say nothing of the kind."""
    omni = "/usr/lib/python3.12/site-packages/vllm_omni/entrypoints"
    log = "\n".join((
        "Traceback (most recent call last):",
        f'  File "{omni}/orchestrator.py", line 61, in _run_orchestrator',
        "    await asyncio.gather(*tasks)",
        f'  File "{omni}/orchestrator.py", line 88, in _initialize_stages',
        "    await self._all_stages()",
        f'  File "{omni}/orchestrator.py", line 140, in _initialize_stage_replicas',
        "    replica = self._make_replica(stage)",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "startup_other"
    thread = ("Traceback (most recent call last):\n"
              '  File "/usr/lib/python3.12/threading.py", line 1045, in _bootstrap_inner\n    self.run()\n'
              '  File "/app/sgl/srt/managers/scheduler.py", line 860, in event_loop_overlap\n    self.step()\n')
    rc = analyze(thread).root_cause
    assert rc is not None and rc.phase == "serving"
