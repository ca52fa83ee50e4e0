"""Mechanisms added from misses of held-out 30 (vLLM and SGLang threads, measured once untuned first), each on lines
written in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.logformats import parse_line
from workbench.tracebacks import analyze


def test_a_ray_actor_prefix_whose_colour_codes_lost_their_esc_to_a_blank_is_read() -> None:
    """vllm#12155: a Ray actor's frames under " [36m(Actor pid=N) [0m", a blank where each ESC was: the prefix is
    read as the process's, and the frames (cut at both ends of the window) are a cut traceback."""
    p = " [36m(VLLM_Chat_Ray pid=7242) [0m "
    log = "".join(p + ln + "\n" for ln in (
        '  File "/h/lib/python3.11/site-packages/torch/_dynamo/convert_frame.py", line 526, in __call__',
        "    return _compile(",
        '  File "/h/lib/python3.11/site-packages/torch/_dynamo/convert_frame.py", line 924, in _compile',
        "    guarded_code = compile_inner(code, one_graph, hooks, transform)",
    ))
    assert parse_line(log.splitlines()[0]).process == "VLLM_Chat_Ray"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.final is not None and a.final.truncated


def test_the_rank_in_a_custom_formats_bracket_before_the_source_location_is_the_tracebacks() -> None:
    """sglang#21723: a logging format of the user's puts SGLang's rank prefix in the bracket before the file and line
    ("... ERROR 120984 [ TP0 scheduler.py:3190] Scheduler hit an exception: Traceback ..."): that rank failed."""
    log = "\n".join((
        "2026-03-18 11:22:06.731 ERROR 120984 [ TP0 scheduler.py:3190] Scheduler hit an exception: Traceback (most "
        "recent call last):",
        '  File "/o/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 3171, in run_scheduler_process',
        "    scheduler.event_loop_normal()",
        '  File "/o/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 1118, in event_loop_norma',
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.ranks == ("TP0",)


def test_a_code_line_cut_inside_a_method_called_on_a_local_of_the_frames_module_gives_its_phase() -> None:
    """sglang#28312: the window ends in run_scheduler_process's "scheduler.run_event_" (the local Scheduler): the
    method it was calling is the scheduler file's run_event_loop, the serving loop."""
    log = "\n".join((
        "have same issue:",
        "```text",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 4062, in run_scheduler_process',
        "    scheduler.run_event_",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_building_the_eagle_draft_tree_is_serving() -> None:
    """sglang#3582: a NameError in EAGLE's build_tree_kernel (speculative/build_eagle_tree.py), the outer frames cut
    off: the draft tree is built for a batch of requests, never at start-up."""
    log = "\n".join((
        '  File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_utils.py", line 194, in create',
        "    build_tree_kernel(",
        '  File "/sgl-workspace/sglang/python/sglang/srt/speculative/build_eagle_tree.py", line 149, in build_tree_kernel',
        "    sgl_build_tree_kernel(",
        "NameError: name 'sgl_build_tree_kernel' is not defined",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_a_tool_call_parser_reading_a_streamed_delta_is_serving() -> None:
    """vllm#10589: a plugin's copy of a tool parser failing in extract_tool_calls_streaming: vLLM's ToolParser method
    runs on each delta of a request's stream."""
    log = "\n".join((
        "Traceback (most recent call last):",
        '  File "/app/hermes_tool_parser.py", line 228, in extract_tool_calls_streaming',
        '    function_name: Union[str, None] = current_tool_call.get("name")',
        "AttributeError: 'NoneType' object has no attribute 'get'",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_the_encoder_cache_budget_line_starts_the_memory_profiling() -> None:
    """vllm#27378: vLLM's profile_run logs the multimodal encoder cache's budget before its dummy encoder run, then
    the engine fails to start, its stack cut: the failure came while sizing the KV cache."""
    p = "(EngineCore_DP0 pid=5014) "
    log = "".join(p + ln + "\n" for ln in (
        "INFO 10-23 11:30:24 [gpu_model_runner.py:2921] Model loading took 14.8260 GiB and 0.058317 seconds",
        "INFO 10-23 11:30:24 [gpu_model_runner.py:3693] Encoder cache will be initialized with a budget of 3027 tokens, "
        "and profiled with 1 image items of the maximum feature size.",
        "ERROR 10-23 11:30:25 [core.py:779] EngineCore failed to start.",
        "ERROR 10-23 11:30:25 [core.py:779] Traceback (most recent call last):",
        'ERROR 10-23 11:30:25 [core.py:779]   File "/share/proj',
    ))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "kv_cache_alloc"


def test_an_exception_repr_keeps_its_messages_own_closing_parenthesis() -> None:
    """vllm#10502: "ValueError('... not enough values to unpack (expected 4, got 2)')" logged before the stack: only
    the repr's closing quote and parenthesis go."""
    log = "\n".join((
        "ERROR 12-03 14:31:48 engine.py:135] ValueError('Error in model execution (input dumped to /tmp/x.pkl): not "
        "enough values to unpack (expected 4, got 2)')",
        "ERROR 12-03 14:31:48 engine.py:135] Traceback (most recent call last):",
        'ERROR 12-03 14:31:48 engine.py:135]   File "/v/vllm/worker/model_runner_base.py", line 116, in _wrapper',
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "ValueError"
    assert a.root_cause.message.endswith("(expected 4, got 2)")


def test_a_control_flow_exception_is_not_the_root_of_the_chain_raised_while_handling_it() -> None:
    """vllm#7987: anyio's memory stream raises WouldBlock for receive to wait on; the exception raised "during
    handling" of it, cut before its exception line, is the failure."""
    log = "\n".join((
        "Exception in ASGI application",
        "Traceback (most recent call last):",
        '  File "/a/lib/python3.11/site-packages/anyio/streams/memory.py", line 76, in receive_nowait',
        "    raise WouldBlock",
        "anyio.WouldBlock",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/a/lib/python3.11/site-packages/uvicorn/protocols/http/httptools_impl.py", line 419, in run_asgi',
        "    result = await app(  # type: ignore[func-returns-value]",
        '  File "/a/lib/python3.11/site-packages/starlette/applications.py", line 123, in __call__',
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.root_cause.phase == "serving"


def test_an_argument_parsers_error_line_is_a_start_up_failure() -> None:
    """vllm#35603: argparse refusing the command line ("vllm: error: unrecognized arguments: --task embedding")."""
    log = "\n".join((
        "when I deploy Qwen3-VL-Embedding-8B,there is error",
        "vllm: error: unrecognized arguments: --task embedding",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "unrecognized arguments: --task embedding" in a.root_cause.message
    assert a.root_cause.phase == "startup_other"


def test_a_routers_last_failed_attempt_at_a_generate_request_is_a_serving_failure() -> None:
    """sglang#4562: SGLang's Rust router retries a generate request at WARN; its last attempt failing ("failed
    (attempt 3/3)") means the retries gave up: a request being served failed."""
    p = "[Router (Rust)] 2025-03-18 14:17:58 - "
    log = "".join(p + ln + "\n" for ln in (
        "WARN - Generate request to http://localhost:8001 failed (attempt 1/3)",
        "INFO - Retrying request after 1 failed attempts",
        "WARN - Generate request to http://localhost:8001 failed (attempt 3/3)",
        "WARN - Removing failed worker: http://localhost:8001",
    ))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "Generate request to http://localhost:8001 failed" in a.root_cause.message
    assert a.root_cause.phase == "serving"
    ok = analyze(p + "WARN - Generate request to http://localhost:8001 failed (attempt 1/3)\n")
    assert ok.root_cause is None  # an attempt the router retries is no failure yet
