"""Mechanisms added after held-out 26 (vLLM and SGLang threads) was measured once untuned (issue 15, twenty-fifth
round), each on lines written in the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.tracebacks import analyze


def test_a_stack_whose_every_line_carries_its_writers_prefix_stays_one_stack() -> None:
    """SGLang#30158: a launcher logs each line of the scheduler's stderr behind "[time] [/bin/sh]: ", a prefix of
    SGLang's own shape: the frames are one stack (the event loop's, serving), not one stack per line."""
    p = "[2026-06-29 17:44:04] [/bin/sh]: "
    log = "".join(p + ln + "\n" for ln in (
        "[2026-06-29 09:44:04 PP1 TP3] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/s/sglang/srt/managers/scheduler.py", line 4227, in run_scheduler_process',
        "    scheduler.run_event_loop()",
        '  File "/s/sglang/srt/managers/scheduler.py", line 1486, in run_event_loop',
        "    dispatch_event_loop(self)",
        '  File "/s/sglang/srt/managers/scheduler_pp_mixin.py", line 110, in event_loop_pp',
        "    self.mbs[mb_id] = self.get_next_batch_to_run()",
    ))
    a = analyze(log)
    assert len(a.tracebacks) == 1 and len(a.tracebacks[0].frames) == 3
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_sglangs_prefill_adder_and_hicache_load_back_are_serving() -> None:
    """SGLang PR 24972: an AssertionError in HiCache's load-back under the prefill adder, the window cut above."""
    log = ('  File "/v/sglang/srt/managers/schedule_policy.py", line 878, in add_one_req\n'
           "    new_indices, req.last_node = self.tree_cache.init_load_back(\n"
           '  File "/v/sglang/srt/mem_cache/unified_radix_cache.py", line 1240, in load_back\n'
           "    t = comp.build_hicache_transfers(\n"
           "AssertionError\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "AssertionError"
    assert a.root_cause.phase == "serving"


def test_ipython_8s_arrow_line_is_the_frames_code() -> None:
    """vLLM#8566: IPython 8 frames ("File path:280, in C.f(...)") with "--> 280 self._run_workers("load_model","
    (one blank after the number): the arrow line is the frame's code, so the RPC it names gives the step."""
    log = ("File /o/vllm/executor/ray_gpu_executor.py:280, in RayGPUExecutor._init_workers_ray(self, placement_group)\n"
           "    277 self._run_workers(\"init_worker\", all_kwargs=init_worker_all_kwargs)\n"
           "    279 self._run_workers(\"init_device\")\n"
           "--> 280 self._run_workers(\"load_model\",\n"
           "    281                   max_concurrent_workers=self.parallel_config.\n")
    a = analyze(log)
    assert a.tracebacks and a.tracebacks[0].frames[-1].code == 'self._run_workers("load_model",'
    assert a.root_cause is not None and a.root_cause.phase == "weight_loading"


def test_v0s_capture_banner_enters_graph_capture() -> None:
    """vLLM#6201: v0 prints "CUDA graphs can take additional 1~3 GiB memory per GPU" as it starts capturing; NCCL's
    "cannot be captured in a graph" warning after it, then the worker's failed initialize_cache: the failure is in
    graph capture. Without the banner the log says no more than the KV cache's step."""
    banner = ("(VllmWorkerProcess pid=116058) INFO 07-08 13:05:31 model_runner.py:928] CUDA graphs can take additional "
              "1~3 GiB memory per GPU. If you are running out of memory, consider decreasing `gpu_memory_utilization`\n\n")
    rest = ("hostname:116058:116058 [1] misc/strongstream.cc:53 NCCL WARN NCCL cannot be captured in a graph if either "
            "it wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.\n"
            "(VllmWorkerProcess pid=116058) ERROR 07-08 13:05:36 multiproc_worker_utils.py:226] Exception in worker "
            "VllmWorkerProcess while processing method initialize_cache: NCCL error: invalid usage (run with "
            "NCCL_DEBUG=WARN for details), Traceback (most recent call last):\n")
    a = analyze(banner + rest)
    assert a.root_cause is not None and a.root_cause.phase == "cuda_graph_capture"
    a = analyze(rest)
    assert a.root_cause is not None and a.root_cause.phase == "kv_cache_alloc"


def test_c10ds_watchdog_dying_on_an_error_is_a_failure() -> None:
    """SGLang#24011 (ROCm): "Process group watchdog thread terminated with exception:" and the HIP error under it,
    during graph capture."""
    log = ("During CUDA Graph capture inside `AiterCustomAllreduce.flush_graph_buffers`:\n\n```\n"
           "Process group watchdog thread terminated with exception:\n"
           "HIP error: operation not permitted on an event last recorded in a capturing stream\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "watchdog thread terminated with exception" in (a.root_cause.message or "")
    assert a.root_cause.phase == "cuda_graph_capture"
