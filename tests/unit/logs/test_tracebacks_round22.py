"""Mechanisms added after held-out 22 was measured (issue 15, twenty-first round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.logformats import parse_line
from workbench.phases import decide_phase
from workbench.tracebacks import analyze

_V = "ERROR 01-02 03:04:05 [core.py:396] "


def test_a_step_in_torchs_own_code_is_no_serving_loop() -> None:
    """Qwen3#1440 (vLLM V1): the engine core failed to start inside torch.compile, its stack cut in dynamo's
    InstructionTranslator.step: torch's own step is no engine step, the start-up line says the phase."""
    log = "".join(_V + ln + "\n" for ln in (
        "EngineCore failed to start.",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/site-packages/torch/_dynamo/symbolic_convert.py", line 962, in step',
        "    self.dispatch_table[inst.opcode](self, inst)",
        '  File "/usr/lib/python3/site-packages/torch/_dynamo/symbolic_convert.py", line 659, in wrapper',
        "    return inner_fn(self, in",
    ))
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "startup_other"
    # an engine's own step is still serving
    assert decide_phase([("/v/vllm/engine/llm_engine.py", "step", None)]) == "serving"


def test_tensorrt_llms_checkpoint_converter_is_weight_loading() -> None:
    """TensorRT-LLM#1528, #1677: examples/<model>/convert_checkpoint.py reads the Hugging Face weights and converts
    them rank by rank (its execute runs each rank's worker); the model's load fills the built model with them."""
    frames = [("/t/examples/qwen/convert_checkpoint.py", "main", "convert_and_save_hf(args)"),
              ("/t/examples/qwen/convert_checkpoint.py", "convert_and_save_hf", "execute(args.workers, fs, args)"),
              ("/t/examples/qwen/convert_checkpoint.py", "execute", "f(args, rank)")]
    assert decide_phase(frames) == "weight_loading"
    frames = [("/t/examples/llama/convert_checkpoint.py", "convert_and_save_rank", "m = M.from_hugging_face("),
              ("/usr/lib/python3/site-packages/tensorrt_llm/models/modeling_utils.py", "load",
               "raise RuntimeError(")]
    assert decide_phase(frames) == "weight_loading"
    # a web server's execute, or a load called from elsewhere, says nothing of weights
    assert decide_phase([("/venv/werkzeug/serving.py", "run_wsgi", "execute(self.server.app)")]) != "weight_loading"
    assert decide_phase([("/app/x.py", "main", "cfg = json.load(f)")]) == "unknown"


def test_the_rank_an_error_record_names_in_its_words_is_its_rank() -> None:
    """TensorRT-LLM#3879 (trtllm-serve): the record that one rank's executor failed to initialise names the rank only
    in its words."""
    log = ("[04/30/2025-14:03:32] [TRT-LLM] [E] Failed to initialize executor on rank 6: [TensorRT-LLM][ERROR] CUDA "
           "driver error in cuModuleLoadData: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered.\n")
    rc = analyze(log).root_cause
    assert rc is not None and "illegal memory access" in rc.message and rc.ranks == ("rank6",)
    rc = analyze(log.replace("on rank 6", "on every rank")).root_cause
    assert rc is not None and rc.ranks == ()


def test_a_colour_code_that_lost_its_escape_byte_with_its_bracket_is_no_part_of_the_line() -> None:
    """verl#1611 (Ray workers): Ray colours the process prefix; a paste that dropped the ESC byte kept "[36m" before
    the prefix and "[0m" after it, and the prefix is still the writer's."""
    line = parse_line("[36m(WorkerDict pid=1052, ip=node-0)[0m frame #0: c10::Error::Error() + 0x96 (0x7f in /t/libc10.so)")
    assert line.process == "WorkerDict" and line.pid == 1052 and line.message.startswith("frame #0: c10::Error")
    assert parse_line("[1;36m(VllmWorker rank=1 pid=7)[0m INFO hello").message == "INFO hello"
    # a bracketed word that is no colour code stays
    assert parse_line("[main(x)] go").message == "[main(x)] go"


def test_c10s_frame_list_head_with_one_frame_under_it_is_a_native_backtrace() -> None:
    """verl#1611: the window begins below a torch CUDA error's message, at c10's hints, and ends after its frame list's
    head and the first frames: the error whose lines came above, cut."""
    log = ("(WorkerDict pid=1) Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
           "(WorkerDict pid=1)\n"
           "(WorkerDict pid=1) Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43"
           " (most recent call first):\n"
           "(WorkerDict pid=1) frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7ff2b6f6c1b6 in "
           "/usr/lib/torch/lib/libc10.so)\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert "c10_cuda_check_implementation" in a.root_cause.message
    assert a.final is not None and a.final.truncated
    # the head alone, with no frame under it, is not enough
    assert analyze(log.rsplit("(WorkerDict pid=1) frame", 1)[0]).root_cause is None


def test_a_wrappers_exception_ending_on_a_colon_gives_way_to_the_traceback_it_introduces() -> None:
    """gpustack#1210 (vLLM V0): vLLM's model registry inspects a model in a subprocess and raises "Error raised in
    subprocess:" followed by that subprocess's stderr, a warning then its traceback (cut here): what failed is the
    subprocess's error, not the wrapper's."""
    r = "ERROR 02-28 16:40:26 registry.py:306] "
    log = "".join(r + ln + "\n" for ln in (
        "RuntimeError: Error raised in subprocess:",
        "/usr/lib/python3.10/runpy.py:126: RuntimeWarning: 'pkg.mod' found in sys.modules after import of package",
        "  warn(RuntimeWarning(msg))",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        "    return _run_code(code, main_globals, None,",
        '  File "/v/vllm/model_executor/models/registry.py", line 524, in _run',
        "    result = fn()",
    ))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None and a.root_cause.line == 4
    assert a.final is not None and a.final.truncated
    # its output complete: the output's exception is the root cause
    rc = analyze(log + r + "ValueError: Model architectures ['X'] are not supported for now.\n").root_cause
    assert rc is not None and rc.exception_type == "ValueError"
    # a wrapper whose message says something after the colon, or a traceback far below, keeps the wrapper
    rc = analyze(log.replace("subprocess:", "subprocess: exit code 1", 1)).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    far = log.replace("  warn(RuntimeWarning(msg))\n", "  warn(RuntimeWarning(msg))\n" + (r + "INFO other\n") * 4, 1)
    rc = analyze(far).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
