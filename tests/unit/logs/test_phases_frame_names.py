"""Frame names that look like a start-up step's but are not: what else a program captures, an attention kernel that
reads the KV cache in a forward pass."""

from __future__ import annotations

from workbench.phases import phase_from_frames, stack_evidence


def test_uvicorns_capture_signals_is_no_graph_capture() -> None:
    frames = [("/x/uvicorn/server.py", "serve"), ("/x/uvicorn/server.py", "capture_signals")]
    assert phase_from_frames(frames) != "cuda_graph_capture"
    assert phase_from_frames([("/x/sglang/srt/model_executor/cuda_graph_runner.py", "capture_one_batch_size")]) \
        == "cuda_graph_capture"


def test_an_attention_kernel_with_the_kv_cache_is_the_forward_pass_not_its_allocation() -> None:
    # a window cut at the model's forward (vLLM v0 with speculative decoding, flash-attn's decode kernel)
    frames = [("/x/vllm/model_executor/models/qwen2.py", "forward", "attn_output = self.attn(q, k, v, kv_cache, meta)"),
              ("/x/vllm/attention/layer.py", "forward", "return self.impl.forward(query, key, value, kv_cache, meta,"),
              ("/x/vllm/attention/backends/flash_attn.py", "forward", "output[n:] = flash_attn_with_kvcache("),
              ("/x/vllm_flash_attn/flash_attn_interface.py", "flash_attn_with_kvcache",
               "out, softmax_lse = flash_attn_cuda.fwd_kvcache(")]
    assert stack_evidence(frames)[0] is None
    assert phase_from_frames([("/x/vllm/v1/engine/core.py", "_initialize_kv_caches")]) == "kv_cache_alloc"


def test_a_models_files_fetched_from_a_hub_are_weight_loading() -> None:
    # KServe's storage initializer: a hub download into the model volume before the server starts
    assert phase_from_frames([("/kserve/kserve/storage/storage.py", "download"),
                              ("/v/huggingface_hub/_snapshot_download.py", "snapshot_download")]) == "weight_loading"
    assert phase_from_frames([("/v/huggingface_hub/file_download.py", "xet_get")]) == "weight_loading"
    assert phase_from_frames([("/v/modelscope/hub/snapshot_download.py", "snapshot_download")]) == "weight_loading"


def test_a_trainers_own_loop_is_past_its_start() -> None:
    # an RL or fine-tuning trainer whose rollout engine serves it: a failure in a training step is in its main loop
    assert phase_from_frames([("/x/transformers/trainer.py", "train"),
                              ("/x/transformers/trainer.py", "_inner_training_loop"),
                              ("/x/trl/trainer/gkd_trainer.py", "training_step")]) == "serving"
    assert phase_from_frames([("/x/megatron/training/training.py", "train_step"),
                              ("/x/megatron/core/pipeline_parallel/schedules.py", "forward_backward_no_pipelining")]) \
        == "serving"
    assert phase_from_frames([("/x/cli.py", "train")]) is None  # a command named so says nothing


def test_exllamav2_loading_its_model_is_weight_loading() -> None:
    assert phase_from_frames([("/x/exllamav2/model.py", "load_autosplit"),
                              ("/x/exllamav2/model.py", "load_autosplit_gen")]) == "weight_loading"


def test_ollama_giving_up_on_the_runner_it_started_for_a_model_is_weight_loading() -> None:
    from workbench.tracebacks import analyze
    for said in ("Error: llama runner process has terminated: GGML_ASSERT(hparams.n_swa > 0) failed",
                 'level=ERROR source=sched.go:457 msg="error loading llama server" error="llama runner process has '
                 'terminated: exit status 2"'):
        root = analyze(f"ollama run hf.co/x/phi-4-GGUF\n{said}\n").root_cause
        assert root is not None and root.phase == "weight_loading", said


def test_a_capture_run_to_size_the_kv_cache_is_the_sizing() -> None:
    # vLLM's profile_cudagraph_memory captures the graphs to measure them before the cache is sized
    runner = "/x/vllm/v1/worker/gpu_model_runner.py"
    frames = [("/x/vllm/v1/worker/gpu_worker.py", "determine_available_memory", "self.model_runner.profile_run()"),
              (runner, "profile_cudagraph_memory", "self._warmup_and_capture("),
              (runner, "_warmup_and_capture", "self._dummy_run(")]
    assert stack_evidence(frames)[0] == "kv_cache_alloc"
    # the capture itself, called from the capture step, stays a capture
    assert stack_evidence([("/x/vllm/v1/worker/gpu_worker.py", "compile_or_warm_up_model", None),
                           (runner, "capture_model", None), (runner, "_warmup_and_capture", None)])[0] \
        == "cuda_graph_capture"
