"""Mechanisms added after held-out 9 was measured (issue 15, eighth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.tracebacks import analyze

_DEL = ('(RayWorkerVllm pid=14289) Exception ignored in: <function NCCLCommunicator.__del__ at 0x7f4d8c3212d0>\n'
        '(RayWorkerVllm pid=14289) Traceback (most recent call last):\n'
        '(RayWorkerVllm pid=14289)   File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/parallel_utils/'
        'pynccl.py", line 264, in __del__\n'
        '(RayWorkerVllm pid=14289)     _c_ncclCommDestroy(self.comm)\n'
        "(RayWorkerVllm pid=14289) AttributeError: 'NCCLCommunicator' object has no attribute 'comm'\n")


def test_an_exception_python_ignored_is_not_the_root_cause() -> None:
    """vllm#4114: a __del__'s AttributeError under "Exception ignored in:", then the worker's real
    traceback (init_device), cut before its exception line."""
    text = _DEL + (
        '(RayWorkerVllm pid=14289) ERROR 04-17 09:00:33 ray_utils.py:44] Error executing method init_device. '
        'This might cause deadlock in distributed execution.\n'
        '(RayWorkerVllm pid=14289) ERROR 04-17 09:00:33 ray_utils.py:44] Traceback (most recent call last):\n'
        '(RayWorkerVllm pid=14289) ERROR 04-17 09:00:33 ray_utils.py:44]   File "/usr/local/lib/python3.10/dist-packages/'
        'vllm/engine/ray_utils.py", line 37, in execute_method\n'
        '(RayWorkerVllm pid=14289) ERROR 04-17 09:00:33 ray_utils.py:44]     return executor(*args, **kwargs)\n'
        '(RayWorkerVllm pid=14289) ERROR 04-17 09:00:33 ray_utils.py:44]   File "/usr/local/lib/python3.10/dist-packages/'
        'vllm/worker/worker.py", line 100, in init_device\n')
    a = analyze(text)
    assert a.tracebacks[0].unraisable and not a.tracebacks[1].unraisable
    rc = a.root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "nccl_init"
    assert rc.innermost_frame is not None and rc.innermost_frame.function == "init_device"


def test_an_ignored_exception_alone_is_still_reported() -> None:
    rc = analyze(_DEL).root_cause
    assert rc is not None and rc.exception_type == "AttributeError"


def test_a_cut_traceback_takes_its_message_from_the_error_record_that_introduced_it() -> None:
    """gpustack#3969: logger.exception's record ('... - ERROR - Error provisioning model instance X:
    <what failed>'), then the traceback, cut before its exception line; the record also says start-up."""
    text = ('2025-12-20 04:37:58.574872+08:00 - gpustack.worker.backends.vllm - INFO - Starting vLLM model instance: Q\n'
            '2025-12-20 04:38:00.262558+08:00 - gpustack.worker.serve_manager - ERROR - Error provisioning model '
            'instance Qwen3-nntL6: Failed to get vLLM backend image\n'
            'Traceback (most recent call last):\n'
            '  File "/usr/local/lib/python3.11/dist-packages/gpustack/worker/serve_manager.py", line 422, in '
            '_serve_model_instance\n'
            '    server_ins.start()\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None
    assert "Failed to get vLLM backend image" in rc.message
    assert rc.phase == "startup_other"


def test_a_wrapper_that_only_announces_the_stack_is_all_its_cut_stack_says() -> None:
    """SGLang's "Scheduler hit an exception:" says only that the scheduler died: with the exception line cut, those words
    are the message of a failure that stays the stack's (an exception of unknown type), not a record of its own."""
    text = ('[2025-09-08 18:19:22 TP0] Scheduler hit an exception: Traceback (most recent call last):\n'
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2586, in run_scheduler_process\n'
            '    scheduler = Scheduler(\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.kind == "exception" and rc.exception_type is None
    assert rc.message == "Scheduler hit an exception:"


def test_an_exception_line_after_a_full_width_colon_label_is_read() -> None:
    """vllm-ascend#1987: '【BUG】：RuntimeError: NPU out of memory. ...' pasted under a label."""
    rc = analyze("Tried using the glm-32b-0414 model, but failed to invoke two cards.\n"
                 "【BUG】：RuntimeError: NPU out of memory. Tried to allocate 3.47 GiB (NPU 0; 60.97 GiB total "
                 "capacity; 58.92 GiB already allocated)\n").root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    assert rc.message.startswith("NPU out of memory. Tried to allocate 3.47 GiB")
    # a label alone, or one before words that are not an error class, is no exception
    assert analyze("报错：见下面的日志\n").root_cause is None
    assert analyze("说明：Warning: something\n").root_cause is None


def test_the_kernels_report_of_a_process_it_stopped_is_a_crash() -> None:
    """lmdeploy#4944: dmesg's 'traps: lmdeploy[pid] general protection fault ip:...' (and a segfault line)."""
    rc = analyze("[Tue Sep  8 10:05:32 2026] traps: lmdeploy[3838286] general protection fault ip:7f8304036898 "
                 "sp:7f7fde7fa710 error:0 in libc.so.6[7f8304036000+195000]\n").root_cause
    assert rc is not None and rc.kind == "log_line" and "general protection fault" in rc.message
    rc = analyze("Sep 08 10:05:32 host kernel: python3[1234]: segfault at 8 ip 00007f3a sp 00007ffc error 4 "
                 "in libtorch_cuda.so[7f3a+1000]\n").root_cause
    assert rc is not None and "segfault at 8" in rc.message
    assert analyze("kernel: traps handled: 0\n").root_cause is None


def test_mini_sglangs_scheduler_loop_is_serving() -> None:
    """mini-sglang#67: 'Process minisgl-TP0-scheduler:' traceback cut at launch.py's scheduler.run_forever()."""
    text = ("Process minisgl-TP0-scheduler:\n"
            "Traceback (most recent call last):\n"
            '  File "/opt/conda/lib/python3.12/multiprocessing/process.py", line 108, in run\n'
            "    self._target(*self._args, **self._kwargs)\n"
            '  File "/workspace/mini-sglang/python/minisgl/server/launch.py", line 31, in _run_scheduler\n'
            "    scheduler.run_forever()\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "serving"


_MQ_ENGINE = ('ERROR 12-17 09:31:58 [engine.py:458] Traceback (most recent call last):\n'
              'ERROR 12-17 09:31:58 [engine.py:458]   File "/vllm-workspace/vllm/vllm/engine/multiprocessing/engine.py", '
              'line 87, in __init__\n'
              'ERROR 12-17 09:31:58 [engine.py:458]     self.engine = LLMEngine(*args, **kwargs)\n'
              'ERROR 12-17 09:31:58 [engine.py:458]   File "/vllm-workspace/vllm/vllm/engine/llm_engine.py", line 268, '
              'in __init__\n'
              'ERROR 12-17 09:31:58 [engine.py:458]     self._init\n')


def test_collective_error_records_just_before_a_start_up_traceback_say_nccl_start() -> None:
    """vllm-ascend#5135: CANN's '... ERR02200 DIST call hccl api failed.' records, then the engine's
    start-up traceback, cut inside LLMEngine.__init__."""
    text = ('ERROR 12-17 09:31:58 [engine.py:458] [ERROR] 2025-12-17-09:31:53 (PID:53769, Device:0, RankID:-1) '
            'ERR02200 DIST call hccl api failed.\n'
            'ERROR 12-17 09:31:58 [engine.py:458] EH9999: Inner Error!\n' + _MQ_ENGINE)
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "nccl_init"
    # a record that only names the library (no error) says nothing of the failure
    quiet = analyze("INFO 12-17 09:31:50 [utils.py:126] Found nccl from library libnccl.so.2\n"
                    "INFO 12-17 09:31:51 [config.py:10] Using max model len 4096\n"
                    "INFO 12-17 09:31:52 [config.py:12] Chunked prefill is enabled\n" + _MQ_ENGINE).root_cause
    assert quiet is not None and quiet.phase == "startup_other"


def test_a_workers_error_executing_method_record_names_only_the_call() -> None:
    """vLLM's "Error executing method X. This might cause deadlock ..." names the call, not what failed: with nothing
    else above the cut stack, it is all that is known (an exception of unknown type)."""
    text = ("ERROR 04-17 09:00:33 worker_base.py:44] Error executing method initialize_cache. This might cause "
            "deadlock in distributed execution.\n"
            "ERROR 04-17 09:00:33 worker_base.py:44] Traceback (most recent call last):\n"
            'ERROR 04-17 09:00:33 worker_base.py:44]   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/'
            'worker_base.py", line 37, in execute_method\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.kind == "exception" and rc.exception_type is None
    assert rc.message.startswith("Error executing method initialize_cache.")
