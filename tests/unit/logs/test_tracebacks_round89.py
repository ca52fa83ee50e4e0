"""Mechanisms added in the twenty-ninth stop.  Lines in the shapes of real logs (the docstrings say which thread's)."""

from __future__ import annotations

from workbench.logformats import parse_line
from workbench.tracebacks import analyze


def test_a_requests_kv_cache_sent_between_instances_is_serving() -> None:
    """vllm-ascend#13439's shape: a worker's KV connector fails to transfer a request's KV caches to its decode peer.
    The function names a KV cache, but moving one for a request is serving, not sizing or allocating it."""
    log = ('(Worker_DP0_EP0 pid=158389) ERROR 08-05 01:50:10 [connector.py:610] Traceback (most recent call last):\n'
           '(Worker_DP0_EP0 pid=158389) ERROR 08-05 01:50:10 [connector.py:610]   File "/w/kv_p2p/connector.py", '
           'line 607, in _handle_request\n'
           '(Worker_DP0_EP0 pid=158389) ERROR 08-05 01:50:10 [connector.py:610]     '
           'self._transfer_kv_cache_all_groups(req_meta)\n'
           '(Worker_DP0_EP0 pid=158389) ERROR 08-05 01:50:10 [connector.py:610]   File "/w/kv_p2p/connector.py", '
           'line 709, in _transfer_kv_cache_all_groups\n'
           '(Worker_DP0_EP0 pid=158389) ERROR 08-05 01:50:10 [connector.py:610]     '
           'raise RuntimeError(f"Mooncake transfer failed, ret: {ret}")\n'
           '(Worker_DP0_EP0 pid=158389) ERROR 08-05 01:50:10 [connector.py:610] RuntimeError: Mooncake transfer '
           'failed, ret: -1\n')
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"
    # the verb must start a word of the name: a sender's start-up building its KV cache is still the KV-cache step
    from workbench.phases import _SERVING, _frame_phase
    assert _frame_phase("x.py", "sender_init_kv_cache") == "kv_cache_alloc" and not _SERVING.search("sender_init_kv_cache")
    assert _frame_phase("x.py", "fetch_remote_kv_cache") is None and _SERVING.search("fetch_remote_kv_cache")


def test_a_kv_pool_being_registered_is_the_kv_cache_step() -> None:
    """sglang#28873's shape: the scheduler's constructor registers its HiCache host KV pool with a KV store and fails:
    building the KV cache's pools (set_draft_kv_pool, register_mem_host_pool_v2), not some other start-up step."""
    log = ('File "/sgl/srt/managers/scheduler.py", line 4046, in run_scheduler_process\n'
           '    scheduler = Scheduler(\n'
           'File "/sgl/srt/managers/cache_controller.py", line 871, in set_draft_kv_pool\n'
           '    self._maybe_register_draft_with_storage()\n'
           'File "/sgl/srt/mem_cache/storage/store.py", line 637, in register_mem_host_pool_v2\n'
           '    super().register_buffer(host_pool.kv_buffer)\n'
           'File "/sgl/srt/mem_cache/storage/store.py", line 297, in register_buffer\n'
           '    raise RuntimeError(\n'
           'RuntimeError: Failed to register buffer to Mooncake Store, error code: -1\n')
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "kv_cache_alloc"


