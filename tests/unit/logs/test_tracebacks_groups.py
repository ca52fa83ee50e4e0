"""An exception group (PEP 654) introduces its sub-exceptions: the first one is what failed (issue 15, cause 5)."""

from __future__ import annotations

import pytest

from workbench.tracebacks import analyze

_GROUP = """  + Exception Group Traceback (most recent call last):
  |   File "/venv/lib/python3.11/site-packages/starlette/routing.py", line 75, in app
  |     await response(scope, receive, send)
  |   File "/venv/lib/python3.11/site-packages/anyio/_backends/_asyncio.py", line 763, in __aexit__
  |     raise BaseExceptionGroup(
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/venv/lib/python3.11/site-packages/vllm/entrypoints/openai/serving_chat.py", line 120, in create
    |     raise ValueError("bad request")
    | ValueError: bad request
    +------------------------------------
"""


def test_the_group_s_sub_exception_is_the_root_cause() -> None:
    root = analyze(_GROUP).root_cause
    assert root is not None and (root.exception_type, root.message) == ("ValueError", "bad request")


def test_a_sub_exception_cut_before_its_type_is_still_the_root_cause_not_the_group() -> None:
    """The window ends inside the sub-exception: what failed is cut, and the group only says that something did."""
    cut = _GROUP.split("    |     raise ValueError")[0]
    root = analyze(cut).root_cause
    assert root is not None and root.exception_type is None
    assert root.innermost_frame is not None and root.innermost_frame.function == "create"


def test_a_sub_exception_whose_frames_tell_no_phase_takes_the_group_s() -> None:
    """The sub-exception ran inside the group: the group's frames (a request's route) place it."""
    log = _GROUP.replace("vllm/entrypoints/openai/serving_chat.py", "asyncio/queues.py").replace("in create", "in get")
    root = analyze(log).root_cause
    assert root is not None and root.exception_type == "ValueError" and root.phase == "serving"


@pytest.mark.parametrize("prefix", ["openwebui-1  | ", "Jun 01 10:00:00 gpu-node-3 python3[4242]: ", "[pod/vllm-0/vllm] "])
def test_an_exception_group_behind_a_prefix_reads_as_without(prefix: str) -> None:
    """The group's margin behind a container's prefix is removed as at a line's start (issue 15, cause 3)."""
    plain = analyze(_GROUP)
    prefixed = analyze("\n".join(prefix + ln for ln in _GROUP.split("\n") if ln) + "\n")
    assert [(t.exception_type, t.message) for t in prefixed.tracebacks] == [
        (t.exception_type, t.message) for t in plain.tracebacks]
    root = prefixed.root_cause
    assert root is not None and (root.exception_type, root.message) == ("ValueError", "bad request")
