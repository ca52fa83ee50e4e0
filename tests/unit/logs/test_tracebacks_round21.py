"""Mechanisms added after held-out 21 was measured (issue 15, twentieth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.phases import PhaseTracker, decide_phase
from workbench.tracebacks import analyze

_V = "(EngineCore_DP0 pid=42) ERROR 01-02 03:04:05 [core.py:800] "


def test_the_ray_executors_future_result_under_the_busy_loop_is_serving() -> None:
    """vllm-gaudi#728 (pipeline parallel under Ray): the busy loop's step waits on the future the Ray executor's
    non-blocking execute_model returned; the window begins below the busy loop's own frames."""
    log = "".join(_V + ln + "\n" for ln in (
        "    out = future.result()",
        '  File "/opt/vllm/vllm/v1/executor/ray_utils.py", line 150, in result',
        "    outputs = ray.get(self.refs, timeout=timeout)",
        '  File "/usr/lib/python3/ray/_private/client_mode_hook.py", line 104, in wrapper',
        "    return func(*args, **kwargs)",
    ))
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "serving"


def test_a_tpu_workers_compile_or_warm_up_model_is_warmup() -> None:
    """tpu-inference#3350: a TPU has no CUDA graphs; its worker's compile_or_warm_up_model precompiles the shapes, under
    the executor's initialize_from_config (which allocates the KV cache first)."""
    frames = [("/w/vllm/vllm/v1/executor/abstract.py", "initialize_from_config", None),
              ("/w/vllm/vllm/v1/executor/uniproc_executor.py", "collective_rpc", None),
              ("/w/tpu_inference/tpu_inference/worker/tpu_worker.py", "compile_or_warm_up_model", None)]
    assert decide_phase(frames) == "warmup"
    assert decide_phase([(f.replace("tpu_inference/tpu_inference", "vllm/vllm/v1"), n, c) for f, n, c in frames]) == "warmup"


def test_the_tpu_runners_shape_precompiling_lines_are_warmup() -> None:
    """vllm#15727 (V1 on TPU): after the KV cache is sized, the model runner logs its precompiling of the model's and
    the sampler's shapes; a failure there is the warm-up's."""
    t = PhaseTracker()
    t.feed("INFO 03-31 07:47:51 [kv_cache_utils.py:577] GPU KV cache size: 985,328 tokens")
    assert t.phase == "kv_cache_alloc"
    t.feed("INFO 03-31 07:48:36 [tpu_model_runner.py:780] Compiling sampling with different input shapes.")
    assert t.phase == "warmup"
    log = ("INFO 03-31 07:47:51 [kv_cache_utils.py:577] GPU KV cache size: 985,328 tokens\n"
           "INFO 03-31 07:47:51 [tpu_model_runner.py:769] Compiling the model with different input shapes.\n"
           "INFO 03-31 07:47:51 [tpu_model_runner.py:773]   -- num_tokens: 16\n"
           "ERROR 03-31 07:48:38 [core.py:367] EngineCore hit an exception: Traceback (most recent call last):\n"
           'ERROR 03-31 07:48:38 [core.py:367]   File "/v/vllm/v1/engine/core.py", line 355, in run_engine_core\n'
           "ERROR 03-31 07:48:38 [core.py:367]     engine_core = EngineCoreProc(*args, **kwargs)\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "warmup"


def test_tensorrt_llms_executor_loop_crashed_line_is_serving() -> None:
    """TensorRT-LLM#18663 (trtllm-serve, PyTorch flow): one rank's record that its executor loop died, the line cut."""
    log = "[TRT-LLM] [E] [_torch][RANK 3] Executor loop crashed on this rank; hard-killing all 4 ranks in 9.9s (peers c\n"
    rc = analyze(log).root_cause
    assert rc is not None and "Executor loop crashed" in rc.message and rc.phase == "serving"


def test_a_piecewise_graph_capture_assertion_is_cuda_graph_capture() -> None:
    """sglang#16108: the assertion of SGLang's piecewise CUDA graph (PCG) capture, its stack not pasted."""
    log = ('assert stream is not None, "PCG capture stream is not set"\n'
           "           ^^^^^^^^^^^^^^^^^^\n"
           "AssertionError: PCG capture stream is not set\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "AssertionError" and rc.phase == "cuda_graph_capture"
