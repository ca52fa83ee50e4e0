"""Mechanisms added after held-out 6 was measured (issue 15, fifth round), each on lines built
from the shapes of real logs (the corpus part says which)."""

from __future__ import annotations

from workbench.logformats import parse_line
from workbench.phases import decide_phase
from workbench.tracebacks import analyze


def _tb(frames: list[tuple[str, str, str]], last: str | None, prefix: str = "") -> str:
    """A traceback of (file, function, code) frames, outermost first, ``prefix`` before its header only
    (SGLang's rank); ``last=None``: cut before its exception line."""
    lines = [prefix + "Traceback (most recent call last):"]
    for file, func, code in frames:
        lines += [f'  File "{file}", line 1, in {func}', f"    {code}"]
    if last is not None:
        lines.append(last)
    return "\n".join(lines) + "\n"


def test_vllm_worker_named_by_its_ranks_is_that_rank() -> None:
    assert parse_line("(VllmWorker TP0 pid=1035573) ERROR 08-30 01:28:29 [multiproc_executor.py:611] x").rank == "TP0"
    assert parse_line("(VllmWorker TP1 EP1 pid=9) INFO 08-30 01:28:29 [gpu_worker.py:1] x").rank == "TP1 EP1"
    assert parse_line("(EngineCore_DP0 pid=7) INFO 08-30 01:28:29 [core.py:1] x").rank is None


def test_start_up_and_serving_functions_of_real_engines() -> None:
    # Ray Serve's replica start, SGLang's first router, TensorRT-LLM's result thread, vLLM's offline loop
    assert decide_phase([("deployment_state.py", "check_ready", None)]) == "startup_other"
    assert decide_phase([], ["ray.exceptions.RayTaskError(RuntimeError): ray::ServeReplica:llms:LLMServer:"
                             "qwen2_5-0_5b-instruct.initialize_and_get_metadata() (pid=316)"]) == "startup_other"
    assert decide_phase([("manager.py", "start_router_process", None)]) == "startup_other"
    assert decide_phase([("model_rpc.py", "exposed_step", None), ("model_rpc.py", "forward_decode_batch", None)]) == "serving"
    assert decide_phase([("proxy.py", "dispatch_result_task", None), ("proxy.py", "process_res", None)]) == "serving"
    assert decide_phase([("llm.py", "_run_engine", None)]) == "serving"


def test_words_of_a_start_and_of_a_failed_batch() -> None:
    assert decide_phase([], ["router init state: Traceback (most recent call last):"]) == "startup_other"
    assert decide_phase([], ["[rank0]:[E219] Process group watchdog thread terminated",
                             "model_runner_base.py:120] Writing input of failed execution to /tmp/x.pkl..."]) == "serving"
    # an NCCL/HCCL error while starting: the communicators were being set up
    assert decide_phase([("core.py", "run_engine_core", None)], ["RuntimeError: NCCL error: unhandled system error"]) == "nccl_init"
    assert decide_phase([], ["HCCL function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo)"]) == "nccl_init"


def test_a_bare_exception_takes_the_frames_of_its_traceback_over_its_own_words() -> None:
    """sglang#28702: 'Committed KV cache already freed' is a serving-time assertion, not KV allocation."""
    log = ("AssertionError: Committed KV cache already freed (self.kv_committed_len=1)\n"
           + _tb([("/sglang/srt/managers/scheduler.py", "run_scheduler_process", "scheduler.event_loop_overlap()"),
                  ("/sglang/srt/managers/scheduler.py", "event_loop_overlap", "batch = self.get_next_batch_to_run()")],
                 None, prefix="[2026-06-15 14:10:59 TP7] Scheduler hit an exception: "))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "AssertionError"
    assert a.root_cause.phase == "serving"


