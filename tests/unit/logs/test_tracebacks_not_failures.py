"""What looks like an exception but is not what failed: NCCL's result codes, the resource tracker's cleanup."""

from __future__ import annotations

from workbench.logformats import parse_line
from workbench.tracebacks import analyze

_NCCL = """(model_worker/7 pid=20331) 20250404-10:47:52.228 worker ERROR: Worker encountered error NCCL error in: \
/opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:275, remote process exited or there was a network error
(model_worker/7 pid=20331) ncclRemoteError: A call failed possibly due to a network error or a remote process exiting.
(model_worker/7 pid=20331) Last error:
(model_worker/7 pid=20331) socketStartConnect: exceeded retries (20000)
"""


def test_a_ray_actor_named_with_a_slash_is_a_process_prefix() -> None:
    line = parse_line("(model_worker/12 pid=43581, ip=10.208.16.54) [rank12]:[E227 06:13:07.855233166 x.cpp:1] y")
    assert (line.process, line.pid, line.rank) == ("model_worker/12", 43581, "rank12")


def test_nccl_s_result_code_is_no_exception_type() -> None:
    """"ncclRemoteError: ..." is NCCL's text for a result code: the record that says what failed is the cause."""
    root = analyze(_NCCL).root_cause
    assert root is not None and root.kind == "log_line" and root.exception_type is None
    assert "remote process exited or there was a network error" in root.message


def test_the_resource_tracker_s_cleanup_is_not_the_root_cause() -> None:
    """multiprocessing's resource tracker fails to unlink what the failed processes left: noise after the failure."""
    tracker = """Traceback (most recent call last):
  File "/usr/lib/python3.10/multiprocessing/resource_tracker.py", line 209, in main
    cache[rtype].remove(name)
KeyError: '/loky-20105-_31z_nje'
"""
    root = analyze(tracker + _NCCL).root_cause
    assert root is not None and root.exception_type is None and "network error" in root.message
    alone = analyze(tracker).root_cause  # nothing else failed: it is all there is
    assert alone is not None and alone.exception_type == "KeyError"
