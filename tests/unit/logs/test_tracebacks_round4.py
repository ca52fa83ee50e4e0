"""Mechanisms added after held-out 5 was measured (issue 15, fourth round), each on lines built
from the shapes of real logs (the corpus part says which)."""

from __future__ import annotations

from workbench.logformats import LineShapes
from workbench.tracebacks import analyze

_CI = "[2025-12-13T19:54:35Z] (Worker_TP0 pid=9260) ERROR 12-13 11:54:35 [multiproc_executor.py:826] "


def test_a_learned_prefix_stops_where_a_known_format_begins() -> None:
    shapes = LineShapes()
    assert shapes.learn(_CI + '  File "/vllm/compilation/cuda_graph.py", line 266, in __call__')
    rest = shapes.strip(_CI + "    super().capture_end()")
    assert rest is not None and rest.startswith("(Worker_TP0 pid=9260) ERROR")


def test_the_rank_behind_a_ci_timestamp_is_read() -> None:
    log = "".join(_CI + tail + "\n" for tail in (
        '  File "/vllm/compilation/cuda_graph.py", line 266, in __call__',
        "    with torch.cuda.graph(cudagraph, pool=self.graph_pool):",
        '  File "/torch/cuda/graphs.py", line 130, in capture_end',
        "    super().capture_end()"))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.ranks == ("TP0",)
    assert a.root_cause.phase == "cuda_graph_capture"


def test_an_unknown_prefix_with_nothing_known_after_it_is_learned_whole() -> None:
    shapes = LineShapes()
    assert shapes.learn('2026-05-29 09:14:45,594 - wrapper - stderr | File "/x.py", line 1, in f')
    assert shapes.strip("2026-05-29 09:14:46,001 - wrapper - stderr |     f()") == "    f()"  # noqa: B005 (LineShapes.strip)


def test_a_record_indented_as_a_whole_is_read_through_its_learned_prefix() -> None:
    pre = "    2025-06-06T19:02:34.252Z DEBUG dynamo_run::subprocess: "
    log = "".join(pre + tail + "\n" for tail in (
        "    raise e",
        '  File "/vllm/engine/multiprocessing/engine.py", line 586, in run_mp_engine',
        "    engine = MQLLMEngine.from_vllm_config(",
        '  File "/vllm/engine/multiprocessing/engine.py", line 248, in from_vllm_config',
        "    return cls("))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "startup_other"
    assert a.final is not None and a.final.truncated


def test_only_an_indented_timestamp_counts_as_an_indented_record() -> None:
    from workbench.tracebacks.prefixes import indented_record

    assert indented_record("    2025-06-06T19:02:34.252Z DEBUG dynamo_run::subprocess:   File \"/x.py\", line 1, in f")
    assert not indented_record("    raise OSError(f'File \"{p}\" missing')")
    assert not indented_record("    2048 tokens in File \"x\"")
    assert not indented_record("                    2025-06-06T19:02:34Z deep in a table")


def test_a_known_prefix_behind_a_known_writer_is_not_split() -> None:
    """A vLLM line nested in another vLLM writer's line keeps that writer's stream (and header)."""
    outer = "(VllmWorker rank=1 pid=11) ERROR 05-16 16:35:18 [multiproc_executor.py:470] "
    lines = [outer + "[2026-03-15 03:28:35] Scheduler hit an exception: Traceback (most recent call last):",
             outer + '(EngineCore pid=11589) ERROR 11-29 13:18:32 [core.py:1512]   File "/vllm/shm.py", line 8, in read']
    noise = [f"(VllmWorker rank=0 pid=10) INFO 05-16 16:35:18 [x.py:1] noise {i}" for i in range(2)]
    alone = analyze("\n".join(lines))
    mixed = analyze("\n".join(x for pair in zip(noise, lines, strict=True) for x in pair))
    assert [len(t.frames) for t in alone.tracebacks] == [len(t.frames) for t in mixed.tracebacks] == [1]


