"""Mechanisms added from misses of held-outs 44 (vLLM and SGLang) and 45 (projects around them), each measured once
untuned first, on lines written in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.logformats import parse_line
from workbench.tracebacks import analyze

_SGLANG_CAPTURE = "\n".join((
    "Traceback (most recent call last):",
    '  File "/sglang/python/sglang/srt/model_executor/model_runner.py", line 1620, in init_device_graphs',
    "    CudaGraphRunner(self) if not _is_npu else NPUGraphRunner(self)",
    '  File "/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 386, in __init__',
    "    raise Exception(",
    "Exception: Capture cuda graph failed: SubprocException: An exception occurred in a subprocess:",
    "",
    "Traceback (most recent call last):",
))


def test_a_wrapped_output_cut_before_its_first_whole_frame_leaves_the_wrapper_the_cause() -> None:
    """sglang#9832: the capture's wrapper introduces a subprocess's traceback the window cuts inside its first path."""
    rc = analyze(_SGLANG_CAPTURE + '\n  File "/\n').root_cause
    assert rc is not None and rc.exception_type == "Exception" and rc.message.startswith("Capture cuda graph failed")
    assert rc.phase == "cuda_graph_capture"
    # with a whole frame, the output it introduced says where it failed, however cut (as before)
    framed = analyze(_SGLANG_CAPTURE + '\n  File "/usr/lib/python3/dist-packages/torch/_inductor/'
                     'compile_worker/subproc_pool.py", line 321, in do_job\n').root_cause
    assert framed is not None and framed.exception_type is None and framed.line == 8


def test_a_frame_line_the_terminal_cut_inside_its_path_is_joined_to_its_tail() -> None:
    """vllm#12256: Ray workers' frames whose egg path wrapped at the terminal's width, the tail unprefixed."""
    p = "(RayWorkerWrapper pid=361, ip=192.168.100.119) ERROR 02-21 11:25:10 worker_base.py:581] "
    log = "\n".join((
        p + "Traceback (most recent call last):",
        p + '  File "/usr/local/lib/python3.10/dist-packages/vllm-0.7.4.dev8 ',
        '+g981f3c83.cu124-py3.10-linux-x86_64.egg/vllm/model_executor/model_loader/loader.py", line 409, in load_model ',
        p + "    loaded_weights = model.load_weights(",
        p + '  File "/usr/local/lib/python3.10/dist-packages/vllm-0.7.4.dev8 ',
        '+g981f3c83.cu124-py3.10-linux-x86_64.egg/vllm/model_executor/models/deepseek_v2.py", line 773, in load_weights ',
        p + "    param = params_dict[name] ",
        p + "KeyError: 'model.layers.55.mlp.experts.w2_weight_scale_inv' ",
    )) + "\n"
    tb = analyze(log).tracebacks[0]
    assert [f.function for f in tb.frames] == ["load_model", "load_weights"]
    assert tb.frames[1].file.endswith("vllm-0.7.4.dev8+g981f3c83.cu124-py3.10-linux-x86_64.egg/vllm/model_executor/"
                                      "models/deepseek_v2.py") and tb.frames[1].line == 773
    assert analyze(log).root_cause.phase == "weight_loading"  # type: ignore[union-attr]


def test_vllm_copying_a_steps_sampled_tokens_to_the_host_is_serving() -> None:
    """intel/llm-scaler#235: the device lost in gpu_model_runner's _to_list, the frame above it cut."""
    log = "\n".join((
        "(Worker_TP2 pid=291276) ERROR 01-12 02:58:31 [multiproc_executor.py:654]   File \"/usr/local/lib/python3.12/"
        "dist-packages/vllm/v1/worker/gpu_model_runner.py\", line 3776, in _to_list",
        "(Worker_TP2 pid=291276) ERROR 01-12 02:58:31 [multiproc_executor.py:654]     self.transfer_event.synchronize()",
        "(Worker_TP2 pid=291276) ERROR 01-12 02:58:31 [multiproc_executor.py:654] RuntimeError: Native API failed. "
        "Native API returns: 20 (UR_RESULT_ERROR_DEVICE_LOST)",
    )) + "\n"
    assert analyze(log).root_cause.phase == "serving"  # type: ignore[union-attr]


