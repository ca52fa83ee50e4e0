"""The code-phase table's sweep of vLLM's and SGLang's source trees (workbench.code_phases: the scheduler and KV-cache
manager, samplers, proposers, structured outputs, LoRA, multimodal processing, parsers, communicators, KV transfer;
SGLang's batch objects, pools, speculative workers, grammars, disaggregation). Each stack is a few frames with the
engines' real paths and function names, and an exception that says nothing of the phase: only the table entry the
sweep added gives it."""

from __future__ import annotations

import pytest

from workbench.tracebacks import analyze

SP = "/usr/local/lib/python3.12/dist-packages/"


def _tb(frames: tuple[tuple[str, str, str], ...], last: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for file, func, code in frames:
        lines += [f'  File "{SP}{file}", line 1, in {func}', f"    {code}"]
    lines.append(last)
    return "\n".join(lines) + "\n"


CASES = [
    # vLLM v1 core: the scheduler allocating a request's slots in one step
    ("vllm_scheduler_allocate_slots", (
        ("vllm/v1/core/sched/scheduler.py", "schedule", "new_blocks = self.kv_cache_manager.allocate_slots("),
        ("vllm/v1/core/kv_cache_manager.py", "allocate_slots", "new_blocks = self.coordinator.allocate_new_blocks("),
        ("vllm/v1/core/kv_cache_coordinator.py", "allocate_new_blocks", "manager.allocate_new_blocks("),
        ("vllm/v1/core/single_type_kv_cache_manager.py", "allocate_new_blocks",
         "new_blocks = self.block_pool.get_new_blocks(num_new_blocks)"),
        ("vllm/v1/core/block_pool.py", "get_new_blocks", "raise ValueError("),
    ), "ValueError: Cannot get 12 free blocks from the pool", "serving"),
    # vLLM v1 sampling (the model runner's _sample)
    ("vllm_sampler_topk_topp", (
        ("vllm/v1/sample/sampler.py", "forward", "sampled, processed_logprobs = self.sample(logits, sampling_metadata)"),
        ("vllm/v1/sample/sampler.py", "sample", "random_sampled, processed_logprobs = self.topk_topp_sampler("),
        ("vllm/v1/sample/ops/topk_topp_sampler.py", "forward_native", "probs = logits.softmax(dim=-1)"),
    ), "RuntimeError: CUDA error: an illegal memory access was encountered", "serving"),
    # vLLM speculative decoding: a proposer's proposals per batch
    ("vllm_eagle_propose", (
        ("vllm/v1/spec_decode/eagle.py", "propose", "hidden_states = self.model(input_ids=input_ids)"),
        ("vllm/v1/spec_decode/eagle.py", "prepare_inputs", "token_indices = self._token_indices(cu_num_tokens)"),
    ), "IndexError: index 4096 is out of bounds for dimension 0 with size 4096", "serving"),
    # vLLM structured outputs: the backend is built by grammar_init when the first structured request arrives
    ("vllm_structured_output_backend_built_lazily", (
        ("vllm/v1/structured_output/__init__.py", "grammar_init", "self.backend = XgrammarBackend("),
        ("vllm/v1/structured_output/backend_xgrammar.py", "__init__",
         "tokenizer_info = xgr.TokenizerInfo.from_huggingface("),
    ), "ValueError: vocab_size mismatch", "serving"),
    # vLLM LoRA: the LoRA stacks allocated while the model runner's load_model wraps the layers
    ("vllm_lora_create_weights", (
        ("vllm/lora/models.py", "_create_lora_modules", "new_module = replace_submodule(self.model, module_name,"),
        ("vllm/lora/layers.py", "create_lora_weights", "self.lora_a_stacked = tuple(torch.zeros("),
    ), "RuntimeError: shape '[1, 8, 3584]' is invalid for input of size 4096", "weight_loading"),
    # vLLM multimodal: an image of a request fetched and processed in the API server
    ("vllm_multimodal_apply", (
        ("vllm/multimodal/processing.py", "apply", "mm_kwargs, prompt_updates = self._cached_apply_hf_processor("),
        ("vllm/multimodal/processing.py", "_cached_apply_hf_processor", "mm_missing = self._call_processor(items)"),
    ), "ValueError: Image features and image tokens do not match: tokens: 0, features 1176", "serving"),
    # vLLM reasoning parsers: a request's output checked for the end of its reasoning
    ("vllm_reasoning_is_end", (
        ("vllm/reasoning/deepseek_r1_reasoning_parser.py", "is_reasoning_end", "return self.end_token_id in ids"),
    ), "TypeError: argument of type 'NoneType' is not iterable", "serving"),
    # vLLM tool parsers: a request's tool call schema adjusted
    ("vllm_tool_parser_adjust_request", (
        ("vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py", "adjust_request",
         "request.skip_special_tokens = False"),
    ), "AttributeError: 'NoneType' object has no attribute 'skip_special_tokens'", "serving"),
    # vLLM's OpenAI front end: a request's chat messages parsed
    ("vllm_chat_utils_parse_messages", (
        ("vllm/entrypoints/chat_utils.py", "parse_chat_messages_futures",
         "sub_messages = _parse_chat_message_content(msg, mm_tracker)"),
        ("vllm/entrypoints/chat_utils.py", "_parse_chat_message_content", "content = [content]"),
    ), "TypeError: 'NoneType' object is not iterable", "serving"),
    # vLLM KV transfer: NIXL reading a remote request's blocks
    ("vllm_nixl_read_blocks", (
        ("vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", "_read_blocks_for_req",
         "self._read_blocks(request_id=req_id, dst_engine_id=meta.remote_engine_id,"),
        ("vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", "_read_blocks",
         "handle = self.nixl_wrapper.make_prepped_xfer("),
    ), "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND", "serving"),
    # SGLang: HiCache's host KV pool allocated with the scheduler's memory pools
    ("sglang_host_kv_pool_init_kv_buffer", (
        ("sglang/srt/mem_cache/memory_pool_host.py", "__init__", "self.kv_buffer = self.init_kv_buffer()"),
        ("sglang/srt/mem_cache/memory_pool_host.py", "init_kv_buffer",
         "return torch.empty(dims, dtype=self.dtype, device=self.device, pin_memory=self.pin_memory)"),
    ), "RuntimeError: CUDA error: out of memory", "kv_cache_alloc"),
    # SGLang: a batch's forward inputs built by the TP worker
    ("sglang_forward_batch_init_new", (
        ("sglang/srt/model_executor/forward_batch_info.py", "init_new", "positions = clamp_position(batch.seq_lens)"),
    ), "RuntimeError: CUDA error: invalid argument", "serving"),
    # SGLang speculative decoding: EAGLE's draft step per batch
    ("sglang_eagle_worker_draft", (
        ("sglang/srt/speculative/eagle_worker.py", "forward_batch_speculative_generation",
         "spec_info = self.draft(batch)"),
        ("sglang/srt/speculative/eagle_worker.py", "draft", "score_list, token_list, parents_list = self.draft_forward("),
    ), "AssertionError", "serving"),
    # SGLang grammars: a request's grammar filling its vocabulary mask
    ("sglang_xgrammar_fill_vocab_mask", (
        ("sglang/srt/constrained/xgrammar_backend.py", "fill_vocab_mask",
         "self.matcher.fill_next_token_bitmask(vocab_mask, idx)"),
    ), "RuntimeError: CUDA error: invalid argument", "serving"),
    # SGLang sampling
    ("sglang_sampler_forward", (
        ("sglang/srt/layers/sampler.py", "forward", "batch_next_token_ids = top_k_top_p_min_p_sampling_from_probs_torch("),
    ), "RuntimeError: CUDA error: device-side assert triggered", "serving"),
    # SGLang LoRA: a batch's adapters prepared
    ("sglang_lora_prepare_batch", (
        ("sglang/srt/lora/lora_manager.py", "prepare_lora_batch", "self.memory_pool.prepare_lora_batch("),
        ("sglang/srt/lora/mem_pool.py", "prepare_lora_batch", "buffer_id = get_available_buffer_slot()"),
    ), "ValueError: No available buffer slots found.", "serving"),
    # SGLang disaggregation: the decode side's pre-allocation queue
    ("sglang_disagg_decode_pop_preallocated", (
        ("sglang/srt/disaggregation/decode.py", "pop_preallocated", "kv_indices = self._pre_alloc(decode_req.req)"),
    ), "IndexError: list index out of range", "serving"),
    # SGLang's detokenizer loop
    ("sglang_detokenizer_event_loop", (
        ("sglang/srt/managers/detokenizer_manager.py", "handle_batch_token_id_out",
         "read_texts = self.tokenizer.batch_decode("),
    ), "OverflowError: out of range integral type conversion attempted", "serving"),
    # --- sweep 2: the projects around the engines
    # TensorRT-LLM's OpenAI server answering a chat request (its post-processing has no table entry)
    ("trtllm_openai_chat", (
        ("tensorrt_llm/serve/openai_server.py", "openai_chat", "response = await create_chat_response(promise)"),
        ("tensorrt_llm/serve/postprocess_handlers.py", "chat_response_post_processor", "text = output.text"),
    ), "AttributeError: 'NoneType' object has no attribute 'text'", "serving"),
    # Ray Serve LLM resolving a multiplexed LoRA adapter for an embeddings request (loaded per request)
    ("ray_serve_llm_lora_per_request", (
        ("ray/llm/_internal/serve/deployments/llm/llm_server.py", "embeddings", "return await self._run_request("),
        ("ray/llm/_internal/serve/deployments/llm/llm_server.py", "_run_request",
         "await self._maybe_resolve_lora_from_multiplex()"),
        ("ray/llm/_internal/serve/deployments/llm/llm_server.py", "_maybe_resolve_lora_from_multiplex",
         "disk_lora_model = await self._load_model(multiplexed_model_id)"),
        ("ray/llm/_internal/serve/deployments/llm/multiplex/lora_model_loader.py", "load_model",
         "raise ValueError(msg)"),
    ), "ValueError: bad lora", "serving"),
    # lmdeploy's executor sizing the KV cache: update_configs asks the workers for their free memory
    ("lmdeploy_executor_update_configs", (
        ("lmdeploy/pytorch/engine/engine.py", "__init__", "self.executor.init()"),
        ("lmdeploy/pytorch/engine/executor/base.py", "init", "self.update_configs()"),
        ("lmdeploy/pytorch/engine/executor/base.py", "update_configs", "free_mems = self._get_free_gpu_mems()"),
        ("lmdeploy/pytorch/engine/executor/base.py", "_get_free_gpu_mems", "return self.gather_free_mem()"),
        ("lmdeploy/pytorch/engine/executor/ray_executor.py", "gather_free_mem",
         "return self.collective_rpc('get_free_mem')"),
    ), "ray.exceptions.RayTaskError: ray::RayWorkerWrapper.get_free_mem() (pid=1) AttributeError: "
       "'NoneType' object has no attribute 'get_free_mem'", "kv_cache_alloc"),
    # TurboMind allocating each GPU's weights in _create_weight's thread
    ("lmdeploy_turbomind_create_weight_func", (
        ("concurrent/futures/thread.py", "run", "result = self.fn(*self.args, **self.kwargs)"),
        ("lmdeploy/turbomind/turbomind.py", "_create_weight_func", "model_comm.create_shared_weights(device_id, rank)"),
    ), "RuntimeError: [TM][ERROR] CUDA runtime error: invalid argument", "weight_loading"),
    # text-generation-inference's Warmup allocating the KV cache before capturing
    ("tgi_warmup_init_kv_cache", (
        ("text_generation_server/server.py", "Warmup", "self.model.warmup(batch, max_input_tokens, max_total_tokens)"),
        ("text_generation_server/models/flash_causal_lm.py", "warmup", "self.init_kv_cache("),
        ("text_generation_server/models/flash_causal_lm.py", "init_kv_cache", "KVCache("),
        ("text_generation_server/layers/attention/kv_cache.py", "__init__", "raise ValueError("),
    ), "ValueError: FP8 KV cache is currently only supported on Hopper", "kv_cache_alloc"),
    # verl's actor switching to rollout mode: the sharding manager loads the trainer's weights into the built engine
    # (vLLM's load_weights, a start-up step anywhere else)
    ("verl_sharding_manager_enter_load_weights", (
        ("verl/workers/fsdp_workers.py", "generate_sequences", "with self.rollout_sharding_manager:"),
        ("verl/workers/sharding_manager/fsdp_vllm.py", "__enter__",
         "model.load_weights(((name, param) for name, param in params.items()))"),
        ("vllm/model_executor/models/qwen2.py", "load_weights", "return loader.load_weights(weights)"),
    ), "KeyError: 'model.layers.0.mlp.gate_proj.weight'", "serving"),
    # OpenRLHF's trainer pushing a weight into its vLLM engines (the worker extension's load_weights)
    ("openrlhf_update_weight_load_weights", (
        ("openrlhf/trainer/ray/vllm_engine.py", "update_weight",
         'return self.llm.collective_rpc("update_weight", args=(name, dtype, shape, empty_cache))'),
        ("openrlhf/trainer/ray/vllm_worker_wrap.py", "update_weight",
         "self.model_runner.model.load_weights(weights=[(name, weight)])"),
        ("vllm/model_executor/models/llama.py", "load_weights", "param = params_dict[name]"),
    ), "KeyError: 'lm_head.weight'", "serving"),
    # slime opening the trainer-to-engine weight-sync group through the SGLang server
    ("slime_init_weights_update_group", (
        ("slime/backends/sglang_utils/sglang_engine.py", "init_weights_update_group", "return self._make_request("),
        ("slime/backends/sglang_utils/sglang_engine.py", "_make_request", "response.raise_for_status()"),
    ), "requests.exceptions.HTTPError: 500 Server Error: Internal Server Error for url: "
       "http://10.0.0.1:30000/init_weights_update_group", "nccl_init"),
]


@pytest.mark.parametrize(("frames", "last", "phase"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_swept_entry_gives_the_phase(frames: tuple[tuple[str, str, str], ...], last: str, phase: str) -> None:
    a = analyze(_tb(frames, last))
    assert a.root_cause is not None and a.root_cause.phase == phase


# Guards: frames the sweep's file-wide serving entries must not claim (these held before the sweep too).
GUARDS = [
    # the CLI's import chain through modules now marked serving: importing them is start-up
    ("import_chain_through_serving_modules", (
        ("vllm/entrypoints/openai/api_server.py", "<module>", "from vllm.engine.protocol import EngineClient"),
        ("vllm/v1/engine/input_processor.py", "<module>", "from vllm.multimodal.encoder_budget import MultiModalBudget"),
        ("vllm/v1/core/encoder_cache_manager.py", "<module>", "from vllm.multimodal import MULTIMODAL_REGISTRY"),
    ), "ImportError: cannot import name 'MULTIMODAL_REGISTRY' from 'vllm.multimodal'", "serving", False),
    # OpenAIServingChat.warmup renders a chat when the API server starts
    ("chat_serving_warmup", (
        ("vllm/entrypoints/openai/chat_completion/serving.py", "warmup", "await self._preprocess_chat("),
        ("vllm/entrypoints/openai/engine/serving.py", "_preprocess_chat", "conversation, engine_prompt = await r("),
    ), "TypeError: can only concatenate str (not \"list\") to str", "warmup", True),
    # the EAGLE draft graph runner capturing the draft forward
    ("sglang_eagle_draft_forward_captured", (
        ("sglang/srt/speculative/eagle_draft_cuda_graph_runner.py", "run_once",
         "ret = self.eagle_worker.draft_forward(forward_batch)"),
        ("sglang/srt/speculative/eagle_worker.py", "draft_forward", "out = self.draft_model_runner.forward("),
    ), "RuntimeError: CUDA error: operation not permitted when stream is capturing", "cuda_graph_capture", True),
]


@pytest.mark.parametrize(("frames", "last", "phase", "equal"), [g[1:] for g in GUARDS], ids=[g[0] for g in GUARDS])
def test_sweep_guard(frames: tuple[tuple[str, str, str], ...], last: str, phase: str, equal: bool) -> None:
    a = analyze(_tb(frames, last))
    assert a.root_cause is not None and (a.root_cause.phase == phase) is equal
