"""What held-outs 203-205 (TensorRT-LLM, lmdeploy, Dynamo and NIXL; measured untuned at the thirty-seventh stop)
and the parts after them showed missing, each a general rule."""

from __future__ import annotations

import pytest

from workbench.phases import timeline
from workbench.tracebacks import analyze

LITE = """Traceback (most recent call last):
  File "/usr/local/bin/lmdeploy", line 8, in <module>
    sys.exit(run())
  File "/usr/local/lib/python3.10/site-packages/lmdeploy/cli/entrypoint.py", line 37, in run
    args.run(args)
  File "/usr/local/lib/python3.10/site-packages/lmdeploy/cli/lite.py", line 131, in auto_awq
    auto_awq(**kwargs)
  File "/usr/local/lib/python3.10/site-packages/lmdeploy/lite/apis/auto_awq.py", line 68, in auto_awq
    smooth_layers(layers, fc2fcs, norm2fcs, act_scales, w_group_size, device)
  File "/usr/local/lib/python3.10/site-packages/lmdeploy/lite/quantization/awq.py", line 118, in smooth_ln_fcs
    assert torch.isnan(p).sum() == 0
AssertionError
"""


def test_lmdeploy_lite_offline_quantization_is_the_weights_step() -> None:
    # auto_awq / calibrate / smooth_layers rewrite the weights: what goes wrong there is weight_loading
    rc = analyze(LITE).root_cause
    assert rc is not None and rc.exception_type == "AssertionError" and rc.phase == "weight_loading"


def _frames(*frames: tuple[str, str, str]) -> str:
    return "Traceback (most recent call last):\n" + "".join(
        f'  File "/usr/lib/python3.12/site-packages/{f}", line 10, in {fn}\n    {code}\n' for f, fn, code in frames)


