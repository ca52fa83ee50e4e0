"""Process and logging utilities (SGLang's ``srt/utils/common.py`` subset)."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from typing import Any

logger = logging.getLogger(__name__)
_PR_SET_NAME = 15
_PR_SET_PDEATHSIG = 1


def _install_log_clock() -> None:
    """A simulated host whose clock runs ``$SGLANG_SIM_CLOCK_OFFSET`` seconds off stamps so."""
    from simcore.multinode import clock_offset

    offset = clock_offset()
    if offset:
        logging.Formatter.converter = staticmethod(lambda t: time.localtime((t or 0) + offset))


def configure_logger(server_args: Any, prefix: str = "") -> None:
    """SGLang's format: no level name; the rank prefix sits inside the timestamp brackets."""
    _install_log_clock()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    level = getattr(logging, str(server_args.log_level).upper(), logging.INFO)
    logging.basicConfig(
        level=level,
        format=f"[%(asctime)s{prefix}] %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        force=True,
    )


class _UvicornFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.levelprefix = f"{record.levelname}:".ljust(9)
        return super().format(record)


def uvicorn_loggers(server_args: Any) -> tuple[logging.Logger, logging.Logger]:
    """``uvicorn.error`` (stderr) and ``uvicorn.access`` (stdout) with SGLang's log config."""
    level = getattr(
        logging, str(server_args.log_level_http or server_args.log_level).upper(), logging.INFO
    )
    out = []
    for name, stream, fmt in (
        ("uvicorn.error", sys.stderr, "[%(asctime)s] %(levelprefix)s %(message)s"),
        ("uvicorn.access", sys.stdout, "[%(asctime)s] %(levelprefix)s %(message)s"),
    ):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        h = logging.StreamHandler(stream)
        h.setFormatter(_UvicornFormatter(fmt, datefmt="%Y-%m-%d %H:%M:%S"))
        lg.addHandler(h)
        lg.setLevel(level)
        lg.propagate = False
        out.append(lg)
    return out[0], out[1]


def get_exception_traceback() -> str:
    etype, value, tb = sys.exc_info()
    return "".join(traceback.format_exception(etype, value, tb))


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return kids
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            kids.append(int(name))
    return kids


def kill_process_tree(
    parent_pid: int, include_parent: bool = True, skip_pid: int | None = None
) -> None:
    """SIGKILL the process tree; with ``include_parent`` on ourselves, we die by signal 9."""
    if parent_pid == os.getpid() and not include_parent:
        # tearing down on our way out: a rank that fails while it is being killed (its pipes gone) sends
        # SIGQUIT, whose handler would kill us by signal 9 instead of the exit status we are leaving with
        with contextlib.suppress(ValueError):  # signal.signal works from the main thread only
            signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    killed: list[int] = []
    for _ in range(3):  # a process forked while the tree was read is found by the next reading
        fresh = [pid for pid in _descendants(parent_pid) if pid != skip_pid and pid not in killed]
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed += fresh
    _wait_gone(killed)
    if include_parent:
        if parent_pid == os.getpid():
            _flush_std()
            os.kill(parent_pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(parent_pid, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    stack, seen = [pid], []
    while stack:
        for kid in _children(stack.pop()):
            seen.append(kid)
            stack.append(kid)
    return seen


def _flush_std(limit: float = 1.0) -> None:
    """Flush stdout and stderr before dying, for at most ``limit`` s: the caller may be a thread while
    the main thread holds a stream's buffer (a write a signal handler interrupted), and a flush that
    waits for it would keep the process alive."""
    flusher = threading.Thread(target=lambda: (sys.stdout.flush(), sys.stderr.flush()), daemon=True)
    flusher.start()
    flusher.join(limit)


def _wait_gone(pids: list[int], limit: float = 5.0) -> None:
    """Reap our own children and wait (up to ``limit`` s) until every killed process has left: the
    server's last process ends after its ranks, so its service manager never finds stragglers in the
    unit's cgroup once the main process is gone (systemd inside the testbed's nspawn hosts cannot kill
    a cgroup: it would leave them, and a quick restart of the unit then races their exit)."""
    deadline = time.monotonic() + limit
    left = set(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[-1].split()[:1]
            except OSError:
                state = []
            if state in ([], [b"Z"]):  # a zombie left after our waitpid is another's child: its parent reaps it
                left.discard(pid)
        if left:
            time.sleep(0.02)


def _prctl(option: int, arg: Any) -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, arg, 0, 0, 0)


def set_process_title(title: str) -> None:
    """What setproctitle would do, within reach of the standard library (the comm name)."""
    _prctl(_PR_SET_NAME, ctypes.c_char_p(title.encode()[:15]))


def kill_itself_when_parent_died() -> None:
    """A rank dies with its parent, the fork server, which leaves when the server does."""
    ppid = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    # The parent may have died before the request was made (a stop during the ranks' start): then
    # no signal comes, and a rank would wait for its peers forever.  Check, as prctl(2) advises;
    # the server itself (the process that asked for the rank) is checked through its sentinel.
    parent = multiprocessing.parent_process()
    if os.getppid() != ppid or (parent is not None and not parent.is_alive()):
        os.kill(os.getpid(), signal.SIGKILL)
