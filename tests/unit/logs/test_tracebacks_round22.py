"""Mechanisms added after held-out 22 was measured (issue 15, twenty-first round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

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