def test_a_block_cut_at_its_start_takes_the_phase_of_the_rank_block_repeating_it() -> None:
    """sglang#16067: the tail of raise_error_or_warn, then the rank's own block in event_loop_normal."""
    log = ('  File "/sglang/srt/utils/common.py", line 3774, in raise_error_or_warn\n'
           "    raise ValueError(message)\n"
           "ValueError: token_to_kv_pool_allocator memory leak detected! full_available_size=6016\n\n"
           "[2026-01-12 10:57:43 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/sglang/srt/managers/scheduler.py", line 2996, in run_scheduler_process\n'
           "    scheduler.event_loop_normal()\n"
           '  File "/sglang/srt/managers/scheduler.py", line 1105, in event_loop_normal\n'
           "    self.self_check_during_idle()\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "ValueError"
    assert a.root_cause.phase == "serving"


def test_a_cut_block_does_not_take_a_start_up_phase_from_a_neighbour_without_steps() -> None:
    """An EngineDeadError tail next to the engine process's own (cut) block: its frames name no step."""
    log = ('  File "/vllm/v1/engine/core_client.py", line 885, in get_output_async\n'
           "    raise self._format_exception(outputs) from None\n"
           "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above)\n"
           "Traceback (most recent call last):\n"
           '  File "/vllm/v1/engine/core.py", line 847, in run_engine_core\n'
           "    engine_core.run_busy_loop()\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase != "startup_other"


def test_a_bare_nccl_error_before_the_engine_start_traceback_is_nccl_init() -> None:
    """dynamo#1408: the worker's NCCL error, then 'EngineCore failed to start.' and its traceback."""
    log = ("RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
           "2025-06-06T09:52:01.833Z ERROR core.run_engine_core: EngineCore failed to start.\n"
           + _tb([("/vllm/v1/engine/core.py", "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
                  ("/vllm/v1/executor/multiproc_executor.py", "wait_for_ready", "raise e from None")],
                 "Exception: WorkerProc initialization failed due to an exception in a background process."))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "RuntimeError"
    assert a.root_cause.phase == "nccl_init"


def test_ipython_cell_frames_with_vs_code_links_and_the_header_after_the_rule() -> None:
    """nnsight#596: IPython 8 in VS Code: "Cell In[2], [line 4](vscode-notebook-cell:...)", "----> [4](...)"."""
    log = ("-" * 75 + "\n"
           "NNsightException                          Traceback (most recent call last)\n"
           "Cell In[2], [line 4](vscode-notebook-cell:?execution_count=2&line=4)\n"
           '      1 prompt = "The truth is the"\n'
           "----> [4](vscode-notebook-cell:?execution_count=2&line=4) with vllm.trace(prompt, scan=True):\n"
           "      5     out = vllm.model.layers[0].input.save()\n\n"
           "File ~/.venv/lib/python3.12/site-packages/nnsight/intervention/tracing/base.py:665, in Tracer.__exit__(self)\n"
           "    662 if self.asynchronous:\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "NNsightException"
    assert [f.function for f in a.tracebacks[0].frames] == ["<cell>", "Tracer.__exit__"]
    assert a.tracebacks[0].frames[0].line == 4


def test_a_failed_cpp_check_is_a_failure_line_whatever_its_level() -> None:
    """lmdeploy#4453: TurboMind's "[TM][FATAL] ...: Check failed: ..." quoted in an issue."""
    a = analyze("Crash with log:\n`[TM][FATAL] kernels/apply_token_bitmask_inplace_cuda.cu(212): Check failed: "
                "logits_shape.first ==bitmask_shape.first logits and bitmask must have the same batch size.`\n")
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "Check failed: logits_shape.first" in a.root_cause.message


def test_the_kv_cache_size_check_without_its_exception_type() -> None:
    """vllm#10517: the message of vLLM's ValueError pasted without 'ValueError: '."""
    a = analyze("# GPU blocks: 1478, # CPU blocks: 2048\nMaximum concurrency for 29000 tokens per request: 0.82x\n"
                "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in "
                "KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                "initializing the engine.\n")
    assert a.root_cause is not None and a.root_cause.phase == "kv_cache_alloc"
    assert "can be stored in KV cache" in a.root_cause.message


def test_a_crash_line_after_a_blank_is_not_the_last_frames_code() -> None:
    """vllm#44780: torch's native stack, then "!!!!!!! Segfault encountered !!!!!!!" and the crash's frames."""
    log = ('  File "<unknown>", line 0, in _start\n  File "<unknown>", line 0, in 0xffffffffffffffff\n\n'
           "!!!!!!! Segfault encountered !!!!!!!\n"
           '  File "<unknown>", line 0, in cuMemcpyBatchAsync\n')
    a = analyze(log)
    assert a.root_cause is not None and "Segfault encountered" in a.root_cause.message
    # a code line right under its frame, as Python prints it, is still read as code
    b = analyze('Traceback (most recent call last):\n  File "/x.py", line 1, in f\n    g()\n\nValueError: bad\n')
    assert b.tracebacks[0].frames[0].code == "g()"


def test_a_worker_error_relayed_by_the_executor_is_not_a_mere_pointer() -> None:
    """vllm-ascend#3367: the worker's HCCL error quoted in the executor's RuntimeError, then the worker's death."""
    pre = "(EngineCore_DP0 pid=384) ERROR 10-10 17:15:01 [core.py:708] "
    log = (pre + '  File "/vllm/v1/executor/multiproc_executor.py", line 248, in get_response\n'
           + pre + "    raise RuntimeError(\n"
           + pre + "RuntimeError: Worker failed with error 'HCCL function error: hcclCommInitRootInfoConfig(numRanks, "
           "&rootInfo, rank, config, &(comm->hcclComm_)), error code is 1', please check the stack trace above for the "
           "root cause\n"
           "(EngineCore_DP0 pid=384) ERROR 10-10 17:15:12 [multiproc_executor.py:154] Worker proc VllmWorker-4 died "
           "unexpectedly, shutting down\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "RuntimeError"
    assert a.root_cause.phase == "nccl_init"


def test_a_dump_whose_crashed_thread_is_unreadable_takes_the_phase_its_other_threads_name() -> None:
    """sglang#10407: two processes' dumps interleaved; the scheduler thread's stack is readable, the crashed one's not."""
    log = ('  File "/opt/conda/lib/python3.10/threading.py", line 607 in wait\n'
           '  File "/opt/conda/lib/python3.10/site-packages/tqdm/_monitor.py", line 60 in run\n\n'
           "Thread 0x00007f0159038740 (most recent call first):\n"
           '  File "/opt/conda/lib/python3.10/queue.py", line 171 in get\n'
           '  File "/sglang/srt/managers/tp_worker_overlap_thread.py", line 211 in resolve_last_batch_result\n'
           '  File "/sglang/srt/managers/scheduler.py", line 860 in event_loop_overlap\n'
           '  File "/torch/utils/_contextlib.pyFatal Python error: "Aborted, line \n')
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "Fatal Python error"
    assert a.root_cause.phase == "serving"


def test_an_exception_quoted_inside_a_sentence() -> None:
    """lmdeploy#3455: the error quoted in backticks in the middle of a sentence of the issue."""
    a = analyze("单卡可以正常运行，设置--tp 2后报错`RuntimeError: [TM][ERROR]  Assertion fail: "
                "D:\\a\\lmdeploy\\lmdeploy\\src/turbomind/models/llama/Barrier.h:20`，但是电脑上根本不存在这个文件\n")
    assert a.root_cause is not None and a.root_cause.exception_type == "RuntimeError"
    assert a.root_cause.message.startswith("[TM][ERROR]  Assertion fail")
    assert analyze("Set `max_model_len` lower, see `vllm serve --help`.\n").root_cause is None
    warning = ("(APIServer pid=11060) WARNING 11-29 13:17:52 [system_utils.py:255] Found ulimit of 20000. This can "
               "cause fd limit errors like `OSError: [Errno 24] Too many open files`. Consider increasing it\n")
    assert analyze(warning).root_cause is None


def test_the_web_frameworks_request_path_is_serving_unless_the_app_is_starting() -> None:
    request = [("/starlette/middleware/errors.py", "__call__", None), ("/starlette/routing.py", "app", None),
               ("/starlette/_exception_handler.py", "wrapped_app", None)]
    assert decide_phase(request) == "serving"
    starting = [("/starlette/routing.py", "lifespan", None), ("/vllm/entrypoints/openai/api_server.py", "lifespan", None)]
    assert decide_phase(starting) == "startup_other"


def test_words_of_imports_model_loading_and_requests() -> None:
    assert decide_phase([], ["Failed to import python 'vllm' module. Are we running in the correct venv?"]) == "startup_other"
    assert decide_phase([], ["CRITICAL - Faild to load model, CUDA failed with error out of memory"]) == "weight_loading"
    assert decide_phase([], ["Failed to load model config from /models/x"]) != "weight_loading"
    assert decide_phase([], ["ERROR:vllm_omni.entrypoints.omni_llm:Stage 0 error on request 0_3846: list index"]) == "serving"


def test_a_native_abort_takes_the_phase_its_words_name() -> None:
    """dynamo#349: a Rust panic whose message says the Python module would not import."""
    log = ("thread 'main' panicked at launch/dynamo-run/src/subprocess.rs:58:10:\n"
           "Failed to import python 'vllm' module. Are we running in the correct venv?\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "startup_other"


def test_names_read_in_the_engines_sources() -> None:
    # lmdeploy's PyTorch engine: the model agent's loops serve, its cache engine is the KV cache
    assert decide_phase([("/lmdeploy/pytorch/engine/model_agent/agent.py", "_async_loop_background", None),
                         ("/lmdeploy/pytorch/engine/model_agent/agent.py", "_async_step", None)]) == "serving"
    assert decide_phase([("/lmdeploy/pytorch/engine/engine.py", "__init__", None),
                         ("/lmdeploy/pytorch/engine/model_agent/agent.py", "build_cache_engine", None)]) == "kv_cache_alloc"
    # SGLang's scheduler picking the next batch; vLLM v1's runner updating its states
    assert decide_phase([("/sglang/srt/managers/scheduler.py", "get_next_batch_to_run", None)]) == "serving"
    assert decide_phase([("/vllm/v1/worker/gpu_model_runner.py", "_update_states", None)]) == "serving"
