"""Slurm's srun --label puts the task's number, right-aligned, before every line of its output."""

from __future__ import annotations

from workbench.tracebacks import analyze

_LOG = """ 0: [06/27/2025-15:55:56] [TRT-LLM] [RANK 0] [E] Traceback (most recent call last):
 0:   File "/x/tensorrt_llm/executor/worker.py", line 756, in worker_main
 0:     worker.submit(req)
 0:   File "/x/tensorrt_llm/executor/worker.py", line 520, in submit
 0:     request_id = self._enqueue_request(request)
 0: RuntimeError: boom
"""


def test_frames_behind_srun_s_task_label_are_read() -> None:
    root = analyze(_LOG).root_cause
    assert root is not None and root.exception_type == "RuntimeError" and root.message == "boom"
    assert root.innermost_frame is not None and root.innermost_frame.function == "submit"
    assert root.innermost_frame.code == "request_id = self._enqueue_request(request)"  # no label left in it
    assert root.phase == "serving"  # TensorRT-LLM's worker submitting a request


def test_two_digit_task_labels_are_read_too() -> None:
    log = "\n".join(f"1{line[1:]}" if line else line for line in _LOG.split("\n")).replace("[RANK 0] ", "")
    root = analyze(log).root_cause
    assert root is not None and root.exception_type == "RuntimeError"
    assert root.innermost_frame is not None and root.innermost_frame.function == "submit"
