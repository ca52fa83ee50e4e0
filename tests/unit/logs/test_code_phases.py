"""The engines' own functions read as phases (workbench.code_phases, issue 15's sixth round), on stacks
shaped like the real ones (file paths and call lines as the engines print them; the corpus part that
holds each shape is named)."""

from __future__ import annotations

import pytest

from workbench.code_phases import STEPS, TABLE, code_phase, resolve
from workbench.phases import decide_phase, phase_of_message, stack_evidence
from workbench.tracebacks import analyze

SP = "/usr/local/lib/python3.12/dist-packages/"


def _tb(frames: list[tuple[str, str, str]], last: str | None = None) -> str:
    lines = ["Traceback (most recent call last):"]
    for file, func, code in frames:
        lines += [f'  File "{SP}{file}", line 1, in {func}', f"    {code}"]
    if last is not None:
        lines.append(last)
    return "\n".join(lines) + "\n"


def _frames(*pairs: tuple[str, str, str | None]) -> list[tuple[str, str, str | None]]:
    return [(SP + f, fn, code) for f, fn, code in pairs]


def test_every_entry_is_found_by_its_file_and_name() -> None:
    for name, entries in TABLE.items():
        for where, phase in entries:
            file = SP + where + ("x.py" if where.endswith("/") else "")
            assert code_phase(file, name) == phase, (where, name)


def test_a_name_alone_needs_a_callee_or_no_file_and_one_meaning() -> None:
    # SGLang's own ModelRunner._dummy_run is not vLLM's (tests/fixtures/tracebacks/journal_grep_frames_only)
    assert code_phase(SP + "sglang/srt/model_executor/model_runner.py", "_dummy_run") is None
    assert code_phase(SP + "vllm/v1/engine/core.py", "determine_available_memory", callee=True) == "kv_cache_alloc"
    assert code_phase("", "determine_num_available_blocks") == "kv_cache_alloc"  # a wrapper's method name
    assert code_phase("", "load_model") is None  # too common to trust without its file
    assert code_phase(SP + "myapp/server.py", "run_busy_loop") is None
    # a serving module's constructor runs at start-up (vLLM builds OpenAIServingChat in init_app_state)
    assert code_phase(SP + "vllm/entrypoints/openai/serving_chat.py", "chat_completion_stream_generator") == "serving"
    assert code_phase(SP + "vllm/entrypoints/openai/serving_chat.py", "__init__") is None


def test_serving_side_is_serving_whatever_the_inner_frames_are_called() -> None:
    # vllm-ascend#886 (fixture vllm_ascend_double_prefix_unindented_cut): a data-parallel idle rank runs a
    # dummy batch from the busy loop while the others serve
    frames = _frames(("vllm/v1/executor/multiproc_executor.py", "worker_busy_loop", "output = func(*args, **kwargs)"),
                     ("vllm/v1/worker/gpu_worker.py", "execute_dummy_batch", "self.model_runner._dummy_run(1)"),
                     ("vllm/v1/worker/gpu_model_runner.py", "_dummy_run", "outputs = self.model("))
    assert stack_evidence(frames) == (None, True, False)
    # an attention kernel whose name says "kv_cache" in a request is not KV-cache allocation
    frames = _frames(("vllm/v1/engine/core.py", "run_busy_loop", "self._process_engine_step()"),
                     ("vllm/v1/engine/core.py", "step", "model_output = self.execute_model_with_error_logging("),
                     ("vllm/attention/layer.py", "unified_kv_cache_update", "kv_cache = self.kv_cache"))
    assert decide_phase(frames) == "serving"


