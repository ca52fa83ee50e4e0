"""Hosts: the one seam through which the workbench runs anything, locally or over SSH.

``Host.run()`` returns a :class:`Result` whatever the transport; ``Host.stream()``
yields lines as a command prints them; ``put``/``get`` move files; ``tunnel``
forwards a port.  :class:`workbench.ssh.SSHHost` reaches a host by its ssh_config
alias with Fabric (ProxyJump, User, IdentityFile, Port honoured) and fails closed on
host keys; :class:`LocalHost` runs on this machine; :func:`connect` picks one by name.

No call hangs: every command carries a deadline that the host enforces too
(``timeout -k``), so a timed-out command is killed there rather than orphaned,
and a host that stops answering is detected by a liveness probe.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from workbench import inflight, shell
from workbench.errors import (
    CommandFailed,
    CommandTimeout,
    ConfigError,
    SessionFenced,
)
from workbench.inflight import Fence
from workbench.redact import clip
from workbench.shell import Command

# Paramiko reports expected events (a tunnel dialled before the server listens, a socket
# closed under a dying transport) as log records; without a handler Python would print
# them to stderr.  Applications that configure logging still get them.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

DEFAULT_TIMEOUT = 60.0
CONNECT_TIMEOUT = 15.0
KEEPALIVE_S = 5
# Extra wait past a deadline for the host's own ``timeout`` to report back.
GRACE_S = shell.KILL_AFTER_S + 2.0
PROBE_TIMEOUT = 8.0


@dataclass(frozen=True)
class Result:
    """What a command did: its exit status and both output streams."""

    command: str
    stdout: str
    stderr: str
    exited: int
    host: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exited == 0

    def tail(self, n: int = 10) -> str:
        """The last ``n`` lines of stderr (or stdout) for error messages."""
        text = self.stderr.strip() or self.stdout.strip()
        return "\n".join(text.splitlines()[-n:])


class LineStream:
    """Lines of a running command, delivered by a reader thread.

    Iterate for every line until the command ends, or call :meth:`readline` with
    a timeout to interleave other checks; :meth:`close` stops the command; :meth:`write`
    sends to its stdin (a stream started with ``tether=False``).
    """

    def __init__(self, closer: Any, name: str = "", writer: Any = None) -> None:
        self._q: queue.Queue[str | None] = queue.Queue()
        self._closer = closer
        self._writer = writer
        self.name = name
        self.exit_status: int | None = None
        self.error: BaseException | None = None
        self._eof = False

    # -- producer side -------------------------------------------------
    def _feed(self, line: str) -> None:
        self._q.put(line)

    def _finish(self, status: int | None, error: BaseException | None = None) -> None:
        self.exit_status = status
        self.error = error
        self._q.put(None)

    # -- consumer side -------------------------------------------------
    def readline(self, timeout: float | None = None) -> str | None:
        """Next line (without newline); ``None`` on timeout; raises ``EOFError`` at the end."""
        if self._eof:
            raise EOFError
        try:
            item = self._q.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is None:
            self._eof = True
            if self.error is not None:
                raise self.error
            raise EOFError
        return item

    def __iter__(self) -> Iterator[str]:
        while True:
            try:
                line = self.readline()
            except EOFError:
                return
            if line is not None:
                yield line

    @property
    def finished(self) -> bool:
        return self._eof

    def write(self, data: bytes) -> None:
        """Send ``data`` to the command's stdin (``OSError`` once the command or its channel is gone)."""
        if self._writer is None:
            raise OSError(f"{self.name}: this stream's stdin is not open (start it with tether=False)")
        self._writer(data)

    def close(self) -> None:
        self._closer()

    def __enter__(self) -> LineStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Host(Protocol):
    """What every host offers; see :class:`SSHHost` and :class:`LocalHost`."""

    name: str

    def run(
        self,
        cmd: Command,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        check: bool = False,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Result: ...

    def stream(self, cmd: Command, *, env: Mapping[str, str] | None = None, tether: bool = True) -> LineStream: ...

    def put(self, data: bytes, path: str, mode: int = 0o644) -> None: ...

    def get(self, path: str, *, timeout: float = DEFAULT_TIMEOUT) -> bytes: ...

    def tunnel(self, remote_port: int) -> contextlib.AbstractContextManager[int]: ...

    def close(self) -> None: ...


def _check(result: Result, check: bool, fence: Fence | None = None) -> Result:
    """``result``, or the error it is: the fence's refusal always (the session is over, whatever the
    caller checks), a non-zero exit when ``check``."""
    if fence is not None and fence.refused(result.exited, result.stderr):
        why = inflight.refusal_why(result.stderr)
        raise SessionFenced(f"{result.host}: this session's commands are refused: it was fenced off, its host "
                            f"handed to a restorer (its guard, or a later session){f' ({why})' if why else ''}; "
                            f"changing nothing more: {clip(result.command, 120)}", host=result.host, result=result,
                            why=why)
    if check and not result.ok:
        raise CommandFailed(
            f"{result.host}: command exited {result.exited}: {clip(result.command, 200)}\n{result.tail()}",
            host=result.host,
            result=result,
        )
    return result


def _prepare(cmd: Command, input: str | bytes | None, env: Mapping[str, str] | None) -> tuple[str, bytes | None]:
    """Command text and stdin bytes, with ``env`` carried on stdin (never on a command line)."""
    data = input.encode() if isinstance(input, str) else input
    text = shell.join(cmd)
    if "\0" in text:
        raise ConfigError("a command cannot contain a NUL byte (argv strings end at NUL)")
    if env:
        text, prefix = shell.with_env_from_stdin(text, dict(env))
        data = prefix + (data or b"")
    return text, data


def _prepare_run(cmd: Command, input: str | bytes | None,
                 env: Mapping[str, str] | None) -> tuple[str, bytes | None, str]:
    """:func:`_prepare` for a command that reads its stdin to the end, plus the text to show for it:
    it runs only on the whole of its stdin (:func:`shell.whole_stdin`), so a controller killed
    mid-send never runs a cut script or writes a cut file."""
    text, data = _prepare(cmd, input, env)
    return (text if data is None else shell.whole_stdin(text, len(data))), data, text


def _put_command(path: str, mode: int) -> list[str]:
    """Write stdin to ``path`` atomically: temp file in the same directory, then rename. ``run``
    gives it only a whole input (a cut one replaced a good session record with an empty one)."""
    script = (
        'set -e; d=$(dirname "$1"); mkdir -p "$d"; t=$(mktemp "$d/.wb-put.XXXXXX"); '
        'trap \'rm -f "$t"\' EXIT; cat >"$t"; '
        'chmod "$2" "$t"; sync "$t" 2>/dev/null || true; mv -f "$t" "$1"; trap - EXIT'
    )
    return ["sh", "-c", script, "put", path, format(mode, "o")]


# ---------------------------------------------------------------------------
# Local
# ---------------------------------------------------------------------------


class LocalHost:
    """This machine, behind the same interface as a remote host."""

    def __init__(self, name: str = "local", *, env: Mapping[str, str] | None = None,
                 properties: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.env = dict(env or {})
        self.properties: dict[str, Any] = dict(properties or {})
        self.fence: Fence | None = None  # set by a session: its commands fenced (workbench.inflight)

    def _environ(self) -> dict[str, str] | None:
        if not self.env:
            return None
        merged = dict(os.environ)
        for key, value in self.env.items():
            merged[key] = os.path.expandvars(value) if "$" in value else value
        return merged

    def run(
        self,
        cmd: Command,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        check: bool = False,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        text, data, shown = _prepare_run(cmd, input, env)
        if self.fence is not None:
            text = self.fence.wrap(text)
        started = time.monotonic()
        proc = subprocess.Popen(
            ["sh", "-c", text],
            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=self._environ(),
        )
        try:
            out, err = proc.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.communicate()
            raise CommandTimeout(
                f"{self.name}: command ran past {timeout:.0f} s and was killed: {clip(shown, 200)}",
                host=self.name,
            ) from None
        result = Result(shown, out.decode(errors="replace"), err.decode(errors="replace"),
                        proc.returncode, self.name, time.monotonic() - started)
        return _check(result, check, self.fence)

    def stream(self, cmd: Command, *, env: Mapping[str, str] | None = None, tether: bool = True) -> LineStream:
        """Lines of ``cmd`` as it prints them.  ``tether=False`` keeps the command's stdin open
        until :meth:`LineStream.close` (for commands that end on stdin EOF, like a lock holder)."""
        text, data = _prepare(cmd, None, env)
        proc = subprocess.Popen(
            ["sh", "-c", text],
            stdin=subprocess.PIPE if data is not None or not tether else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=self._environ(),
        )
        if data is not None and proc.stdin:
            proc.stdin.write(data)
            proc.stdin.flush()
            if tether:
                proc.stdin.close()

        def close() -> None:
            if proc.stdin and not proc.stdin.closed:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            if tether or proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 15)

        def write(data: bytes) -> None:
            if proc.stdin is None or proc.stdin.closed:
                raise OSError(f"{self.name}: the stream's stdin is closed")
            proc.stdin.write(data)
            proc.stdin.flush()

        stream = LineStream(close, self.name, write if not tether else None)

        def pump() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                stream._feed(raw.decode(errors="replace").rstrip("\n"))
            stream._finish(proc.wait())

        threading.Thread(target=pump, daemon=True, name=f"stream-{self.name}").start()
        return stream

    def put(self, data: bytes, path: str, mode: int = 0o644) -> None:
        self.run(_put_command(path, mode), input=data, check=True)

    def get(self, path: str, *, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            raise CommandFailed(f"{self.name}: cannot read {path}: {exc}", host=self.name) from exc

    @contextlib.contextmanager
    def tunnel(self, remote_port: int) -> Iterator[int]:
        yield remote_port

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"LocalHost({self.name!r})"


@dataclass
class HostRegistry:
    """Resolves names to hosts and keeps one connection per name."""

    ssh_config: str | None = None
    _hosts: dict[str, Host] = field(default_factory=dict)

    def get(self, name: str) -> Host:
        if name not in self._hosts:
            self._hosts[name] = connect(name, ssh_config=self.ssh_config)
        return self._hosts[name]

    def close(self) -> None:
        for host in self._hosts.values():
            host.close()
        self._hosts.clear()


@contextlib.contextmanager
def closed_on(host: Host, stop: threading.Event | None) -> Iterator[Host]:
    """``host``, closed as soon as ``stop`` is set while the block runs, and on the way out: a command,
    stream or tunnel of it in flight then ends with its connection (an SSH host's; a local host has
    none), however long it would have waited on a server that no longer answers."""
    done = threading.Event()

    def watch(stop: threading.Event) -> None:
        while not done.is_set():
            if stop.wait(0.25):
                host.close()
                return

    thread = None if stop is None else threading.Thread(target=watch, args=(stop,), daemon=True,
                                                         name=f"closed-on-{host.name}")
    if thread is not None:
        thread.start()
    try:
        yield host
    finally:
        done.set()
        if thread is not None:
            thread.join()
        host.close()


def default_ssh_config() -> str | None:
    """``$WORKBENCH_SSH_CONFIG`` when set, else None: the testbed's and the user's configs both
    (see :func:`workbench.inventory.ssh_configs`)."""
    return os.environ.get("WORKBENCH_SSH_CONFIG") or None


def connect(name: str, *, ssh_config: str | os.PathLike[str] | None = None, sudo: bool | None = None) -> Host:
    """The host called ``name``: ``local`` is this machine, an inventory host with the ``local``
    transport a :class:`LocalHost` with that host's environment, anything else an ssh_config
    alias resolved with :func:`workbench.inventory.ssh_configs` (``ssh_config`` given: that file alone).

    ``sudo`` (default: the environment variable ``WORKBENCH_SUDO=1``) makes an SSH host run
    every command through ``sudo`` when its login user is not root; see :class:`SSHHost`."""
    if name in ("local", "localhost"):
        return LocalHost(name)
    from workbench import inventory

    inv = inventory.load()
    entry = inv.get(name)
    if entry is not None and entry.transport == "local" and ssh_config is None:
        return LocalHost(name, env=entry.properties.get("env"), properties=entry.properties)
    from workbench.ssh import SSHHost

    if sudo is None:
        sudo = os.environ.get("WORKBENCH_SUDO", "").strip().lower() in ("1", "true", "yes")
    return SSHHost(name, ssh_config=inventory.ssh_configs(ssh_config, inv), sudo=sudo)
