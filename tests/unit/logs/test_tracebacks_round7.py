"""Mechanisms added after held-out 8 was measured (issue 15, seventh round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.code_phases import code_phase
from workbench.phases import PhaseTracker, decide_phase
from workbench.tracebacks import analyze
from workbench.tracebacks.patterns import level_word

_TLLM = ("[TensorRT-LLM][ERROR] tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] Assertion failed: "
         "d == a + length (/app/tensorrt_llm/cpp/tensorrt_llm/plugins/gptAttentionCommon/gptAttentionCommon.cpp:320)\n"
         "1       0x7f6ce803be0b /opt/tritonserver/backends/tensorrtllm/libnvinfer_plugin_tensorrt_llm.so.9(+0x35e0b) "
         "[0x7f6ce803be0b]\n"
         "2       0x7f6ce809746c tensorrt_llm::plugins::GPTAttentionPluginCommon::GPTAttentionPluginCommon(void const*, "
         "unsigned long) + 908\n"
         "3       0x7f6ce80a9b72 tensorrt_llm::plugins::GPTAttentionPluginCreator::deserializePlugin(char const*, "
         "void const*, unsigned long) + 50\n"
         "4       0x7f6d1ff13c36 /usr/local/tensorrt/lib/libnvinfer.so.9(+0x10a0c36) [0x7f6d1ff13c36]\n")


def test_a_cpp_exception_line_with_numbered_frames_is_an_exception_placed_by_its_frames() -> None:
    """TensorRT-LLM#583: 'ns::TllmException: message', then numbered C++ frames that deserialise the engine."""
    a = analyze("[TensorRT-LLM][INFO] Loaded engine size: 15448 MiB\n" + _TLLM)
    rc = a.root_cause
    assert rc is not None and rc.exception_type == "tensorrt_llm::common::TllmException"
    assert "Assertion failed: d == a + length" in rc.message
    assert "0x7f6ce809746c" not in rc.message  # the frames are not its message
    assert rc.phase == "weight_loading"


def test_glog_severity_tag_is_an_error_level() -> None:
    """vllm#2682: c10's '[E ProcessGroupNCCL.cpp:916]' tag, no other level on the line."""
    assert level_word("[E ProcessGroupNCCL.cpp:916] [Rank 7] NCCL watchdog thread terminated") == "[E]"
    assert level_word("[E1001 16:06:04.537131842 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog") == "[E]"
    assert level_word("[Errno 2] No such file") is None
    a = analyze("(RayWorkerVllm pid=5304) [E ProcessGroupNCCL.cpp:916] [Rank 7] NCCL watchdog thread terminated "
                "with exception: CUDA error: unknown error\n")
    assert a.root_cause is not None and "CUDA error: unknown error" in a.root_cause.message