def test_rays_wrapper_line_heads_the_task_frames_and_their_exception() -> None:
    a = analyze(
        '  File "/ray/_private/worker.py", line 930, in get_objects\n'
        "    raise value.as_instanceof_cause()\n"
        "ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=1372889, ip=192.168.210.43)\n"
        '  File "/verl/trainer/ppo/ray_trainer.py", line 910, in fit\n'
        "    gen_batch_output = self.actor_rollout_wg.generate_sequences(gen_batch)\n"
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n")
    assert len(a.tracebacks) == 1
    assert a.root_cause is not None and a.root_cause.exception_type == "ray.exceptions.ActorDiedError"
    assert [f.function for f in a.tracebacks[0].frames] == ["get_objects", "fit"]


def test_an_exception_line_that_says_raised_heads_the_error_it_wraps() -> None:
    a = analyze("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
                "CalledProcessError: Command '['/usr/bin/gcc', 'main.c']' returned non-zero exit status 1.\n\n"
                'Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information\n')
    assert a.root_cause is not None and a.root_cause.exception_type == "torch._dynamo.exc.BackendCompilerFailed"
    assert "CalledProcessError" in a.root_cause.message


def test_a_long_line_is_quoted_around_the_failure_it_names_first() -> None:
    hint = "Some common causes include: (1) the process was killed by the OOM killer due to high memory usage. "
    line = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. "
            "Worker ID: " + "cd7df849" * 30 + " " + hint)
    a = analyze(line + "\n")
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "A worker died or was killed" in a.root_cause.message


def test_native_runtimes_reports_of_an_uncaught_error_are_failures() -> None:
    a = analyze("2025-03-11 11:19:31.422 | INFO     | generator:prefill_forward_text:58 - Prefilling User 1\n"
                "libc++abi: terminating due to uncaught exception of type std::runtime_error: TT_THROW @ storage.hpp:50\n"
                "info:\nMemoryConfig can only be obtained if the buffer is not null\nbacktrace:\n"
                " --- /tt-metal/ttnn/ttnn/_ttnn.so(+0xe77a28) [0x7f20ccbeca28]\n")
    assert a.root_cause is not None and a.root_cause.exception_type == "std::runtime_error"
    assert "TT_THROW" in a.root_cause.message and "buffer is not null" in a.root_cause.message
    assert "_ttnn.so" not in a.root_cause.message
    panic = analyze("thread 'tokio-runtime-worker' panicked at lib/llm/src/engines/vllm/worker.rs:247:17:\n"
                    "Failed to import python 'vllm' module. Are we running in the correct venv?\n"
                    "stack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_fmt\n")
    assert [c.exception_type for c in panic.cpp_exceptions] == ["panic"]
    # (a Rust panic is reported as its line, as a Go panic's is: no exception a program catches and names)
    assert panic.root_cause is not None and (panic.root_cause.kind, panic.root_cause.exception_type) == ("log_line", None)
    assert panic.root_cause.message == "Failed to import python 'vllm' module. Are we running in the correct venv?"
    old = analyze("thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', src/main.rs:2:5\n")
    assert old.root_cause is not None and "Option::unwrap()" in old.root_cause.message
    c10 = analyze("Loading Model: [2/2]\tBuilding TRT-LLM engine\nUnhandled exception caught in c10/util/AbortHandler.h\n"
                  "00007FFE12AE1DE400007FFE12AC2070 torch_python.dll!THPGenerator_initDefaultGenerator [<unknown file>]\n")
    assert c10.root_cause is not None and "Unhandled exception caught" in c10.root_cause.message
    assert "torch_python" not in c10.root_cause.message


def test_a_sentence_about_terminating_or_panicking_is_not_a_failure() -> None:
    a = analyze("INFO 05-06 01:55:26 [x.py:1] terminating workers after the benchmark\n"
                "INFO 05-06 01:55:27 [x.py:1] nobody panicked at the review\n")
    assert a.root_cause is None and not a.cpp_exceptions


