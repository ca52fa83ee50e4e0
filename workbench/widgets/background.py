"""Long actions off the kernel's main thread: progress, cancel, errors as messages, output routed.

A :class:`TaskBar` runs one :class:`Task` at a time in a daemon thread, so a click
returns at once and the notebook stays usable.  The task's function gets a
:class:`TaskContext`: ``ctx.progress(fraction, text)`` moves the bar,
``ctx.log(text)`` appends to the bar's log, ``ctx.check()`` raises
:class:`Cancelled` once Cancel was clicked.  An exception becomes a readable
message in the bar (its traceback goes to the log), never a dead widget.

Output from threads (ipywidgets issues 2358, 3993, 4020): ``with output:`` in a
thread captures under whatever cell or click last set the kernel's parent header,
so output lands in the wrong place or is dropped.  Two things are done instead:

* everything the panel itself shows is written as widget *state* —
  ``Output.append_stdout`` / ``append_display_data``, ``outputs = ()``, an HTML
  widget's ``value`` — which travels as comm messages whatever thread sends them;
* stray ``print()`` / ``display()`` in the task's thread (library code) is routed by
  :func:`routed`: the thread gets its own parent header (ipykernel's
  ``set_thread_parent``, ipykernel >= 7) and the log ``Output`` widget captures
  that header's ``msg_id``.  Without such a kernel (tests, scripts) it is a no-op.
"""

from __future__ import annotations

import contextlib
import html
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import ipywidgets as widgets

from workbench.errors import LockHeld, WorkbenchError


class Cancelled(Exception):
    """Raised inside a task once its Cancel button was clicked."""


def error_html(exc: BaseException) -> str:
    """A readable one-box message for an exception: what happened, and what to do when we know."""
    name = type(exc).__name__
    text = str(exc) or repr(exc)
    hint = ""
    if isinstance(exc, LockHeld):
        hint = "Wait for the holder to finish, or raise “wait for a busy host” in the panel header."
    elif not isinstance(exc, WorkbenchError | Cancelled):
        hint = "Unexpected error: the full traceback is in the log below."
    body = f"<b>{html.escape(name)}</b>: <span class='wb-error-text'>{html.escape(text)}</span>"
    if hint:
        body += f"<br><i>{html.escape(hint)}</i>"
    return f"<div class='wb-error' style='border-left:4px solid #c62828;padding:4px 8px;background:#fdecea'>{body}</div>"


def _kernel_shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return None
    return get_ipython()


@contextlib.contextmanager
def routed(output: widgets.Output) -> Iterator[str | None]:
    """Route this thread's ``print``/``display`` into ``output`` (ipykernel >= 7); yields the msg_id used.

    The thread gets a parent header of its own (not the cell's, not the click's), and
    ``output.msg_id`` is set to it so the front end captures exactly those messages.
    """
    shell = _kernel_shell()
    setter = getattr(shell, "set_thread_parent", None)
    if setter is None or getattr(shell, "kernel", None) is None:
        yield None
        return
    from jupyter_client.session import msg_header

    session = shell.kernel.session
    msg_id = f"wb-task-{uuid.uuid4().hex}"
    header = msg_header(msg_id, "execute_request", session.username, session.session)
    parent = {"header": header, "msg_id": msg_id, "msg_type": "execute_request", "parent_header": {},
              "metadata": {}, "content": {}}
    token = setter(parent)
    output.msg_id = msg_id
    try:
        yield msg_id
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()  # sends what is buffered under our header before the capture ends
        shell.reset_thread_parent(token)
        output.msg_id = ""


class TaskContext:
    """What a task's function may do: report progress, log, and notice a cancel."""

    def __init__(self, task: Task) -> None:
        self._task = task

    @property
    def cancelled(self) -> bool:
        return self._task.cancel_event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, waking at once on a cancel; whether the task was cancelled."""
        return self._task.cancel_event.wait(seconds)

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled(f"{self._task.name}: cancelled")

    def progress(self, fraction: float | None, text: str = "") -> None:
        self._task.on_progress(fraction, text)

    def log(self, text: str) -> None:
        self._task.on_log(text if text.endswith("\n") else text + "\n")


class Task:
    """``fn(ctx)`` in a daemon thread; ``state`` is running, done, failed or cancelled."""

    def __init__(self, name: str, fn: Callable[[TaskContext], Any], *,
                 on_progress: Callable[[float | None, str], None] = lambda f, t: None,
                 on_log: Callable[[str], None] = lambda t: None,
                 on_finish: Callable[[Task], None] = lambda t: None,
                 output: widgets.Output | None = None) -> None:
        self.name = name
        self.fn = fn
        self.on_progress, self.on_log, self.on_finish = on_progress, on_log, on_finish
        self.output = output
        self.state = "new"
        self.result: Any = None
        self.error: BaseException | None = None
        self.started = self.finished = 0.0
        self.cancel_event = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Task:
        self.state, self.started = "running", time.time()
        self._thread = threading.Thread(target=self._main, daemon=True, name=f"wb-task-{self.name}")
        self._thread.start()
        return self

    def _main(self) -> None:
        ctx = TaskContext(self)
        routing = routed(self.output) if self.output is not None else contextlib.nullcontext()
        try:
            with routing:
                self.result = self.fn(ctx)
            self.state = "cancelled" if self.cancel_event.is_set() else "done"
        except Cancelled as exc:
            self.state, self.error = "cancelled", exc
        except BaseException as exc:  # shown in the panel; never kills the widget
            self.state, self.error = "failed", exc
        finally:
            self.finished = time.time()
            try:
                self.on_finish(self)
            finally:
                self._done.set()

    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def running(self) -> bool:
        return self.state == "running"

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the task (and its finish callback) ended; False on timeout."""
        return self._done.wait(timeout)