def test_a_bare_ray_task_error_head_followed_by_the_tasks_frames_is_cut_when_they_end_without_their_error() -> None:
    """agent-lightning#144: the head line first, the remote frames after it, the window cut before their error."""
    log = ("ray.exceptions.RayTaskError(ModuleNotFoundError): ray::WorkerDict.actor_rollout_init_model() (pid=10928, "
           "ip=10.1.1.104)\n"
           '  File "/usr/lib/python3.12/concurrent/futures/_base.py", line 449, in result\n'
           "    return self.__get_result()\n"
           '  File "/x/verl/workers/fsdp_workers.py", line 626, in init_model\n'
           "    self.rollout, self.rollout_sharding_manager = self._build_rollout(\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.final is not None and a.final.truncated
    assert a.root_cause.phase == "startup_other"


def test_position_markers_under_a_ray_head_do_not_end_the_wrapper() -> None:
    """verl#6771: Python 3.11 prints '^^^^' under the head; the task's frames (unindented here) still follow."""
    log = ('File "/r/ray/_private/worker.py", line 1023, in get_objects\n'
           "raise value.as_instanceof_cause()\n"
           "ray.exceptions.RayTaskError(RuntimeError): ray::TaskRunner.run() (pid=4219, ip=172.36.11.126)\n"
           "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
           'File "/tmp/ray/verl/trainer/main_ppo.py", line 356, in run\n'
           "trainer.init_workers()\n"
           'File "/tmp/ray/verl/trainer/ppo/ray_trainer.py", line 838, in init_workers\n'
           "self.async_rollout_manager = AgentLoopManager.create(\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.root_cause.phase == "startup_other"


def test_an_exception_groups_margins_are_stripped() -> None:
    """lmdeploy#2055: PEP 654's '  | ' margins and '+-+---- 1 ----' separators around the group's tracebacks."""
    log = ("  | Traceback (most recent call last):\n"
           '  |   File "/env/site-packages/starlette/routing.py", line 75, in app\n'
           "  |     await response(scope, receive, send)\n"
           '  |   File "/env/site-packages/anyio/_backends/_asyncio.py", line 680, in __aexit__\n'
           "  |     raise BaseExceptionGroup(\n"
           "  | exceptiongroup.BaseExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
           "  +-+---------------- 1 ----------------\n"
           "    | Traceback (most recent call last):\n"
           '    |   File "/env/asyncio/queues.py", line 166, in get\n'
           "    |     await getter\n"
           "    | asyncio.exceptions.CancelledError\n")
    a = analyze(log)
    assert [t.exception_type for t in a.tracebacks] == ["exceptiongroup.BaseExceptionGroup",
                                                        "asyncio.exceptions.CancelledError"]
    assert [f.function for f in a.tracebacks[0].frames] == ["app", "__aexit__"]
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_the_device_set_up_inside_init_device_is_not_nccl() -> None:
    """vllm-ascend: init_device selects the device (_init_device, torch's lazy init) before it sets up NCCL/HCCL."""
    assert code_phase("/x/torch/cuda/__init__.py", "_lazy_init") == "startup_other"
    assert decide_phase([("/w/vllm_ascend/worker/worker.py", "init_device", "self.device = self._init_device()")]) \
        == "startup_other"
    assert decide_phase([("/w/vllm/v1/worker/gpu_worker.py", "init_device",
                          "init_worker_distributed_environment(self.vllm_config, self.rank,")]) == "nccl_init"
    assert decide_phase([("/w/vllm/worker/worker_base.py", "init_device", "self.worker.init_device()")]) == "nccl_init"


def test_quantized_weights_repacked_after_loading_are_weight_loading() -> None:
    """club-3090#60: vLLM's marlin repack runs in process_weights_after_loading."""
    assert decide_phase([("/p/vllm/_custom_ops.py", "gptq_marlin_repack", "return torch.ops._C.gptq_marlin_repack(")]) \
        == "weight_loading"


def test_a_threads_target_and_an_ipython_method_name_place_the_failure() -> None:
    """sglang#2312: 'Exception in thread Thread-3 (forward_thread_func):'; lmdeploy#1399: IPython's
    'in AsyncEngine.batch_infer(...)' frames."""
    assert decide_phase([], ["Exception in thread Thread-3 (forward_thread_func):"]) == "serving"
    log = ("RuntimeError                              Traceback (most recent call last)\n"
           "Cell In[5], line 1\n"
           '----> 1 response = pipe(["Hi, pls intro yourself", "Shanghai is"])\n'
           "\n"
           "File my_envs/lmdeploy/serve/async_engine.py:308, in AsyncEngine.__call__(self, prompts, gen_config)\n"
           "--> 308 return self.batch_infer(prompts,\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "RuntimeError"
    assert a.root_cause.phase == "serving"


def test_a_watchdog_timeout_on_a_late_collective_is_serving() -> None:
    """vllm#5484: SeqNum=158046 - tens of thousands of collectives had run; SeqNum=1 says nothing of the kind."""
    late = ("[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=158046, OpType=GATHER, NumelIn=2867200, NumelOut=0, Timeout(ms)=600000) ran for 600027 "
            "milliseconds before timing out.\n")
    a = analyze(late)
    assert a.root_cause is not None and a.root_cause.phase == "serving"
    early = late.replace("SeqNum=158046", "SeqNum=1")
    b = analyze(early)
    assert b.root_cause is not None and b.root_cause.phase != "serving"


def test_failed_batch_dumps_and_rollout_lines_mean_serving() -> None:
    """vllm-ascend#4376 (SchedulerOutput's fields), vllm#43222 ('Dumping scheduler stats'), verl#138
    ('VLLM generating sequences')."""
    for line in ("ds_shape=None)], scheduled_cached_reqs=CachedRequestData(req_ids=[]), num_scheduled_tokens={22: 50}",
                 "(EngineCore_DP0 pid=1) ERROR 05-20 10:42:56 [dump_input.py:81] Dumping scheduler stats: "
                 "SchedulerStats(num_running_reqs=809)",
                 "(WorkerDict pid=130461) VLLM generating sequences with batch size 64"):
        tracker = PhaseTracker()
        tracker.feed(line)
        assert tracker.phase == "serving", line


def test_the_line_a_numbered_native_backtrace_follows_reports_its_error() -> None:
    """TensorRT-LLM#1869: an application logs the executor's error (no level near its start), the C++ stack under it."""
    log = ("Failed to predict: Encountered an error in forwardAsync function: [TensorRT-LLM][ERROR] Assertion failed: "
           "Unable to get batch slot for reqId (/src/cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp:1)\n"
           "1       0x7f5528ff196e tensorrt_llm::common::throwRuntimeError(char const*, int) + 78\n"
           "2       0x7f552900ef23 /usr/lib64/libtensorrt_llm.so(+0x422f23) [0x7f552900ef23]\n")
    a = analyze(log)
    assert a.root_cause is not None and "Unable to get batch slot for reqId" in a.root_cause.message
    assert a.root_cause.phase == "serving"
    assert analyze("1 0x7f5528ff196e f(int) + 78\n").root_cause is None  # a backtrace alone names no error


def test_an_http_5xx_only_reports_a_failure_inside_the_server() -> None:
    """TensorRT-LLM#5451: Briton's HTTPException 500 first, the executor's own error line after it."""
    log = ("Traceback (most recent call last):\n"
           '  File "/v/briton/error_handling.py", line 32, in grpc_error_handling\n'
           '    raise HTTPException(status_code=500, detail="Briton error during inference")\n'
           "fastapi.exceptions.HTTPException: 500: Briton error during inference\n"
           "\n"
           "E0624 21:46:14.504165488     296 briton.cpp:205]                       Executor requestId=235 failed with "
           "error: Encountered an error in forwardAsync function: [TensorRT-LLM][ERROR] Assertion failed: "
           "decoderFinishedEvent must be nullopt.\n")
    a = analyze(log)
    assert a.root_cause is not None and "decoderFinishedEvent must be nullopt" in a.root_cause.message
    assert a.root_cause.phase == "serving"
