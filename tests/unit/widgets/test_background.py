"""The background machinery: tasks run off the caller's thread, report, cancel, and fail readably."""

from __future__ import annotations

import threading

import ipywidgets as widgets
import pytest

from workbench.errors import LockHeld
from workbench.widgets.background import Cancelled, TaskBar, error_html, guarded, routed


def test_task_runs_in_another_thread_and_reports_progress_and_log():
    bar = TaskBar("t")
    seen = {}
    release = threading.Event()

    def work(ctx):
        seen["thread"] = threading.current_thread().name
        ctx.progress(0.5, "half way")
        ctx.log("a line from the task")
        release.wait(10)
        return 42

    task = bar.submit("job", work, on_done=lambda r: seen.setdefault("result", r))
    assert task is not None and task.running  # the caller was not blocked
    assert bar.cancel_button.disabled is False
    release.set()
    bar.wait(10)
    assert task.state == "done" and task.result == 42 and seen["result"] == 42
    assert seen["thread"].startswith("wb-task-") and seen["thread"] != threading.current_thread().name
    assert bar.bar.value == 1.0 and "done" in bar.status.value
    assert any("a line from the task" in o["text"] for o in bar.log.outputs)
    assert bar.cancel_button.disabled is True


def test_cancel_is_cooperative_and_shown():
    bar = TaskBar("t")
    started = threading.Event()

    def work(ctx):
        started.set()
        while True:
            ctx.check()
            ctx.wait(5)

    task = bar.submit("loop", work)
    assert started.wait(10)
    bar.cancel_button.click()
    bar.wait(10)
    assert task.state == "cancelled" and isinstance(task.error, Cancelled)
    assert "cancelled" in bar.status.value and bar.error.value == ""


def test_an_error_becomes_a_message_and_the_bar_stays_usable():
    bar = TaskBar("t")

    def boom(ctx):
        raise LockHeld("gpu-b is locked by another session (user=alice)", host="gpu-b")

    bar.submit("locked", boom)
    task = bar.wait(10)
    assert task.state == "failed"
    assert "LockHeld" in bar.error.value and "user=alice" in bar.error.value
    assert "failed" in bar.status.value
    # an unexpected error also gets its traceback in the log
    bar.submit("bug", lambda ctx: {}["missing"])
    bar.wait(10)
    assert "KeyError" in bar.error.value and "traceback" in bar.error.value
    assert any("Traceback" in o.get("text", "") for o in bar.log.outputs)
    # and the next task runs normally
    bar.submit("ok", lambda ctx: 1)
    assert bar.wait(10).state == "done" and bar.error.value == ""


def test_a_second_task_is_refused_while_one_runs():
    bar = TaskBar("t")
    release = threading.Event()
    bar.submit("first", lambda ctx: release.wait(10))
    assert bar.submit("second", lambda ctx: None) is None
    assert "still running" in bar.error.value
    release.set()
    bar.wait(10)


def test_on_done_errors_are_shown_too():
    bar = TaskBar("t")
    bar.submit("x", lambda ctx: 1, on_done=lambda r: 1 / 0)
    assert bar.wait(10).state == "failed" and "ZeroDivisionError" in bar.error.value


def test_guarded_handler_shows_the_exception():
    err = widgets.HTML()
    handler = guarded(err, lambda: (_ for _ in ()).throw(ValueError("bad flag")))
    assert handler() is None
    assert "ValueError" in err.value and "bad flag" in err.value
    guarded(err, lambda: None)()
    assert err.value == ""


def test_error_html_escapes():
    assert "&lt;script&gt;" in error_html(ValueError("<script>"))


def test_routed_without_a_kernel_is_a_no_op():
    out = widgets.Output()
    with routed(out) as msg_id:
        assert msg_id is None
    assert out.msg_id == ""


@pytest.mark.parametrize("state", ["done", "failed"])
def test_wait_returns_the_finished_task(state):
    bar = TaskBar("t")
    bar.submit("x", (lambda ctx: 1) if state == "done" else (lambda ctx: 1 / 0))
    assert bar.wait(10).state == state