def test_start_up_side_is_never_serving() -> None:
    # held-out 7, vllm-gfx906#44 / vllm#15469: the worker's RPC loop carries start-up calls too
    frames = _frames(("vllm/v1/executor/multiproc_executor.py", "worker_busy_loop", "output = func(*args, **kwargs)"),
                     ("vllm/v1/worker/gpu_worker.py", "compile_or_warm_up_model", "self.model_runner.capture_model()"),
                     ("vllm/v1/worker/gpu_model_runner.py", "capture_model", "self._capture_cudagraphs("),
                     ("vllm/v1/worker/gpu_model_runner.py", "_capture_cudagraphs", "self._dummy_run(num_tokens,"))
    assert decide_phase(frames) == "cuda_graph_capture"
    # vLLM v0's memory profiling runs the serving-path execute_model
    frames = _frames(("vllm/worker/worker.py", "determine_num_available_blocks", "self.model_runner.profile_run()"),
                     ("vllm/worker/model_runner.py", "profile_run", "self.execute_model(model_input, kv_caches)"),
                     ("vllm/worker/model_runner.py", "execute_model", "hidden_states = model_executable("))
    assert decide_phase(frames) == "kv_cache_alloc"
    # a constructor that names no step: start-up (the step is left to the timeline), never serving
    frames = _frames(("vllm/v1/engine/core.py", "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
                     ("vllm/v1/engine/core.py", "__init__", "super().__init__(vllm_config, executor_class, log_stats,"))
    assert stack_evidence(frames) == (None, False, True)


def test_newer_layouts_of_the_same_engines() -> None:
    # vLLM's model runner v2: profiling runs _dummy_run, which runs execute_model(dummy_run=True)
    frames = _frames(("vllm/v1/worker/gpu/model_runner.py", "profile_run", "hidden_states, sample_hidden_states = "
                      "self._dummy_run("),
                     ("vllm/v1/worker/gpu/model_runner.py", "_dummy_run", "self.execute_model("),
                     ("vllm/v1/worker/gpu/model_runner.py", "execute_model", "hidden_states = self.model("))
    assert decide_phase(frames) == "kv_cache_alloc"
    # SGLang's split graph runners (model_executor/runner/*_cuda_graph_runner.py)
    assert decide_phase(_frames(("sglang/srt/model_executor/runner/decode_cuda_graph_runner.py", "capture",
                                 "self.capture_one_batch_size(bs, forward)"))) == "cuda_graph_capture"
    assert decide_phase(_frames(("sglang/srt/model_executor/runner/decode_cuda_graph_runner.py", "replay",
                                 "self.graphs[key].replay()"))) == "serving"
    # lmdeploy's agent split into model_agent/agent.py: build_model only builds and loads the weights
    assert decide_phase(_frames(("lmdeploy/pytorch/engine/model_agent/agent.py", "build_model", "self._build_model()"),
                                ("lmdeploy/pytorch/engine/model_agent/agent.py", "_build_model",
                                 "patched_model = build_patched_model(self.model_config,"))) == "weight_loading"


def test_the_callee_in_a_code_line_decides_a_function_that_does_both() -> None:
    start = _frames(("vllm/v1/engine/core.py", "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"))
    serve = _frames(("vllm/v1/engine/core.py", "run_engine_core", "engine_core.run_busy_loop()"))
    assert stack_evidence(start)[1:] == (False, True)
    assert stack_evidence(serve)[1:] == (True, False)
    sgl = "sglang/srt/managers/scheduler.py"
    assert decide_phase(_frames((sgl, "run_scheduler_process", "scheduler.event_loop_overlap()"))) == "serving"
    assert decide_phase(_frames((sgl, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args,"))) == \
        "startup_other"


def test_known_functions_beat_the_words_of_their_names() -> None:
    # vllm#30515: _warmup_and_capture is the capture, not a warm-up
    assert decide_phase(_frames(("vllm/v1/worker/gpu_model_runner.py", "capture_model", "self._capture_cudagraphs("),
                                ("vllm/v1/worker/gpu_model_runner.py", "_warmup_and_capture", "dummy_run("))) == \
        "cuda_graph_capture"
    # vllm#42911: profiling the graphs' memory sizes the KV cache
    assert decide_phase(_frames(("vllm/v1/worker/gpu_worker.py", "determine_available_memory",
                                 "cudagraph_memory_estimate = self.model_runner.profile_cudagraph_memory()"))) == \
        "kv_cache_alloc"
    # lmdeploy#983: the TP build distributes the weights
    assert decide_phase(_frames(("lmdeploy/pytorch/engine/model_agent.py", "_tp_build_model", "patched_model = patch("),
                                ("lmdeploy/pytorch/models/patch.py", "patch", "model = _dist_model(model, rank)"),
                                ("lmdeploy/pytorch/models/patch.py", "_dist_model", "new_child = _dist_model("))) == \
        "weight_loading"
    # sglang#9706: the custom all-reduce registers the captured graphs' buffers
    assert decide_phase(_frames(("sglang/srt/distributed/device_communicators/custom_all_reduce.py",
                                 "register_graph_buffers", "self._gather_ipc_meta(shard_data)"))) == \
        "cuda_graph_capture"


@pytest.mark.parametrize(("timeline", "phase"), [
    ("unknown", "kv_cache_alloc"), ("weight_loading", "kv_cache_alloc"), ("startup_other", "kv_cache_alloc"),
    ("cuda_graph_capture", "cuda_graph_capture"), ("warmup", "warmup"), ("serving", "kv_cache_alloc"),
])
def test_a_step_that_spans_steps_is_placed_by_the_timeline(timeline: str, phase: str) -> None:
    """vLLM's _initialize_kv_caches profiles memory, allocates the cache, then warms up and captures: a stack
    cut there is KV-cache set-up unless the log had reached a later step inside it (vllm#21747's
    'Capturing CUDA graph shapes: 0%' bar)."""
    frames = _frames(("vllm/v1/engine/core.py", "__init__", "self._initialize_kv_caches(vllm_config)"))
    assert decide_phase(frames, (), timeline) == phase
    assert resolve("kv_cache_alloc<kv_cache_alloc..warmup", timeline) == phase


def test_a_cut_stack_takes_the_capture_bar_printed_before_it() -> None:
    log = ("Capturing CUDA graph shapes:   0%|          | 0/67 [00:09<?, ?it/s]\n"
           "ERROR 07-29 23:23:41 [core.py:648] EngineCore failed to start.\n"
           + "".join("ERROR 07-29 23:23:41 [core.py:648] " + line + "\n" for line in _tb([
               ("vllm/v1/engine/core.py", "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
               ("vllm/v1/engine/core.py", "__init__", "self._initialize_kv_caches(vllm_config)"),
               ("vllm/v1/engine/core.py", "_initialize_kv_caches",
                "self.model_executor.initialize_from_config(kv_cache_configs)")]).splitlines()))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "cuda_graph_capture"


def test_lines_and_words_read_in_the_same_sources() -> None:
    assert phase_of_message("Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)") == \
        ("kv_cache_alloc", 3, "progress")
    assert phase_of_message("Added request 13_chatcmpl-c78d39a6d1d8469f90f3bda9bd41ca6a.") == ("serving", 6, "batch")
    # a warm-up before the capture (vLLM v1's compile_or_warm_up_model, TensorRT-LLM's model engine)
    assert phase_of_message("Compile and warming up model for size 8192") == ("warmup", 3.8, "begin")
    assert phase_of_message("[RANK 0] Run warmup with 128 tokens, include 0 generation tokens") == \
        ("warmup", 3.8, "begin")
    # vLLM v1's run_engine_core: "encountered a fatal error" only once the busy loop ran
    assert decide_phase([], ["EngineCore encountered a fatal error."]) == "serving"
    # TensorRT-LLM's batch manager, under load (TensorRT-LLM#2708)
    assert decide_phase([], ["[TensorRT-LLM][ERROR] Encountered an error in forwardAsync function: "
                             "[TensorRT-LLM][ERROR] Assertion failed: mNextBlocks.empty()"]) == "serving"


def test_the_table_speaks_only_of_known_phases() -> None:
    for entries in TABLE.values():
        for _where, phase in entries:
            assert resolve(phase) in (*STEPS, "startup_other", "serving", "startup", "neutral")