def test_a_worker_method_a_ray_wrapper_names_takes_the_worker_s_step() -> None:
    # the executor's initialize_from_config spans the cache and the warm-up; the worker's (the one Ray runs) is the cache
    log = ("(RayWorkerWrapper pid=29113, ip=10.0.0.2) ERROR 03-24 15:39:40 [ray_utils.py:74] Error executing method "
           "'initialize_from_config'. This might cause deadlock in distributed execution.\n"
           "(RayWorkerWrapper pid=29113, ip=10.0.0.2) ERROR 03-24 15:39:40 [ray_utils.py:74] Traceback (most recent "
           "call last):\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "kv_cache_alloc"


def test_what_the_memory_profile_runs_is_the_cache_s_sizing() -> None:
    # profile_run runs the sampler's dummy pass (a warm-up function when compile_or_warm_up_model calls it)
    log = _frames(("vllm/v1/worker/gpu_worker.py", "determine_available_memory", "self.model_runner.profile_run()"),
                  ("vllm/v1/worker/gpu_model_runner.py", "profile_run",
                   "output = self._dummy_sampler_run(last_hidden_states)"),
                  ("vllm/v1/worker/gpu_model_runner.py", "_dummy_sampler_run", "sampler_output = self.sampler("))
    rc = analyze(log + "torch.OutOfMemoryError: CUDA out of memory.\n").root_cause
    assert rc is not None and rc.phase == "kv_cache_alloc"
    warm = _frames(("vllm/v1/worker/gpu_worker.py", "compile_or_warm_up_model",
                    "self.model_runner._dummy_sampler_run(hidden_states=last_hidden_states)"),
                   ("vllm/v1/worker/gpu_model_runner.py", "_dummy_sampler_run", "sampler_output = self.sampler("))
    rc = analyze(warm + "torch.OutOfMemoryError: CUDA out of memory.\n").root_cause
    assert rc is not None and rc.phase == "warmup"


@pytest.mark.parametrize(("frames", "phase"), [
    # SGLang's radix trees check themselves when the scheduler goes idle between batches
    ((("sglang/srt/mem_cache/mamba_radix_cache.py", "sanity_check", "x == x_lru"),), "serving"),
    # vLLM v0's client of the engine process: its heartbeat runs once the engine is up
    ((("vllm/engine/multiprocessing/client.py", "run_heartbeat_loop", "await self._check_success("),
      ("vllm/engine/multiprocessing/client.py", "_check_success", "raise response")), "serving"),
    # unsloth's copy of vLLM's LoRA worker manager loads the adapter a request names
    ((("unsloth_zoo/vllm_lora_worker_manager.py", "_load_adapter", "lora = load_method(**kwargs)"),), "serving"),
    # a request's logits processors, applied to each batch's rows
    ((("vllm/model_executor/layers/logits_processor.py", "_apply_logits_processors",
       "logits_row = logits_processor(past_tokens_ids, logits_row)"),), "serving"),
    # the openai SDK reading a server's answer
    ((("test.py", "<module>", "response = client.embeddings.create("),
      ("openai/resources/embeddings.py", "create", "return self._post("),
      ("openai/_base_client.py", "_request", "return self._process_response("),
      ("openai/_base_client.py", "_process_response", "return api_response.parse()")), "serving"),
])
def test_serving_side_functions_give_serving(frames, phase: str) -> None:
    rc = analyze(_frames(*frames) + "RuntimeError: boom\n").root_cause
    assert rc is not None and rc.phase == phase


def test_a_request_no_server_answered_says_nothing_of_the_server_s_phase() -> None:
    log = _frames(("app.py", "ask", "response = client.chat.completions.create("),
                  ("openai/resources/chat/completions.py", "create", "return self._post("),
                  ("openai/_base_client.py", "_request", "raise APIConnectionError(request=request) from err"))
    rc = analyze(log + "openai.APIConnectionError: Connection error.\n").root_cause
    assert rc is not None and rc.phase != "serving"


def test_a_model_put_in_eval_mode_after_its_load_is_not_a_serving_call() -> None:
    # torch's Module.eval() chained onto the load: the load is what ran (ipex-llm's load_low_bit)
    log = _frames(("gen.py", "<module>", "model = AutoModelForCausalLM.load_low_bit(path).eval()"),
                  ("ipex_llm/transformers/model.py", "load_low_bit", ") = model_class._load_pretrained_model("),
                  ("transformers/modeling_utils.py", "_load_pretrained_model", "model.apply(model._initialize_weights)"))
    rc = analyze(log + "RuntimeError: boom\n").root_cause
    assert rc is not None and rc.phase == "weight_loading"


def test_mlx_lm_generation_is_serving() -> None:
    log = _frames(("mlx_lm/generate.py", "prompt", "mx.eval([c.state for c in self.prompt_cache])"))
    rc = analyze(log + "RuntimeError: There is no Stream(gpu, 1) in current thread.\n").root_cause
    assert rc is not None and rc.phase == "serving"


PYTEST_COLLECTION = """_______________ ERROR collecting tests/e2e/test_online.py ________________
tests/e2e/test_online.py:5: in <module>
    from vllm_spyre.v1.core.scheduler import NO_WARMUP_FIT_STOP_REASON
.venv/lib/python3.12/site-packages/vllm/v1/utils.py:14: in <module>
    from vllm.model_executor.models.utils import extract_layer_index
.venv/lib/python3.12/site-packages/vllm/model_executor/model_loader/__init__.py:6: in <module>
    from vllm.model_executor.model_loader.loader import (BaseModelLoader,
.venv/lib/python3.12/site-packages/vllm/model_executor/model_loader/loader.py:47: in <module>
    from vllm.model_executor.model_loader.tensorizer import (
"""


def test_pytest_short_frames_are_a_traceback_and_an_import_chain_is_start_up() -> None:
    # pytest's "path:N: in f" frames with the statement under each; module bodies run on import, even in model_loader/
    a = analyze(PYTEST_COLLECTION)
    rc = a.root_cause
    assert rc is not None and rc.phase == "startup_other" and "ERROR collecting" in rc.message
    tb = a.tracebacks[0]
    assert [f.function for f in tb.frames] == ["<module>"] * 4
    assert tb.frames[0].code is not None and tb.frames[0].code.startswith("from vllm_spyre")
    assert tb.truncated


def test_a_ci_timestamp_before_pytest_frames_is_learned_as_a_prefix() -> None:
    log = "".join(f"[2025-08-01T22:33:04Z] {line}\n" for line in PYTEST_COLLECTION.splitlines()[1:])
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "exception" and rc.phase == "startup_other"
    assert rc.innermost_frame is not None and rc.innermost_frame.file.endswith("model_loader/loader.py")


def test_pytest_frames_end_in_the_exception_behind_its_e_margin() -> None:
    log = ("tests/test_x.py:12: in test_register\n    runner.allocate(kv_caches)\n"
           "vllm/v1/kv_cache_interface.py:65: in uses_scales\n    return get_mode(dtype).is_per_token\n"
           "E   AttributeError: 'torch.dtype' object has no attribute 'startswith'\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "AttributeError" and "startswith" in rc.message


def test_an_image_that_cannot_be_pulled_is_the_start_s_failure() -> None:
    log = ('Failed to pull image "docker.io/bitnami/etcd:3.5.18-debian-12-r5": \n'
           "rpc error: code = NotFound desc = failed to pull and unpack image: \n"
           "docker.io/bitnami/etcd:3.5.18-debian-12-r5: not found\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.message.startswith("Failed to pull image")
    assert rc.phase == "startup_other"


def _phases(text: str) -> list[str]:
    return [row["phase"] for row in timeline(text)]


def test_ktransformers_injecting_its_modules_is_the_weights_and_its_chat_prompt_is_serving() -> None:
    log = ("Injecting model as ktransformers.operators.models . KDeepseekV2Model\n"
           "Injecting model.layers.0.self_attn as ktransformers.operators.attention . KDeepseekV2Attention\n"
           "loading blk.60.ffn_norm.weight to cuda:0\n"
           "Chat: What is 2+2?\n")
    assert _phases(log) == ["weight_loading", "serving"]


def test_a_wrapper_launching_vllm_is_not_vllm_ready() -> None:
    # gpustack's "Starting vLLM server: <path>" launches it; vLLM's own line names where it listens
    assert _phases("2025-09-17 10:47:57+08:00 - gpustack.worker.backends.vllm - INFO - Starting vLLM server: "
                   "/opt/venvs/gpustack/bin/vllm\n") == []
    assert _phases("(APIServer pid=1) INFO 05-01 10:00:00 [api_server.py:1] Starting vLLM API server 0 on "
                   "http://0.0.0.0:8000\n") == ["serving"]