def test_a_load_clients_failed_request_is_serving() -> None:
    """evalscope#366's shape: the load client reports each request it sent that failed; no stack, no timeline."""
    log = ("2025-03-07 00:05:56,560 - evalscope - ERROR - \n"
           "2025-03-07 00:05:56,560 - evalscope - ERROR - Request: {'messages': [{'role': 'user', 'content': 'hi'}], "
           "'model': 'QwQ-32B', 'stream': True} failed, state_code: None, data: \n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_a_clients_send_request_is_serving() -> None:
    """evalscope#318's shape: the client's send_request gives up on the server (a proxy's 504)."""
    log = ('  File "/data/evalscope/models/server_adapter.py", line 104, in send_request\n'
           "    raise RuntimeError(f'Failed to request to remote API after {max_retries} attempts: '\n"
           'RuntimeError: Failed to request to remote API after 3 attempts: 504 Gateway Time-out\n')
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_a_failure_after_an_evaluation_clients_command_is_serving() -> None:
    """HabanaAI/vllm-fork#1321's shape: the lm-eval command against the server's completions, then the server's fatal
    record.  Without the command nothing tells."""
    fatal = "> FATAL ERROR :: MODULE:PT_SYNHELPER Huge Size not supported:\n"
    command = ("> lm_eval --model local-completions --tasks lambada_openai "
               "--model_args model=/m,base_url=http://0.0.0.0:8688/v1/completions --batch_size 1\n> \n")
    a = analyze(command + fatal)
    assert a.root_cause is not None and a.root_cause.phase == "serving"
    b = analyze(fatal)
    assert b.root_cause is not None and b.root_cause.phase == "unknown"


def test_a_ucx_backtrace_cut_in_its_numbered_frames_is_cut() -> None:
    """sglang#6694's shape: UCX's "Caught signal 11" backtrace, the window ending at frame 6 of it (its frames are
    numbered, then a library and an offset), short of its closing rule."""
    log = ('[host:12796:1:13303] Caught signal 11 (Segmentation fault: invalid permissions for mapped object at '
           'address 0x7fbd60001400)\n'
           '==== backtrace (tid:  13303) ====\n'
           ' 0  /usr/lib/nixl.libs/libucs-97f10f8d.so.0.0.0(ucs_handle_error+0x294) [0x7fbec008fba4]\n'
           ' 1  /usr/lib/x86_64-linux-gnu/libc.so.6(+0x1a07cd) [0x7fc0957437cd]\n'
           ' 2  /usr/lib/nixl.libs/libucp-ec3800ce.so.0.0.0(+0x8e935) [0x7fbeb80ee935]\n')
    a = analyze(log)
    assert a.final is not None and a.final.truncated


def test_a_ucx_record_without_its_head_keeps_its_level() -> None:
    """smg#2503's shape: a UCX record pasted without its time and host still says ERROR and where."""
    line = parse_line("ib_mlx5_dv.c:433  UCX  ERROR   mlx5dv_devx_obj_modify(opcode=0x503) failed, syndrome 0x5d668c")
    assert (line.level, line.location, line.format) == ("ERROR", "ib_mlx5_dv.c:433", "ucx")
    assert line.message.startswith("mlx5dv_devx_obj_modify")


def test_after_vllms_loading_weights_took_the_weights_are_still_being_processed() -> None:
    """vllm#26959's shape: v1's loader reports "Loading weights took" before it repacks the weights it read (Marlin);
    the engine dies before the runner's "Model loading took": still the weights' step."""
    log = ("(EngineCore_DP0 pid=7) INFO 10-13 10:01:02 [default_loader.py:267] Loading weights took 41.20 seconds\n"
           "(EngineCore_DP0 pid=7) ERROR 10-13 10:01:09 [core.py:708] EngineCore failed to start.\n"
           "(EngineCore_DP0 pid=7) ERROR 10-13 10:01:09 [core.py:708] Traceback (most recent call last):\n"
           '(EngineCore_DP0 pid=7) ERROR 10-13 10:01:09 [core.py:708]   File "/vllm/v1/engine/core.py", line 699, '
           "in run_engine_core\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "weight_loading"
    done = log.replace("[default_loader.py:267] Loading weights took 41.20 seconds",
                       "[gpu_model_runner.py:2602] Model loading took 15.2 GiB and 42.1 seconds")
    b = analyze(done)
    assert b.root_cause is not None and b.root_cause.phase != "weight_loading"


def test_tgis_download_error_is_the_weights_step() -> None:
    """text-generation-inference#2253's shape: the launcher's download of the weights (a LoRA adapter's here) fails
    before any shard starts."""
    log = ("2024-07-19T00:21:56.330730Z  INFO text_generation_launcher: Trying to load a Peft model. It might take a "
           "while without feedback\n"
           "Error: DownloadError\n"
           "2024-07-19T00:21:56.997596Z ERROR download: text_generation_launcher: Download encountered an error: \n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "weight_loading"


def test_glibcs_clone_ends_a_native_backtrace() -> None:
    """TensorRT-LLM#2687's shape: a numbered C++ stack whose last frame is glibc's __clone is whole, not cut."""
    from workbench.tracebacks.cut import ends_cut
    assert not ends_cut((9, "9       0x71530ae75a34 __clone + 68"))
    assert ends_cut((8, "8       0x71530ade8a94 /usr/lib/x86_64-linux-gnu/libc.so.6(+0x9ca94) [0x71530ade8a94]"))


def test_a_serving_engines_statistics_are_not_the_kv_cache_step() -> None:
    """vllm#15102's shape: the engine's statistics line ("GPU KV cache usage: 0.2%") just before its exception names a
    KV cache, but it says the engine is serving; the stack below it (Ray's compiled graph) says so too."""
    log = ("INFO 03-14 00:00:55 [async_llm.py:169] Added request cmpl-49612d570051487899170dc9fc843162-0.\n"
           "INFO 03-14 00:00:59 [loggers.py:80] Avg prompt throughput: 102.5 tokens/s, Avg generation throughput: 0.1 "
           "tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.2%, Prefix cache hit rate: 1.0%\n"
           "ERROR 03-14 00:01:05 [core.py:337] EngineCore hit an exception: Traceback (most recent call last):\n"
           'ERROR 03-14 00:01:05 [core.py:337]   File "/usr/lib/python3/dist-packages/ray/dag/compiled_dag_node.py", '
           "line 2344, in _execute_until\n"
           "ERROR 03-14 00:01:05 [core.py:337]     result = self._dag_output_fetcher.read(timeout)\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_rays_compiled_graph_channels_are_a_served_step() -> None:
    """vllm#27116's shape: the engine's stack cut inside the compiled graph's output channels, nothing else telling.
    vLLM's Ray executor runs the graph for execute_model alone."""
    log = ('(EngineCore_DP0 pid=610) ERROR 10-07 12:51:42 [core.py:720]   File "/usr/lib/python3/dist-packages/ray/'
           'experimental/channel/common.py", line 385, in _read_list\n'
           "(EngineCore_DP0 pid=610) ERROR 10-07 12:51:42 [core.py:720]     result = c.read(timeout)\n"
           '(EngineCore_DP0 pid=610) ERROR 10-07 12:51:42 [core.py:720]   File "/usr/lib/python3/dist-packages/ray/'
           'experimental/channel/shared_memory_channel.py", line 776, in read\n')
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_a_server_that_terminated_unexpectedly_or_a_call_that_failed_with_an_exception_is_a_failure() -> None:
    """Docker Model Runner#608's and modal-examples#1154's shapes: no level, no traceback, the words say it failed."""
    died = ("[2026-02-05T07:23:24.611649500Z][inference][W] Backend llama.cpp running model ai/llama3.2 exited with "
            "error: llama.cpp terminated unexpectedly: llama.cpp exit status: exit status 0xc0000135\n")
    a = analyze(died)
    assert a.root_cause is not None and "terminated unexpectedly" in a.root_cause.message
    timed_out = ("May 01  14:39:00.751 | INFO 05-01 12:39:00 backends.py:579] Using cache directory: /root/.cache/vllm/"
                 "torch_compile_cache/71bb364cc9/rank_0 for vLLM's torch.compile\n"
                 "Runner failed with exception: Runner has been initializing for too long: 300 seconds\n")
    b = analyze(timed_out)
    assert b.root_cause is not None and "initializing for too long" in b.root_cause.message
    assert b.root_cause.phase == "kv_cache_alloc"  # vLLM v1 compiles inside the profiling run that sizes the KV cache


def test_an_applications_chat_completion_route_is_serving() -> None:
    """open-webui#9419's shape: the app's route forwarding a chat completion gets the backend's 503."""
    log = ('Traceback (most recent call last):\n'
           '  File "/app/open_webui/routers/openai.py", line 696, in generate_chat_completion\n'
           '    r.raise_for_status()\n'
           '  File "/app/aiohttp/client_reqrep.py", line 1161, in raise_for_status\n'
           '    raise ClientResponseError(\n'
           "aiohttp.client_exceptions.ClientResponseError: 503, message='Service Unavailable', "
           "url='http://127.0.0.1:10000/chat/completions'\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"