def test_a_cut_block_takes_the_step_a_neighbours_wrapper_names_by_its_method() -> None:
    """gpustack#1263: one worker's NCCL_CHECK failure cut above, the next worker's wrapper naming init_device."""
    w1 = "(VllmWorkerProcess pid=1699362) ERROR 02-19 19:18:42 multiproc_worker_utils.py:242] "
    w2 = "(VllmWorkerProcess pid=1699361) ERROR 02-19 19:18:42 multiproc_worker_utils.py:242] "
    log = "\n".join((
        w1 + '  File "/usr/local/lib/python3.10/dist-packages/vllm/distributed/device_communicators/pynccl_wrapper.py",'
        " line 256, in NCCL_CHECK",
        w1 + '    raise RuntimeError(f"NCCL error: {error_str}")',
        w1 + "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        w2 + "Exception in worker VllmWorkerProcess while processing method init_device.",
        w2 + "Traceback (most recent call last):",
        w2 + '  File "/usr/local/lib/python3.10/dist-packages/vllm/executor/multiproc_worker_utils.py", line 236, in '
        "_run_worker_process",
        w2 + "    output = run_method(worker, method, args, kwargs)",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "nccl_init"
    # a log line alone keeps its own known phase: only frames of a neighbour outrank it (held-out 26's NCCL WARN)


def test_ucx_records_give_their_level_location_and_message() -> None:
    """LMCache#725: UCX's own record behind its seconds, under a NIXL transfer."""
    p = parse_line("[1749803291.555759] [vllm-lmcache-zxy-977866c79-jxjnw:7053 :0]          tcp_ep.c:1260 UCX  ERROR "
                   "tcp_ep 0x3c502370 (state=CONNECTED): send(110) failed: Input/output error")
    assert (p.format, p.level, p.location, p.pid) == ("ucx", "ERROR", "tcp_ep.c:1260", 7053)
    assert p.message == "tcp_ep 0x3c502370 (state=CONNECTED): send(110) failed: Input/output error"
    assert parse_line("[1700000000.000001] [h1:12 :0]  ucp_worker.c:1866 UCX  WARN  some warning").level == "WARNING"
    assert parse_line("[12345.678901] usb 1-1: new high-speed USB device").format == "kernel"  # dmesg stays dmesg
    log = ("[2025-06-13 08:28:11,553] LMCache INFO: Storing KV cache for 5 out of 5 tokens (skip_leading_tokens=0) for "
           "request cmpl-409cf044877b43ffaa88891bd34a5428-0 (vllm_v1_adapter.py:688:lmcache)\n"
           "[1749803291.555759] [vllm-lmcache-zxy-977866c79-jxjnw:7053 :0]          tcp_ep.c:1260 UCX  ERROR tcp_ep "
           "0x3c502370 (state=CONNECTED): send(110) failed: Input/output error\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "send(110) failed" in rc.message and rc.phase == "serving"


def test_vllm_v0s_scheduler_is_serving() -> None:
    """ms-swift#3864: faulthandler's current thread in v0's scheduler, its header cut."""
    log = "\n".join((
        "Current thread 0x00007f2b06257e00 (most recent call first):",
        '  File "/usr/local/lib/python3.11/site-packages/vllm/core/scheduler.py", line 779 in _schedule_running',
        '  File "/usr/local/lib/python3.11/site-packages/vllm/core/scheduler.py", line 1244 in _schedule_default',
    )) + "\n"
    assert analyze(log).root_cause.phase == "serving"  # type: ignore[union-attr]


def test_a_container_in_crashloopbackoff_never_started() -> None:
    """vllm-project/production-stack#454: kubectl's pod table, the engine's pod 0/1 in CrashLoopBackOff."""
    log = ("NAME                                            READY   STATUS             RESTARTS      AGE\n"
           "vllm-mistral-deployment-vllm-67dd8b6d79-kk7fs   0/1     CrashLoopBackOff   4 (73s ago)   2m49s\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.phase == "startup_other"


def test_uvicorn_waiting_for_the_apps_startup_is_start_up() -> None:
    """ogx-ai/llama-stack-apps#15: the model built in the app's lifespan start-up, its worker killed there."""
    log = "\n".join((
        "INFO:     Started server process [6765]",
        "INFO:     Waiting for application startup.",
        "> initializing model parallel with size 1",
        "E0725 12:48:53.920000 127614093211456 torch/distributed/elastic/multiprocessing/api.py:702] failed "
        "(exitcode: -9) local_rank: 0 (pid: 6774) of fn: worker_process_entrypoint (start_method: fork)",
    )) + "\n"
    assert analyze(log).root_cause.phase == "startup_other"  # type: ignore[union-attr]


# -- from the misses held-outs 42 and 43 left (each measured untuned at the last stop) ------------------------------


def test_a_request_refused_for_its_length_or_handled_by_vllms_openai_layer_is_serving() -> None:
    """sglang#8096 (offline engine), vllm#22515 (a bare exception line behind serving_chat's location), xinference#3785."""
    for log in ("`ValueError: The input (85050 tokens) is longer than the model's context length (32768 tokens).`\n",
                "[serving_chat.py:1001] openai_harmony.HarmonyError: Unexpected token 12606 while expecting start "
                "token 200006\n",
                "ValueError: This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.\n"):
        assert analyze(log).root_cause.phase == "serving", log  # type: ignore[union-attr]


def test_hicache_sizing_its_host_tier_is_kv_cache_allocation() -> None:
    """sglang#8102."""
    log = ("ValueError: Not enough host memory available. Requesting 40.00 GB but only have 44.87 GB free. Please reduce "
           "the size of the hierarchical cache.\n")
    assert analyze(log).root_cause.phase == "kv_cache_alloc"  # type: ignore[union-attr]


def test_rocm_smis_failed_status_and_a_kernel_librarys_host_assertion_are_failures_at_no_level() -> None:
    """sglang#27209 (mori's topology probe), sglang#4068 (DeepGEMM's assertion, then a fatal error over the GIL)."""
    rc = analyze("libibverbs: Warning: couldn't load driver 'libmlx5-rdmav34.so': cannot open shared object file\n"
                 "[/sgl-workspace/mori/src/application/topology/gpu.cpp:80] rocm smi failed with RSMI_STATUS_INIT_ERROR: "
                 "An error occurred during initialization\n").root_cause
    assert rc is not None and rc.kind == "log_line" and "RSMI_STATUS_INIT_ERROR" in rc.message
    rc = analyze("Assertion failed: /usr/local/lib/python3.10/dist-packages/deep_gemm/jit/../include/deep_gemm/"
                 "fp8_gemm.cuh:435, condition: status == cudaSuccess\n"
                 "Fatal Python error: PyThreadState_Get: the function must be called with the GIL held, but the GIL is "
                 "released (the current Python thread state is NULL)\n"
                 "Python runtime state: initialized\n\n"
                 "Thread 0x00007f440bfff640 (most recent call first):\n"
                 '  File "/usr/lib/python3.10/threading.py", line 324 in wait\n').root_cause
    assert rc is not None and "condition: status == cudaSuccess" in rc.message


def test_a_kv_stores_put_is_serving_and_not_a_start() -> None:
    """kvcache-ai/Mooncake#456, LMCache#1518: glog records of a store's put operations failing."""
    for log in ("E0606 09:39:00.285537   382 client.cpp:323] Failed to start put operation: RPC_FAIL\n"
                "E0606 09:39:00.285573   382 store_py.cpp:372] Put operation failed with error: RPC_FAIL\n",
                "E0905 14:46:37.882738 15817 master_client.cpp:297] Failed to end put operation: invalid rpc arg\n"):
        assert analyze(log).root_cause.phase == "serving", log  # type: ignore[union-attr]


def test_a_plugins_model_runner_being_built_is_not_the_nccl_set_up_around_it() -> None:
    """vllm-omni#4334: init_device builds GPUARModelRunner, a subclass of vLLM's, the window cut inside it."""
    p = "(StageEngineCoreProc pid=170) ERROR 06-10 18:26:51 [stage_engine_core_proc.py:172] "
    log = "\n".join((
        p + '  File "/workdir/vllm_omni/worker/gpu_ar_worker.py", line 103, in init_device',
        p + "    self.model_runner = GPUARModelRunner(self.vllm_config, self.device)",
        p + '  File "/workdir/vllm_omni/worker/gpu_ar_model_runner.py", line 76, in __init__',
        p + "    super().__init__(*args, **kwargs)",
    )) + "\n"
    assert analyze(log).root_cause.phase == "startup_other"  # type: ignore[union-attr]


def test_waiting_on_a_futures_result_names_no_step() -> None:
    """vllm-omni#2823: the orchestrator initialising its stages waits on each launch's future (".result()", a name
    that one engine file of the table also defines)."""
    p = "(APIServer pid=6180) ERROR 05-06 08:19:15 [async_omni_engine.py:620] "
    log = "\n".join((
        p + '  File "/vllm-workspace/vllm_omni/engine/async_omni_engine.py", line 601, in _run_orchestrator',
        p + "    self._initialize_stages(stage_init_timeout)",
        p + '  File "/vllm-workspace/vllm_omni/engine/async_omni_engine.py", line 535, in _initialize_stages',
        p + "    started_llm_stages[stage_id] = llm_launch_futures[stage_id].result()",
        p + '  File "/usr/lib/python3.11/concurrent/futures/_base.py", line 449, in result',
    )) + "\n"
    assert analyze(log).root_cause.phase == "startup_other"  # type: ignore[union-attr]


def test_asyncllms_output_handler_failing_is_serving() -> None:
    """llm-d#650: the exception's message carries "AsyncLLM output_handler failed." below elided lines."""
    rc = analyze("KeyError: '604f3f68-909c-43e0-bb3a-e96850fca226'\n...\nAsyncLLM output_handler failed.\n").root_cause
    assert rc is not None and rc.exception_type == "KeyError" and rc.phase == "serving"


def test_llama_cpps_loader_reading_tensors_is_weight_loading_and_metals_aborted_command_buffer_a_failure() -> None:
    """ollama#9562 (a ggml cudaMalloc failure while its runner loads the tensors), ddalcu/mlx-serve#321."""
    rc = analyze("2025-03-06 23:36:39 load_tensors: loading model tensors, this can take a while... (mmap = true)\n"
                 "2025-03-06 23:36:39 ggml_backend_cuda_buffer_type_alloc_buffer: allocating 3257.82 MiB on device 0: "
                 "cudaMalloc failed: out of memory\n").root_cause
    assert rc is not None and "cudaMalloc failed" in rc.message and rc.phase == "weight_loading"
    rc = analyze("IOGPUMetalError\nExecution of the command buffer was aborted due to an error during execution. "
                 "Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n").root_cause
    assert rc is not None and rc.kind == "log_line" and "Insufficient Memory" in rc.message


def test_a_log_whose_last_record_was_cut_says_so_in_final() -> None:
    """Windows pasted from longer logs end inside a record: a prefix alone ("vllm  | INFO:"), a bracket or a quote left
    open, a character that announces more. The last traceback's end is then cut; with none, final says only that."""
    tb = ("Traceback (most recent call last):\n  File \"/app/x.py\", line 3, in f\n    g()\n"
          "torch.OutOfMemoryError: out of memory while allocating the KV cache of 24 layers on a GPU with a total capaci\n")
    assert analyze(tb).final.truncated is False  # type: ignore[union-attr]  # a word cut says nothing by itself
    # (torch's own CUDA OOM message is known to go on: test_tracebacks_round75)
    cut = analyze(tb + "(EngineCore_DP0 pid=996225) ERROR 09-29 03:07:32 [dump_input.py:76] [1.9297, 1.9297, 2.1\n")
    assert cut.final is not None and cut.final.truncated and cut.final.exception_type == "torch.OutOfMemoryError"
    lines = ("[2025-05-15 15:48:41.235] [infini] [error] [libinfinistore.cpp:910] Please register memory first\n"
             "[2025-05-15 15:48:41.23\n")
    a = analyze(lines)
    assert a.root_cause is not None and a.final is not None and a.final.truncated and a.final.exception_type is None
    whole = analyze("[2025-05-15 15:48:41.235] [infini] [error] [libinfinistore.cpp:910] Please register memory first\n")
    # the record whole: the log ends with that failure, not cut (the twenty-first stop's final for a log-line failure)
    assert whole.root_cause is not None and whole.final is not None and not whole.final.truncated
    assert whole.final.message == whole.root_cause.message
    assert analyze("INFO starting (pid 12)\nINFO listening on :8000 (\n").final is None  # nothing failed: no final


# -- from held-outs 46 (vLLM, SGLang) and 47 (projects around them), each measured once untuned first ---------------


def test_a_code_lines_quoted_rpc_names_the_step_inside_a_span() -> None:
    """nlzy/triton-gfx906#1: _initialize_kv_caches (profile, allocate, then warm up) calling
    collective_rpc("compile_or_warm_up_model"): the warm-up part of the span."""
    p = "(EngineCore_DP0 pid=24995) ERROR 10-02 11:36:03 [core.py:718] "
    log = "\n".join((
        p + 'File "/usr/lib/python3.13/site-packages/vllm/v1/engine/core.py", line 215, in _initialize_kv_caches',
        p + "self.model_executor.initialize_from_config(kv_cache_configs)",
        p + 'File "/usr/lib/python3.13/site-packages/vllm/v1/executor/abstract.py", line 74, in initialize_from_config',
        p + 'self.collective_rpc("compile_or_warm_up_model")',
        p + 'File "/usr/lib/python3.13/site-packages/vllm/v1/executor/multiproc_executor.py", line 259, in collective_rpc',
        p + "result = get_response(w, dequeue_timeout,",
    )) + "\n"
    assert analyze(log).root_cause.phase == "warmup"  # type: ignore[union-attr]


def test_an_exception_line_glued_to_its_raise_in_prose_is_read() -> None:
    """sglang#462: a comment whose newlines collapsed, "raise RuntimeError( RuntimeError: ..." on one line."""
    rc = analyze("raise RuntimeError( RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                 "multiprocessing, you must use the 'spawn' start method  Initialization failed. detoken_init_state: in\n"
                 ).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    assert rc.message.startswith("Cannot re-initialize CUDA") and rc.phase == "startup_other"


def test_a_cublas_calls_failed_status_during_capture_and_a_runner_that_never_became_ready() -> None:
    """kekzl/imp#874 (its own GEMM wrapper's report under its graph runner's capture), docker/model-runner#479."""
    rc = analyze("cuda_graph.cu:386:  CudaGraphRunner: capturing CUDA graph (step 1)\n"
                 "gemm.cu:635: gemm: cublasLtMatmul failed (status 14) M=2048 K=2048 N=32 after algo reselect\n").root_cause
    assert rc is not None and rc.kind == "log_line" and "cublasLtMatmul failed (status 14)" in rc.message
    assert rc.phase == "cuda_graph_capture"
    rc = analyze("Failed to generate a response: error response: status=500 body=unable to load runner: error waiting "
                 "for runner to be ready: llama.cpp terminated unexpectedly: llama.cpp exit status: 0xc0000005\n").root_cause
    assert rc is not None and rc.phase == "startup_other"


# -- from held-outs 48 (vLLM, SGLang) and 49 (projects around them), each measured once untuned first ---------------


def test_zap_and_logrus_json_records_give_their_level_and_msg() -> None:
    """kubernetes-sigs/gateway-api-inference-extension#2900: the endpoint picker's zap record, cut by the window."""
    from workbench.tracebacks.prefixes import json_log
    assert json_log('{"level":"error","ts":1777491250.92,"msg":"extract failed","endpoint":"10.0.0.1"}') == \
        "ERROR: extract failed"
    log = ('{"level":"info","ts":1777491249.1,"msg":"collector started"}\n'
           '{"level":"error","ts":1777491250.9224765,"caller":"datalayer/collector.go:211","msg":"extract failed",'
           '"endpoint":"10.72.7.74","error":"metric family \\"vllm:lora_requests_info\\" not found","stacktrace"\n')
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "extract failed" in rc.message


def test_an_http_clients_refused_call_is_a_failure_at_any_level() -> None:
    """THUDM/slime#1328: httpx's "Server error '503 Service Unavailable' for url '.../generate'", retried."""
    p = "(RolloutManager pid=1191) "
    log = "\n".join((
        p + "[2026-01-05 00:27:53] http_utils.py:153 - Error: Server error '503 Service Unavailable' for url "
            "'http://11.215.121.109:3592/generate'",
        p + "For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/503, retrying... "
            "(attempt 51/60, url=http://11.215.121.109:3592/generate)",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "Server error '503 Service Unavailable'" in rc.message
    assert rc.phase == "serving"


def test_an_import_chain_innermost_is_start_up_whatever_the_command_is_called() -> None:
    """sglang#13468: `sglang generate` (a CLI command named generate) importing the diffusion runtime, cut."""
    log = "\n".join((
        "Traceback (most recent call last):",
        '  File "/venv/bin/sglang", line 7, in <module>',
        "    sys.exit(main())",
        '  File "/sglang/python/sglang/cli/main.py", line 26, in main',
        "    args.func(args, extra_argv)",
        '  File "/sglang/python/sglang/cli/generate.py", line 21, in generate',
        "    from sglang.multimodal_gen.runtime.entrypoints.cli.generate import (",
        '  File "/sglang/python/sglang/multimodal_gen/__init__.py", line 5, in <module>',
        "    from sglang.multimodal_gen.runtime.entrypoints.diffusion_generator import DiffGenerator",
        '  File "/sglang/python/sglang/multimodal_gen/runtime/pipelines/__init__.py",',
    )) + "\n"
    assert analyze(log).root_cause.phase == "startup_other"  # type: ignore[union-attr]


# -- from held-outs 50 (vLLM, SGLang) and 51 (projects around them), each measured once untuned first ---------------


def test_a_vllm_record_whose_logging_left_out_the_time_is_still_read() -> None:
    """vllm#51977: "(APIServer pid=1) ERROR [serving.py:830] openai_harmony.HarmonyError: ..." with no time."""
    p = parse_line("(APIServer pid=1) ERROR [serving.py:830] openai_harmony.HarmonyError: unexpected tokens remaining")
    assert (p.format, p.level, p.location, p.time) == ("vllm", "ERROR", "serving.py:830", None)
    assert p.message.startswith("openai_harmony.HarmonyError: ")
    rc = analyze(p.raw + "\n").root_cause
    assert rc is not None and rc.exception_type == "openai_harmony.HarmonyError"


def test_a_process_that_exited_with_code_0_did_not_die() -> None:
    """vllm#40778: compose's "vllm exited with code 0" after the API server's own RuntimeError is no failure of its
    own; open-webui#6549: a clean exit alone is no failure at all."""
    log = "\n".join((
        "vllm  | (APIServer pid=1) Traceback (most recent call last):",
        'vllm  | (APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/utils.py", line 1153, '
        "in wait_for_engine_startup",
        "vllm  | (APIServer pid=1)     raise RuntimeError(",
        "vllm  | (APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
        "proc(s): {}",
        "vllm exited with code 0",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    assert analyze("ollama  | time=2025 level=INFO msg=stopping\nollama exited with code 0\n").root_cause is None
    died = analyze("vllm  | INFO loading\nvllm exited with code 137\n").root_cause
    assert died is not None and died.message == "vllm exited with code 137"


def test_uvicorns_exception_in_asgi_application_and_the_async_eplb_worker_are_serving() -> None:
    """vllm#39649 (an exception group under uvicorn's record, cut), vllm#35227 (the async EPLB worker's thread)."""
    log = "\n".join((
        "(APIServer pid=85502) ERROR:    Exception in ASGI application",
        "(APIServer pid=85502)   + Exception Group Traceback (most recent call last):",
        "(APIServer pid=85502)   |   File \"/venv/lib/python3.12/site-packages/starlette/_utils.py\", line 81, in "
        "collapse_excgroups",
    )) + "\n"
    assert analyze(log).root_cause.phase == "serving"  # type: ignore[union-attr]
    p = "(EngineCore_DP2 pid=925443) ERROR 02-24 20:16:15 [async_worker.py:52] "
    log = (p + "Traceback (most recent call last):\n" + p + '  File "/git/vllm/vllm/distributed/eplb/async_worker.py", '
           "line 42, in thread_target\n")
    assert analyze(log).root_cause.phase == "serving"  # type: ignore[union-attr]
