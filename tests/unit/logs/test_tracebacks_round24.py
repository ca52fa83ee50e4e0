"""Mechanisms added in the sixteenth stop from misses left in held-outs 21 and 22 (both already tuned to), each
on lines written in the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.phases import decide_phase
from workbench.tracebacks import analyze

_W = "(VllmWorker TP0 pid=35532) ERROR 08-26 04:05:22 [multiproc_executor.py:559] "


def test_a_stack_cut_inside_the_models_constructor_is_weight_loading() -> None:
    """vLLM#16343 and vllm-ascend#2546: a worker's stack cut in the model's and its layers' constructors
    (make_layers, a decoder layer's __init__, a fused-MoE layer building its quant method): the engines build the
    model inside load_model, so the step is weight loading."""
    log = "".join(_W + ln + "\n" for ln in (
        '  File "/v/vllm/model_executor/models/llama.py", line 321, in __init__',
        "    self.start_layer, self.end_layer, self.layers = make_layers(",
        '  File "/v/vllm/model_executor/models/utils.py", line 610, in make_layers',
        '    maybe_offload_to_cpu(layer_fn(prefix=f"{prefix}.{idx}"))',
        '  File "/v/vllm_ascend/ops/fused_moe.py", line 1194, in __init__',
        "    self.quant_method = AscendUnquantizedFusedMoEMethod(moe)",
    ))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "weight_loading"
    # the same files' forward passes say nothing of their own: run from a request they are serving
    frames = [("/v/vllm/v1/worker/gpu_model_runner.py", "execute_model", None),
              ("/v/vllm/model_executor/models/llama.py", "forward", None)]
    assert decide_phase(frames) == "serving"
    # and a layer's weights set up after loading are weight loading in SGLang as well
    frames = [("/s/sglang/srt/layers/quantization/fp8.py", "process_weights_after_loading", None)]
    assert decide_phase(frames) == "weight_loading"
