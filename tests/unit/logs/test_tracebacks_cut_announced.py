"""A stack cut before its exception line, under the record that announced it (above it, on its header's line, or Ray's
head over a remote task's frames): those words say what failed, unless they say nothing failed."""

from __future__ import annotations

from workbench.tracebacks import analyze

_HEAD = "(EngineCore_DP0 pid=7) ERROR 05-16 11:10:22 [core.py:708] "


def test_the_announcing_record_of_a_cut_stack_is_its_message() -> None:
    log = (f"{_HEAD}EngineCore encountered a fatal error.\n"
           f"{_HEAD}Traceback (most recent call last):\n"
           f'{_HEAD}  File "/x/vllm/v1/engine/core.py", line 699, in run_engine_core\n'
           f"{_HEAD}    engine_core.run_busy_loop()\n")
    root = analyze(log).root_cause
    assert root is not None and root.exception_type is None
    assert root.message == "EngineCore encountered a fatal error."


def test_a_record_naming_only_the_call_is_the_last_resort() -> None:
    call = (f"{_HEAD}Error executing method 'determine_available_memory'. This might cause deadlock.\n"
            f"{_HEAD}Traceback (most recent call last):\n"
            f'{_HEAD}  File "/x/vllm/worker/worker_base.py", line 620, in execute_method\n')
    root = analyze(call).root_cause
    assert root is not None and root.kind == "exception" and root.exception_type is None
    assert root.message.startswith("Error executing method 'determine_available_memory'.")
    cause = f"{_HEAD}RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    root = analyze(cause + call).root_cause
    assert root is not None and "NCCL error: unhandled system error" in root.message
    assert "Error executing method" not in root.message.splitlines()[0]


def test_words_on_the_header_line_announce_the_cut_stack() -> None:
    log = ("[2025-06-19 08:18:45 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/x/sglang/srt/managers/scheduler.py", line 2300, in run_scheduler_process\n'
           "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n")
    root = analyze(log).root_cause
    assert root is not None and root.kind == "exception" and root.exception_type is None
    assert root.message.startswith("Scheduler hit an exception")


def test_a_ray_head_over_cut_task_frames_names_the_task() -> None:
    log = ("ray.exceptions.RayTaskError(RuntimeError): ray::Runner.run() (pid=1362920, ip=192.0.2.6)\n"
           '  File "/x/main.py", line 40, in run\n'
           "    trainer.init_workers()\n")
    root = analyze(log).root_cause
    assert root is not None and root.kind == "exception" and root.exception_type is None
    assert "ray::Runner.run()" in root.message


def test_a_record_that_says_nothing_failed_is_no_message() -> None:
    log = ("cx2:623868:623868 [0] NCCL INFO enqueue.cc:2432 -> 1\n"
           "Traceback (most recent call last):\n"
           '  File "/x/swift/cli/rlhf.py", line 7, in <module>\n'
           "    rlhf_main()\n")
    root = analyze(log).root_cause
    assert root is not None and root.exception_type is None and root.message == ""