def test_a_first_error_line_is_the_root_cause_only_when_nothing_else_tells_of_a_failure() -> None:
    a = analyze("[Stage-0] Max batch size: 1\n\n[Stage-0] Received batch size=1, request_ids=['0_3846ea5f']\n\n"
                "ERROR:vllm_omni.entrypoints.omni_llm:Stage 0 error on request 0_3846ea5f: list index out of range\n"
                "ERROR:vllm_omni.entrypoints.omni_llm:Stage 0 error on request 1_77aa: list index out of range\n")
    assert a.root_cause is not None and a.root_cause.kind == "log_line" and a.root_cause.line == 5
    assert "list index out of range" in a.root_cause.message
    quiet = analyze("INFO:     Started server process [1016]\nWARNING:  the model is large\n")
    assert quiet.root_cause is None and not quiet.events
    both = analyze("ERROR 06-17 08:31:33 [core.py:515] something odd\n"
                   "Traceback (most recent call last):\n  File \"/a.py\", line 1, in f\nKeyError: 'x'\n")
    assert both.root_cause is not None and both.root_cause.exception_type == "KeyError"
    assert [e.line for e in both.events] == []


def test_llama_cpp_lines_carry_their_one_letter_level() -> None:
    from workbench.logformats import parse_line

    line = parse_line("3.02.199.202 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4480.00 MiB on device 3: "
                      "cudaMalloc failed: out of memory")
    assert line.level == "ERROR" and line.message.startswith("ggml_backend_cuda")
    assert parse_line("3.02.042.178 I llama_kv_cache_init:      CUDA0 KV buffer size =  3840.00 MiB").level == "INFO"
    assert parse_line("3.02 E is not a stamp").level is None
    a = analyze("3.02.042.178 I llama_kv_cache_init:      CUDA0 KV buffer size =  3840.00 MiB\n"
                "3.02.199.202 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4480.00 MiB on device 3: "
                "cudaMalloc failed: out of memory\n")
    assert a.root_cause is not None and "cudaMalloc failed: out of memory" in a.root_cause.message


_COLAB = "".join(line + "\n" for line in (
    "8 frames",
    "[/usr/local/lib/python3.11/dist-packages/vllm/utils.py](https://localhost:8080/#) in inner(*args, **kwargs)",
    "   1160 ",
    "-> 1161             return fn(*args, **kwargs)",
    "   1162 ",
    "",
    "[/usr/local/lib/python3.11/dist-packages/vllm/entrypoints/llm.py](https://localhost:8080/#) in __init__(self, model)",
    "    246         # Create the Engine (autoselects V0 vs V1)",
    "--> 247         self.llm_engine = LLMEngine.from_engine_args(",
    "    248             engine_args=engine_args, usage_context=UsageContext.LLM_CLASS)"))


def test_ipython_frames_are_a_stack() -> None:
    a = analyze(_COLAB)
    assert len(a.tracebacks) == 1
    t = a.tracebacks[0]
    assert [f.function for f in t.frames] == ["inner", "__init__"]
    assert t.frames[1].code == "self.llm_engine = LLMEngine.from_engine_args("
    assert t.cut_start and t.cut_end and a.root_cause is not None and a.root_cause.phase == "startup_other"


def test_an_ipython_traceback_with_its_header_and_exception_line() -> None:
    a = analyze("ValueError                                Traceback (most recent call last)\n"
                "/tmp/ipykernel_1/123.py in <module>\n"
                "File /usr/lib/python3.11/site-packages/vllm/engine/llm_engine.py:510, in from_engine_args(cls, args)\n"
                "    508     engine_cls = V1LLMEngine\n"
                "--> 510 return engine_cls.from_vllm_config(\n\n"
                "ValueError: max_model_len is larger than the model's context\n")
    assert a.root_cause is not None and a.root_cause.exception_type == "ValueError"
    t = a.tracebacks[0]
    assert t.frames[-1].function == "from_engine_args" and t.frames[-1].line == 510 and not t.cut_start


def test_a_sentence_with_a_path_in_it_is_not_an_ipython_frame() -> None:
    a = analyze("INFO 05-06 01:55:26 [x.py:1] wrote /tmp/out.py in place (ok)\n")
    assert not a.tracebacks


def test_ipythons_header_names_the_exception_of_a_traceback_cut_before_its_line() -> None:
    a = analyze("RuntimeError                              Traceback (most recent call last)\n"
                "File /opt/conda/lib/python3.11/site-packages/llmcompressor/text_generation.py:76, in oneshot(**kwargs)\n"
                "     75 training_args.do_oneshot = True\n"
                "---> 76 main(model_args, data_args, training_args)\n")
    t = a.tracebacks[0]
    assert t.exception_type == "RuntimeError" and t.cut_end and t.message is None
    plain = analyze("Traceback (most recent call last):\n  File \"/a.py\", line 1, in f\n")
    assert plain.tracebacks[0].exception_type is None


