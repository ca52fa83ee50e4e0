"""Mechanisms added after held-out 1-3 were measured (issue 15, second round), each on lines of real logs."""

from __future__ import annotations

from workbench.phases import decide_phase
from workbench.tracebacks import analyze


def test_a_header_cut_at_the_end_of_the_line_opens_a_traceback_with_its_rank() -> None:
    a = analyze("Warning: please use at least NVCC 12.9 for the best DeepGEMM performance\n"
                "[2025-09-04 18:09:42 TP2 PP0] Scheduler hit an exception: Traceback (m\n")
    assert a.root_cause is not None and a.root_cause.ranks == ("TP2 PP0",)
    assert len(a.tracebacks) == 1 and a.tracebacks[0].exception_type is None


def test_traceback_in_the_middle_of_a_sentence_is_not_a_header() -> None:
    a = analyze("INFO 05-06 01:55:26 [x.py:1] see the Traceback (above) for details\n")
    assert not a.tracebacks


def test_a_request_object_in_a_dump_means_serving_when_nothing_else_is_known() -> None:
    a = analyze("[2025-07-11 17:40:16 DP0 TP0] self.cur_batch.batch_size()=1, self.cur_batch.reqs=[Req(rid=8673_5e58, "
                "input_ids=[0, 128803])]\n"
                "[2025-07-11 17:40:16 DP0 TP0] Watchdog timeout (self.watchdog_timeout=300)\n")
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_grammar_compilation_frames_are_per_request_work() -> None:
    frames = [("/vllm/v1/engine/core.py", "step", None),
              ("/vllm/v1/structured_output/__init__.py", "_async_create_grammar", None),
              ("/xgrammar/compiler.py", "compile_json_schema", None)]
    assert decide_phase(frames[1:], (), "unknown") == "serving"
    assert decide_phase(frames[2:], (), "warmup", ready=True) == "serving"


def test_error_executing_method_is_a_failure_line_when_no_stack_follows() -> None:
    a = analyze("(RayWorkerWrapper pid=1861983) INFO 03-27 10:29:03 [model_runner.py:1442] Capturing cudagraphs for decoding.\n"
                "(RayWorkerWrapper pid=206994, ip=192.168.10.25) ERROR 03-27 10:29:13 [worker_base.py:620] Error executing metho\n")
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert a.root_cause.phase == "cuda_graph_capture"


def test_error_executing_method_gives_way_to_the_stack_it_announces() -> None:
    a = analyze("ERROR 06-28 06:11:45 worker_base.py:145] Error executing method initialize_cache. This might cause deadlock.\n"
                "ERROR 06-28 06:11:45 worker_base.py:145] Traceback (most recent call last):\n"
                'ERROR 06-28 06:11:45 worker_base.py:145]   File "/vllm/worker/worker_base.py", line 137, in execute_method\n'
                "ERROR 06-28 06:11:45 worker_base.py:145]     return executor(*args, **kwargs)\n")
    assert a.root_cause is not None and a.root_cause.kind == "exception"


def test_a_crash_handler_line_gives_way_to_faulthandlers_own_line() -> None:
    a = analyze("[2024-02-27 18:08:15,439 E 73667 73667] logging.cc:361: *** SIGSEGV received at time=1709028495 on cpu 22 ***\n"
                "[2024-02-27 18:08:15,441 E 73667 73667] logging.cc:361: PC: @     0x7f75332ba350  (unknown)  (unknown)\n"
                "Fatal Python error: Segmentation fault\n\n"
                "Thread 0x00007f74511ef700 (most recent call first):\n"
                '  File "/ray/_private/worker.py", line 869 in print_logs\n')
    assert a.root_cause is not None and a.root_cause.message.startswith("Fatal Python error: Segmentation fault")


def test_rays_word_for_a_dead_worker_is_a_failure_line() -> None:
    a = analyze("2024-06-13 16:11:50,396 INFO worker.py:1752 -- Started a local Ray instance.\n"
                "[2024-06-13 16:11:51,588 E 13261 13261] core_worker.cc:228: Failed to register worker 0100 to Raylet. "
                "IOError: [RayletClient] Unable to register worker with raylet. No such file or directory\n")
    assert a.root_cause is not None and "Unable to register worker with raylet" in a.root_cause.message
    b = analyze("(raylet) A worker died or was killed while executing a task by an unexpected system error.\n")
    assert b.root_cause is not None and b.root_cause.kind == "log_line"


def test_a_torch_rank_behind_an_unknown_prefix_names_the_events_rank() -> None:
    a = analyze("  | [rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=2, OpType=ALLREDUCE) ran for 600059 milliseconds before timing out.\n")
    assert a.root_cause is not None and a.root_cause.ranks == ("rank0",)


def test_the_overlap_thread_and_a_processing_method_are_phase_evidence() -> None:
    frames = [("/sglang/srt/managers/tp_worker_overlap_thread.py", "forward_thread_func", None)]
    assert decide_phase(frames, (), "unknown") == "serving"
    text = "Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks."
    assert decide_phase((), (text,), "unknown") == "kv_cache_alloc"
