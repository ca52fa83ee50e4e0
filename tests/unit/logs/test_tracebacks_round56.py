"""Mechanisms added in the twenty-first stop, from misses of earlier held-outs and of held-outs 56-57 (each measured
once untuned first), on lines written in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze
from workbench.tracebacks.prefixes import unquote

_BUSY = "\n".join((
    "(Worker_TP0 pid=86929) ERROR 10-02 09:11:38 [multiproc_executor.py:671] WorkerProc hit an exception.",
    "(Worker_TP0 pid=86929) ERROR 10-02 09:11:38 [multiproc_executor.py:671] Traceback (most recent call last):",
    '(Worker_TP0 pid=86929) ERROR 10-02 09:11:38 [multiproc_executor.py:671]   File '
    '"/root/vllm/vllm/v1/executor/multiproc_executor.py", line 666, in worker_busy_loop',
    "(Worker_TP0 pid=86929) ERROR 10-02 09:11:38 [multiproc_executor.py:671]     output = func(*args, **kwargs)",
))


def test_a_worker_stack_cut_in_its_rpc_loop_with_nothing_else_to_tell_is_serving() -> None:
    """vllm#25266, vllm#35104: a worker's traceback cut right after its busy loop (or inside the broadcast queue the
    loop waits on): the call it was running is, with no step, words or timeline to say otherwise, a batch."""
    a = analyze(_BUSY + "\n")
    assert a.root_cause is not None and a.root_cause.phase == "serving" and a.final.phase == "serving"
    queue = _BUSY.replace("multiproc_executor.py\", line 666, in worker_busy_loop", "shm_broadcast.py\", line 755, "
                          "in dequeue")
    assert analyze(queue + "\n").root_cause.phase == "serving"
    # the timeline comes first: a worker that fails in the loop while the engine sizes its KV cache is sizing it
    sizing = ("(EngineCore_DP0 pid=86700) INFO 10-02 09:11:30 [gpu_worker.py:276] Available KV cache memory: "
              "10.2 GiB\n" + _BUSY + "\n")
    assert analyze(sizing).root_cause.phase == "kv_cache_alloc"
    # a step in the stack comes first too (determine_available_memory under the loop)
    step = _BUSY + "\n" + ('(Worker_TP0 pid=86929) ERROR 10-02 09:11:38 [multiproc_executor.py:671]   File '
                           '"/root/vllm/vllm/v1/worker/gpu_worker.py", line 243, in determine_available_memory\n')
    assert analyze(step).root_cause.phase == "kv_cache_alloc"
    # the engine's side of the same calls (collective_rpc sends load_model as well as execute_model) says nothing
    rpc = _BUSY.replace("line 666, in worker_busy_loop", "line 250, in collective_rpc")
    assert analyze(rpc + "\n").root_cause.phase == "unknown"


_PYTEST = "\n".join((
    "    def get_summarized_data(self):",
    "        if dim == 1:",
    ">               return torch.cat(",
    "                    (self[: PRINT_OPTS.edgeitems], self[-PRINT_OPTS.edgeitems :])",
    "                )",
    "E               RuntimeError: CUDA error: an illegal memory access was encountered",
    "E               CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.",
))


def test_the_exception_of_a_pytest_report_is_read_behind_its_e_margin() -> None:
    """sglang#7464, sglang#5305, vllm#23066: pytest's long report writes the exception behind an "E" margin aligned to
    the failing source line (its blank lines an "E" alone); a report cut inside a CUDA hint was cut."""
    a = analyze(_PYTEST + "\n" + "E               For debugging cons\n")
    assert a.root_cause is not None and a.root_cause.exception_type == "RuntimeError"
    assert "an illegal memory access was encountered" in a.root_cause.message
    assert a.final is not None and a.final.truncated
    whole = ("E       AssertionError: Tensor-likes are not close!\nE\nE       Mismatched elements: 118 / 2048 (5.8%)\n\n"
             "test_cublas_grouped_gemm.py:36: AssertionError\n")
    b = analyze(whole)
    assert b.root_cause.exception_type == "AssertionError" and "Tensor-likes are not close!" in b.root_cause.message
    assert not b.final.truncated
    # a word that begins with E, or an E with one space, is not the margin
    assert [unquote(x) for x in ("E x", "Error:    x", "E   x", "E")] == ["E x", "Error:    x", "x", ""]


def test_go_zerolog_console_lines_and_a_grpc_status_error_at_any_level() -> None:
    """LocalAI#1965, LocalAI#5339: Go's zerolog console writer ("9:01PM ERR ...") gives the line's level; a gRPC call's
    failed status ("rpc error: code = Unavailable desc = ...") is a failure even in an INF line."""
    from workbench.logformats import parse_line

    line = parse_line("9:01PM ERR [llama-cpp] Failed loading model, error: could not load model: rpc error: code = "
                      "Canceled desc = ")
    assert line.level == "ERROR" and line.message.startswith("[llama-cpp] Failed loading model")
    assert parse_line("5:38AM INF [whisper] Attempting to load").level == "INFO"
    assert parse_line("12:30 PMX INF no").level is None
    log = ("5:38AM INF Loading model 'phi-2.gguf' with backend rwkv\n"
           "5:38AM INF [rwkv] Fails: could not load model: rpc error: code = Unavailable desc = error reading from "
           "server: EOF\n5:38AM INF [whisper] Attempting to load\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "rpc error: code = Unavailable desc = error reading from server: EOF" in a.root_cause.message
    # a status that says the call went well is no failure
    assert analyze("5:38AM INF call done: rpc error: code = OK desc = fine\n").root_cause is None


def test_a_server_that_could_not_bind_its_address_failed_to_start() -> None:
    """xtuner#1828: asyncio's "error while attempting to bind on address", alone on its line (uvicorn puts "ERROR:"
    before it): the server never listened."""
    a = analyze("[Errno 98] error while attempting to bind on address ('10.1.2.3', 42169): address already in use\n")
    assert a.root_cause is not None and a.root_cause.kind == "log_line" and a.root_cause.phase == "startup_other"


def test_a_log_whose_failure_is_a_whole_record_ends_with_it() -> None:
    """xtuner#1828 and the log-line windows of earlier parts: with no traceback, the failure a record reported is how
    the log ends -- ``final`` is that record, not cut (a record cut by the window says so, as before)."""
    from workbench.tracebacks.render import format_summary

    a = analyze("INFO starting\nERROR 08-21 18:37:44 [core.py:1344] CUDA out of memory\n")
    assert a.root_cause is not None and a.final is not None
    assert (a.final.exception_type, a.final.message, a.final.truncated) == (None, "CUDA out of memory", False)
    assert "Final: CUDA out of memory (phase" in format_summary(a)
    assert analyze("INFO starting\nERROR 08-21 18:37:44 [core.py:1344] CUDA out of memory (\n").final.truncated
    assert analyze("INFO starting (pid 12)\nINFO listening on :8000\n").final is None  # nothing failed: no final


def test_a_gpu_container_the_nvidia_toolkit_refused_failed_to_start() -> None:
    """kserve#4513: a kubelet event's message wrapped onto its own line, the NVIDIA container toolkit's hook refusing
    the container: a start-up failure, whatever level (none here) it is printed at."""
    log = ("  Normal   Started    115s   kubelet   Started container storage-initializer\n"
           "  Warning  Failed     62s (x4 over 105s)  kubelet   Error: failed to create containerd task: failed to "
           "create shim task: OCI runtime create failed: runc create failed: unable to start container process: error "
           "running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
           "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a "
           "newer version, or use an earlier cuda container: unknown\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "unsatisfied condition: cuda>=12.8" in a.root_cause.message and a.root_cause.phase == "startup_other"
    assert analyze("nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown\n"
                   ).root_cause.phase == "startup_other"


def test_python_loggings_level_first_format_gives_the_level_and_time() -> None:
    """FastDeploy#7484: "%(levelname)-8s %(asctime)s ..." -- the level padded, then the time with its milliseconds."""
    from workbench.logformats import parse_line

    line = parse_line("ERROR    2026-04-19 19:22:38,720 4358  engine.py[line:160] Failed to launch worker processes")
    assert (line.level, line.time) == ("ERROR", "2026-04-19 19:22:38")
    assert line.message.endswith("Failed to launch worker processes")
    assert parse_line("INFO 2026-04-19T19:22:38.1 started").level == "INFO"
    assert parse_line("ERROR happened at 2026-04-19 19:22:38").level is None  # no time right after the level