class TaskBar:
    """Progress bar, status line, Cancel button, error box and log for one task at a time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.bar = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, layout=widgets.Layout(width="240px"))
        self.status = widgets.HTML(value="idle")
        self.status.add_class(f"wb-{name}-status")
        self.cancel_button = widgets.Button(description="Cancel", icon="stop", disabled=True,
                                            layout=widgets.Layout(width="100px"))
        self.cancel_button.add_class(f"wb-{name}-cancel")
        self.cancel_button.on_click(lambda _b: self.cancel())
        self.error = widgets.HTML(value="")
        self.error.add_class(f"wb-{name}-error")
        self.log = widgets.Output(layout=widgets.Layout(max_height="160px", overflow="auto"))
        self.log.add_class(f"wb-{name}-log")
        self.task: Task | None = None
        self.widget = widgets.VBox([widgets.HBox([self.bar, self.cancel_button, self.status]), self.error, self.log])

    # -- what tabs call ---------------------------------------------------------
    def submit(self, name: str, fn: Callable[[TaskContext], Any],
               on_done: Callable[[Any], None] | None = None) -> Task | None:
        """Start ``fn`` in the background (``on_done(result)`` runs in the task's thread after it);
        refused with a message while another task of this bar runs."""
        if self.task is not None and self.task.running:
            self.error.value = error_html(WorkbenchError(
                f"{self.task.name} is still running; wait for it or cancel it first"))
            return None
        self.error.value = ""
        self.log.outputs = ()
        self.bar.value, self.bar.bar_style = 0.0, "info"
        self.status.value = f"{html.escape(name)}: running…"
        self.cancel_button.disabled = False

        def finish(task: Task) -> None:
            if task.state == "done" and on_done is not None:
                try:
                    on_done(task.result)
                except BaseException as exc:
                    task.state, task.error = "failed", exc
            self._finished(task)

        task = Task(name, fn, on_progress=self._progress, on_log=self.log.append_stdout, on_finish=finish,
                    output=self.log)
        self.task = task
        return task.start()

    def cancel(self) -> None:
        if self.task is not None and self.task.running:
            self.task.cancel()
            self.status.value = f"{html.escape(self.task.name)}: cancelling…"

    def wait(self, timeout: float | None = 600.0) -> Task | None:
        """The last task, once it ended (for tests and scripts; the panel itself never blocks)."""
        if self.task is not None and not self.task.wait(timeout):
            raise TimeoutError(f"{self.task.name} still running after {timeout} s")
        return self.task

    # -- callbacks (task thread) ---------------------------------------------------
    def _progress(self, fraction: float | None, text: str) -> None:
        if fraction is not None:
            self.bar.value = max(0.0, min(1.0, fraction))
        if text and self.task is not None:
            self.status.value = f"{html.escape(self.task.name)}: {html.escape(text)}"

    def _finished(self, task: Task) -> None:
        self.cancel_button.disabled = True
        took = f" ({task.finished - task.started:.1f} s)"
        if task.state == "done":
            self.bar.value, self.bar.bar_style = 1.0, "success"
            self.status.value = f"{html.escape(task.name)}: done{took}"
        elif task.state == "cancelled":
            self.bar.bar_style = "warning"
            self.status.value = f"{html.escape(task.name)}: cancelled{took}"
        else:
            self.bar.bar_style = "danger"
            self.status.value = f"{html.escape(task.name)}: failed{took}"
            assert task.error is not None
            self.error.value = error_html(task.error)
            if not isinstance(task.error, WorkbenchError):
                self.log.append_stderr("".join(traceback.format_exception(task.error)))


def guarded(error: widgets.HTML, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A click/observe handler that shows its exception in ``error`` instead of losing it."""

    def handler(*args: Any, **kwargs: Any) -> Any:
        try:
            error.value = ""
            return fn(*args, **kwargs)
        except Exception as exc:
            error.value = error_html(exc)
            return None

    return handler
