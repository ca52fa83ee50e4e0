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


def test_an_exception_line_glued_to_a_sentence_written_without_blanks_is_the_exception() -> None:
    """async_cosyvoice#21, xinference#2351: a Chinese sentence runs straight into the exception line ("提示" "shows",
    "失败" "failed"), the bare ``Exception`` included; other quotes on the line do not hide it."""
    rc = analyze("用官方镜像运行server.py提示ValueError: No available memory for the cache blocks. Try `x`.\n").root_cause
    assert rc is not None and rc.exception_type == "ValueError" and rc.phase == "kv_cache_alloc"
    assert rc.message.startswith("No available memory for the cache blocks")
    rc = analyze("部署qwen失败Exception: Capture cuda graph failed: no kernel image is available for execution\n").root_cause
    assert rc is not None and rc.exception_type == "Exception" and rc.phase == "cuda_graph_capture"
    assert "no kernel image" in rc.message
    # a word of English glued to a class name is no boundary
    rc = analyze("the serverValueError: No available memory for the cache blocks\n").root_cause
    assert rc is None or rc.exception_type is None


def test_a_line_opening_with_another_quote_quotes_the_exception_after_it() -> None:
    """unsloth#1268: a list of models, each in backticks, then the error it gave in backticks (one with a blank inside
    the opening backtick); the quote closes on its line, so the next model's line is not its message. The key a
    weight loader did not find among the model's parameters says the weights were being loaded."""
    log = ("`org/model-a-4bit` with error : ` KeyError: 'layers.0.mlp.up_proj.weight'`\n"
           "`org/model-b-4bit` with error: `KeyError: 'layers.0.mlp.up_proj.weight'`\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "KeyError"
    assert rc.message == "'layers.0.mlp.up_proj.weight'" and rc.phase == "weight_loading"
    assert decide_phase((), ("'lm_head.bias'",)) == "weight_loading"
    assert decide_phase((), ("'some key'",)) == "unknown"


def test_nccls_cuda_failure_warning_just_before_a_fatal_signal_is_what_the_process_died_of() -> None:
    """lmdeploy#1108 (TurboMind, TP 2): NCCL warns from its init.cc that a CUDA call failed, TurboMind's check prints
    the NCCL error it got back, and the process dies of a signal: the warning says why, while the communicator was
    being set up."""
    log = ("NCCL INFO cudaDriverVersion 11070\n"
           "init.cc:1500 NCCL WARN Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'\n"
           "Failed, NCCL error /src/turbomind/utils/nccl_utils.cc:296 'unhandled cuda error'\n"
           "Illegal instruction (core dumped)\n")
    rc = analyze(log).root_cause
    assert rc is not None and "CUDA driver version is insufficient" in rc.message and rc.phase == "nccl_init"
    # another NCCL warning (a peer's socket) is no CUDA error: the NCCLCHECK line's failed call (read since round 33;
    # the signal before) is what the process died of
    rc = analyze(log.replace("Cuda failure", "Net : Connection closed by remote peer")).root_cause
    assert rc is not None and rc.message.startswith("Failed, NCCL error ")


def test_an_error_record_ending_on_a_colon_takes_the_indented_detail_under_it() -> None:
    """lmdeploy#3328 (lite, AWQ): the builder's error record ends on torch's "Error(s) in loading state_dict for
    Linear:" and the tensor that did not fit follows on a tab-indented line: the record's message, a weights' load."""
    log = ("2025-03-24 20:04:23,841 - lmdeploy - ERROR - builder.py:72 - build vision model X failed, Error(s) in "
           "loading state_dict for Linear:\n"
           "\tsize mismatch for weight: copying a param with shape torch.Size([8, 4]) from checkpoint, the shape in "
           "current model is torch.Size([4, 4]).\n")
    rc = analyze(log).root_cause
    assert rc is not None and "size mismatch for weight" in rc.message and rc.phase == "weight_loading"
    # a detail not indented under it, or under a record that does not end on a colon, is not joined
    rc = analyze(log.replace("\tsize", "size")).root_cause
    assert rc is not None and "size mismatch" not in rc.message
    rc = analyze(log.replace("for Linear:", "for Linear.")).root_cause
    assert rc is not None and "size mismatch" not in rc.message


def test_a_native_librarys_fatal_tag_is_an_error_record() -> None:
    """lmdeploy#4032 (TurboMind on Windows, TP 2): its communicator's CHECK, cut before "failed", tagged [TM][FATAL],
    is the only error the log has."""
    log = ("2025-10-11 09:16:39,843 - lmdeploy - WARNING - turbomind.py:234 - get 389 model params\n"
           "[TM][FATAL] comm\\device_comm.cc(28): Check\n")
    rc = analyze(log).root_cause
    assert rc is not None and "device_comm.cc(28)" in rc.message
    assert analyze("[TM][WARNING] comm\\device_comm.cc(28): Check\n").root_cause is None