def test_a_compilers_own_error_line_outranks_the_exception_that_reports_its_run_failed() -> None:
    log = ("Traceback (most recent call last):\n  File \"/triton/compiler.py\", line 1169, in _build\n"
           "    ret = subprocess.check_call(cc_cmd)\n"
           "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmp91/main.c', '-O3']' returned non-zero"
           " exit status 1.\n\nAnd the error cause was:\n"
           "/tmp/tmp91/main.c:5:10: fatal error: Python.h: No such file or directory\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "Python.h: No such file or directory" in a.root_cause.message
    other = analyze(log.replace("/usr/bin/gcc", "/usr/bin/git"))
    assert other.root_cause is not None and other.root_cause.exception_type == "subprocess.CalledProcessError"


def test_a_log_lines_phase_falls_back_on_the_words_of_the_lines_just_before_it() -> None:
    a = analyze("3.02.042.178 I llama_kv_cache_init:      CUDA0 KV buffer size =  3840.00 MiB\n"
                "3.02.199.202 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4480.00 MiB on device 3: "
                "cudaMalloc failed: out of memory\n")
    assert a.root_cause is not None and a.root_cause.phase == "kv_cache_alloc"
    alone = analyze("3.02.199.202 E ggml_backend_cuda_buffer_type_alloc_buffer: cudaMalloc failed: out of memory\n")
    assert alone.root_cause is not None and alone.root_cause.phase == "unknown"


def test_the_timeline_outranks_the_words_of_the_lines_before_a_log_line() -> None:
    stats = ("INFO 08-25 12:24:24 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
             "throughput: 7599.4 tokens/s, Running: 46 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.8%\n")
    a = analyze("INFO:     Application startup complete.\n" + stats * 3 +
                "ERROR 08-25 12:24:29 [multiproc_executor.py:146] Worker proc VllmWorker-1 died unexpectedly\n")
    assert a.root_cause is not None and a.events[0].phase != "unknown"
    assert a.root_cause.phase == a.events[0].phase != "kv_cache_alloc"


def test_a_line_that_only_says_failed_is_not_an_exception() -> None:
    a = analyze("WARNING 05-06 01:55:26 [x.py:1] probe\nFailed: 3 of 10 health checks\n")
    assert not a.tracebacks


def test_a_cpp_exception_without_a_prefix_takes_the_rank_of_the_traceback_right_after_it() -> None:
    pre = "(VllmWorker rank=0 pid=223) ERROR 06-26 23:10:17 [multiproc_executor.py:527] "
    log = ("terminate called after throwing an instance of 'c10::DistBackendError'\n"
           + pre + "WorkerProc hit an exception.\n" + pre + "Traceback (most recent call last):\n"
           + pre + '  File "/vllm/v1/executor/multiproc_executor.py", line 522, in worker_busy_loop\n')
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "c10::DistBackendError"
    assert a.root_cause.ranks == ("rank0",)
    far = analyze("terminate called after throwing an instance of 'c10::DistBackendError'\n" + "x\n" * 5
                  + pre + "Traceback (most recent call last):\n")
    assert far.root_cause is not None and far.root_cause.ranks == ()


def test_native_abort_lines_are_never_skipped_as_dull() -> None:
    """A server's dull lines are only counted: each native abort line holds a word that is read.
    (A Rust panic's word is "' panicked": a bare "panicked" would cost every "p" of a log.)"""
    from workbench.tracebacks.patterns import _INTERESTING, _STRONG

    for line in ("libc++abi: terminating due to uncaught exception of type std::runtime_error: x",
                 "thread 'tokio-runtime-worker' panicked at lib/llm/src/engines/vllm/worker.rs:247:17:",
                 "Unhandled exception caught in c10/util/AbortHandler.h"):
        assert _INTERESTING.search(line) is not None and _STRONG.search(line) is not None, line