def test_a_gpu_driver_resetting_a_hung_engine_is_a_failure() -> None:
    """vllm#55425: Intel's xe driver in dmesg resetting the compute engine of a timed-out job (AMD's amdgpu says
    "amdgpu_job_timedout"): the GPU's own report of the fault, as NVIDIA's Xid is."""
    log = ("xe 0000:0b:00.0: [drm] Tile0: GT0: Engine reset: engine_class=ccs, logical_mask: 0x1, guc_id=2, state=0x3\n"
           "xe 0000:0b:00.0: [drm] Tile0: GT0: Timedout job: seqno=1, lrc_seqno=1, guc_id=2, flags=0x20 in python\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "Engine reset: engine_class=ccs" in a.root_cause.message


def test_a_server_that_died_or_never_answered_its_health_check_with_no_timeline_failed_starting() -> None:
    """open-webui#6905, ramalama#2214, vertex-ai-samples#3443, vllm-ascend#946: a process that exited, or a health
    check that timed out, in a log that shows no step of the start nor readiness, is a start that failed; with the
    server ready before, the timeline decides."""
    for line in ("open-webui exited with code 135",
                 "Error: Command 'health check of container ramalama_Uj' timed out after 20 seconds",
                 "FailedPrecondition: 400 Model server exited unexpectedly. Model server logs can be found at ...",
                 "ERROR - Failed to serve model model-q2k.gguf, for ramalama run command"):
        a = analyze(line + "\n")
        assert a.root_cause is not None and a.root_cause.phase == "startup_other", line
    ready = ("INFO:     Application startup complete.\nINFO:     127.0.0.1:5 - \"POST /v1/completions HTTP/1.1\" 200 OK\n"
             "FailedPrecondition: 400 Model server exited unexpectedly.\n")
    assert analyze(ready).root_cause.phase not in ("startup_other", "unknown")  # the timeline's


def test_an_engines_fatal_error_in_its_loop_and_sglangs_scheduler_watchdog_are_serving() -> None:
    """vllm-omni#4271 ("StageEngineCoreProc encountered a fatal error."), sglang#12076 (the scheduler's watchdog fires
    only while a batch it runs makes no progress): with no timeline, serving."""
    for line in ("(StageEngineCoreProc pid=12) ERROR 01-01 00:00:00 [core.py:900] StageEngineCoreProc encountered a "
                 "fatal error.",
                 "[2025-10-29 11:31:09 TP3] Watchdog timeout (self.watchdog_timeout=300)"):
        a = analyze(line + "\n")
        assert a.root_cause is not None and a.root_cause.phase == "serving", line


def test_rocms_gpu_memory_fault_and_a_cuda_exception_code_are_failures() -> None:
    """vllm#36042 (ROCm's "Memory access fault by GPU node-8 ... on address (nil)"), vllm#46238 (the CUDA debugger's
    "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"): the GPU's own report of a faulting access, at no level."""
    for line in ("Memory access fault by GPU node-8 (Agent handle: 0x5a1e8d0) on address (nil). Reason: Unknown.",
                 "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"):
        a = analyze("INFO 01-01 00:00:00 [gpu_model_runner.py:1] Starting to load model\n" + line + "\n")
        assert a.root_cause is not None and a.root_cause.kind == "log_line" and line[:20] in a.root_cause.message


def test_a_log_that_ends_inside_a_native_backtrace_was_cut() -> None:
    """TensorRT-LLM#1839, WhisperLive#277: the log's last line is a frame of a native backtrace short of its outermost
    frame (or a numbered frame cut inside its name): the backtrace, and the failure, went on after the window."""
    head = ("terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
            "  what():  [TensorRT-LLM][ERROR] CUDA runtime error in cudaMemGetInfo(&free, &total): unknown error\n"
            "1       0x7fd9ebc2829e void tensorrt_llm::common::check<cudaError>(cudaError, char const*, char const*, int)"
            " + 94\n")
    assert analyze(head + "2       0x7fd9ebc5fd4a tensorrt_llm::kernels::FusedMHARunnerV2::FusedMHARunnerV2() + 1546\n"
                   ).final.truncated
    assert analyze(head + "3       0x7fd9a3d3e594 tensorrt_llm::plugi\n").final.truncated
    assert not analyze(head + "9       0x7fda2a029e40 __libc_start_main + 128\n").final.truncated  # the outermost: whole
    mpi = ("[c3f2d94d2f68:00045] *** Process received signal ***\n[c3f2d94d2f68:00045] Signal: Segmentation fault (11)\n"
           "[c3f2d94d2f68:00045] [ 7] /usr/lib/libth_common.so(_ZN9torch_ext15DynamicDecodeOp14createInstanceEv+0x8a)"
           "[0x7efc04b6bdba]\n")
    assert analyze(mpi).final.truncated
    # glibc's backtrace() form, which begins with the library's path
    assert analyze(head + "/usr/lib/x86_64-linux-gnu/libc.so.6(+0x29d90) [0x7f5c7c229d90]\n").final.truncated
    assert not analyze(head + "/usr/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x80) [0x7f5c7c229e40]\n"
                       ).final.truncated
    # a log line that only begins with a digit says nothing of the kind
    assert not analyze("ERROR boom: CUDA error: out of memory\n2 workers stopped.\n").final.truncated


def test_a_java_exception_class_named_with_a_dollar_is_read() -> None:
    """mlc-llm#2302: Java names an inner class with "$" ("org.apache.tvm.Base$TVMError: InternalError: ...")."""
    a = analyze("Stack trace:\norg.apache.tvm.Base$TVMError: InternalError: Check failed: (chat_ != nullptr) is false: "
                "Chat is not initialized via reload\n\tat org.apache.tvm.Base.checkCall(Base.java:173)\n")
    assert a.root_cause is not None and a.root_cause.exception_type == "org.apache.tvm.Base$TVMError"
    assert "Chat is not initialized via reload" in a.root_cause.message
    assert analyze("$ python -m vllm.entrypoints.openai.api_server: starting\n").root_cause is None  # a shell prompt


def test_a_module_imported_and_a_controller_unable_to_initialize_are_start_up() -> None:
    """sglang#10602 (python -c "import sgl_kernel" failing in the package's own module code), aibrix#1460 (a Go
    controller's "unable to initialize controllers"): the program was starting."""
    imp = ('Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
           '  File "/usr/lib/python3/site-packages/sgl_kernel/__init__.py", line 5, in <module>\n'
           "    common_ops = _load_architecture_specific_ops()\n")
    assert analyze(imp).root_cause.phase == "startup_other"
    # a script run by runpy is the main module, not an import
    run = ('Traceback (most recent call last):\n  File "<frozen runpy>", line 88, in _run_code\n'
           '  File "/app/bench.py", line 5, in <module>\n    results = run_requests()\n')
    assert analyze(run).root_cause.phase == "unknown"
    klog = ('E1002 10:00:00.000000       1 main.go:301] "msg"="unable to initialize controllers" "error"="failed to '
            "validate CRD 'rayclusters.ray.io'\"\n")
    assert analyze(klog).root_cause.phase == "startup_other"
