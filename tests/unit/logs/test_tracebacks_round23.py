"""Mechanisms added after held-out 23 was measured (issue 15, twenty-second round), each on lines written in the
shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.phases import decide_phase
from workbench.tracebacks import analyze

_W = "(Worker_TP1 pid=7) ERROR 07-01 14:35:41 [multiproc_executor.py:962] "


def test_inductor_compiling_a_graph_is_start_up() -> None:
    """vLLM#21028 and a vLLM fork's #68: a worker's stack cut inside torch.compile's Inductor (compile_fx's
    _compile_fx_main, fx_codegen_and_compile): the engines compile at start-up, so not serving, no step named."""
    log = "".join(_W + ln + "\n" for ln in (
        '  File "/v/lib/python3.11/site-packages/torch/_inductor/compile_fx.py", line 2578, in compile_fx',
        "    return _maybe_wrap_and_compile_fx_main(",
        '  File "/v/lib/python3.11/site-packages/torch/_inductor/compile_fx.py", line 2864, in _compile_fx_main',
        "    raise e.remove_dynamo_frames() from None",
    ))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "startup_other"
    assert a.final is not None and a.final.truncated and a.final.phase == "startup_other"
    # the compiled graph run from a request stays serving
    frames = [("/v/vllm/v1/worker/gpu_model_runner.py", "execute_model", None),
              ("/v/torch/_inductor/compile_fx.py", "fx_codegen_and_compile", None)]
    assert decide_phase(frames) == "serving"


def test_vllms_input_prep_synchronisation_is_serving() -> None:
    """vLLM#42261: a device-side assert surfacing at the model runner's wait on the previous step's input copy."""
    log = ('File "vllm/v1/worker/gpu_model_runner.py", line 3575, in synchronize_input_prep\n'
           "    self.prepare_inputs_event.synchronize()\n"
           "torch.AcceleratorError: CUDA error: device-side assert triggered\n")
    a = analyze(log)
    assert a.final is not None and a.final.phase == "serving"


def test_a_streams_capture_status_names_graph_capture() -> None:
    """vllm-ascend#2383: torch_npu's assert on the ACL graph's capture status, its stack below it showing only the
    engine core's start."""
    log = ('RuntimeError: status == aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE INTERNAL ASSERT FAILED '
           'at "build/CMakeFiles/torch_npu.dir/compiler_depend.ts":162, please report a bug to PyTorch.\n')
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "cuda_graph_capture"
    rc = analyze(log.replace("aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE", "x > 0")).root_cause
    assert rc is not None and rc.phase != "cuda_graph_capture"


_E = "(EngineCore pid=4) ERROR 04-03 16:43:53 [core.py:1108] "


def test_a_start_cut_before_its_error_failed_in_the_roots_step() -> None:
    """vLLM PR 38895: workers warming up, one dies, then the engine core's "failed to start" stack, cut in
    run_engine_core: the start failed in warm-up, the step its root cause was in."""
    log = ("(Worker_TP1 pid=5) INFO 04-03 16:43:52 [kernel_warmup.py:69] Warming up FlashInfer attention.\n"
           "(EngineCore pid=4) ERROR 04-03 16:43:52 [multiproc_executor.py:273] Worker proc VllmWorker-3 died "
           "unexpectedly, shutting down executor.\n"
           + _E + "EngineCore failed to start.\n" + _E + "Traceback (most recent call last):\n"
           + _E + '  File "/usr/lib/vllm/v1/engine/core.py", line 1082, in run_engine_core\n'
           + _E + "    engine_core = EngineCoreProc(*args, **kwargs)\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "warmup"
    assert a.final is not None and a.final.truncated and a.final.phase == "warmup"


def test_a_native_librarys_error_code_line_tagged_by_its_source_file_is_an_error() -> None:
    """torch_memory_saver#99: its C++ lines carry the source file in brackets and no level; the error line gives the
    CUDA error's code and name (the line above it says it may not be an issue)."""
    log = ("[torch_memory_saver.cpp] cuMemCreate CUDA_ERROR_OUT_OF_MEMORY (may not be an issue e.g. torch allocator "
           "will free cache and retry)\n"
           "[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  file=csrc/core.cpp func=resume line=172\n")
    rc = analyze(log).root_cause
    assert rc is not None and "out of memory" in rc.message and rc.line == 2
    assert analyze("[torch_memory_saver.cpp] resumed 2 regions\n").root_cause is None


def test_a_pasted_failed_to_record_with_its_reason_is_the_failure() -> None:
    """slime#2280: SGLang's "Failed to update parameter online: ..." pasted without its prefix, as the window's only
    failure."""
    log = ("Failed to update parameter online: start (256) + length (256) exceeds dimension size (256)..\n"
           "The full weights of the ModelRunner are partially updated. Please discard the whole weights.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.message.startswith("Failed to update parameter online")
    # without a reason after a colon it is prose
    assert analyze("Failed to update parameter online, then it worked after a restart.\n").root_cause is None
