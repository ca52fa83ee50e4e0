"""SSH hosts: a host reached by its ssh_config alias through Fabric (the other half of :mod:`workbench.hosts`).

Fabric connects (ssh_config, ProxyJump gateways built in OpenSSH's order, IdentityFile,
Port, User); host keys fail closed (Fabric's own default accepts any key); commands run on
Paramiko channels we read ourselves, so every command has a deadline that the host enforces
too (``timeout -k``), a host that stops answering is told apart by a liveness probe, and
streams are tethered to our end of the channel.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from workbench import shell, signals
from workbench.errors import (
    CommandRefused,
    CommandTimeout,
    ConfigError,
    ConnectError,
    HostError,
    HostKeyError,
    HostUnresponsive,
    SudoAuthFailure,
)
from workbench.hosts import (
    CONNECT_TIMEOUT,
    DEFAULT_TIMEOUT,
    GRACE_S,
    KEEPALIVE_S,
    PROBE_TIMEOUT,
    LineStream,
    Result,
    _check,
    _prepare,
    _prepare_run,
    _put_command,
)
from workbench.inflight import Fence
from workbench.redact import clip
from workbench.shell import Command
from workbench.sshconfig import ConfigSet, user_files


def _known_hosts_files(ssh_config: Mapping[str, Any]) -> list[Path]:
    files: list[str] = []
    for key in ("userknownhostsfile", "globalknownhostsfile"):
        value = ssh_config.get(key)
        if value:
            files.extend(value if isinstance(value, list) else shlex.split(value))
    if not files:
        files = ["~/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"]
    return [Path(os.path.expanduser(f)) for f in files]


def _harden(conn: Any) -> None:
    """Make a Fabric connection (and its ProxyJump gateways) refuse unknown or changed keys.

    Fabric hard-codes ``AutoAddPolicy`` and loads no known_hosts file; we load
    the files ssh_config names (or OpenSSH's defaults) and reject everything
    else.  ``StrictHostKeyChecking`` cannot loosen this.
    """
    import paramiko

    while conn is not None and not isinstance(conn, str | bool):
        conn.client.set_missing_host_key_policy(paramiko.RejectPolicy())
        for path in _known_hosts_files(conn.ssh_config):
            if path.is_file():
                conn.client.load_system_host_keys(str(path))
        conn = conn.gateway


def close_channel(chan: Any) -> None:
    """Close a paramiko channel that ``select`` was used on, without killing its connection.

    ``select`` makes paramiko give the channel a pipe; ``Channel.close()`` closes that
    pipe, but a packet still in flight for the channel is fed to it from the transport
    thread, which then writes to a closed descriptor: ``OSError: [Errno 9] Bad file
    descriptor`` there kills the whole connection (or the write lands on a reused
    descriptor). A chatty server (vLLM's shutdown floods the journal a follow stream
    reads) hits this. Pointing the buffers at plain events first, under their own
    locks, leaves late packets nothing to write to. A Ctrl-C waits for the close
    (:data:`workbench.signals.held`).
    """
    with signals.held:
        for buf in (chan.in_buffer, chan.in_stderr_buffer):
            with contextlib.suppress(Exception):
                buf.set_event(threading.Event())
        chan.close()


SUDO_PASSWORD_ENV = "WORKBENCH_SUDO_PASSWORD"


def _check_sudo_password(password: str) -> None:
    """``sudo -S`` reads the password as one line: a newline would end it early, a NUL cut it."""
    if "\n" in password or "\0" in password:
        raise ConfigError("a sudo password cannot contain a newline or a NUL byte")


class SSHHost:
    """A host reached by its ssh_config alias through Fabric.

    ``sudo=True`` runs every command as root through ``sudo`` when the login user is not
    root: the whole command line goes inside ``sudo -- sh -c '...'``, so pipes and
    redirections run as root too.  The password (``sudo_password``, else the environment
    variable ``WORKBENCH_SUDO_PASSWORD``; never a notebook parameter) travels on stdin,
    never on a command line; it is checked once, before the first command, and a wrong one
    raises :class:`~workbench.errors.SudoAuthFailure` (Invoke's ``AuthFailure``).
    """

    def __init__(
        self,
        alias: str,
        *,
        ssh_config: str | os.PathLike[str] | ConfigSet | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        sudo: bool = False,
        sudo_password: str | None = None,
    ) -> None:
        if not alias or alias.startswith("-") or any(c.isspace() for c in alias):
            raise ConfigError(f"not a valid host alias: {alias!r}")
        if sudo_password is not None:
            _check_sudo_password(sudo_password)
        self.name = alias
        self.properties: dict[str, Any] = {}
        self.fence: Fence | None = None  # set by a session: its commands fenced (workbench.inflight)
        # A path is read alone (``ssh -F``); a ConfigSet is used as given; None: OpenSSH's defaults.
        self.ssh_config_path = str(ssh_config) if ssh_config and not isinstance(ssh_config, ConfigSet) else None
        self._configs = ssh_config if isinstance(ssh_config, ConfigSet) else None
        self.connect_timeout = connect_timeout
        self.sudo = sudo
        self._sudo_password = sudo_password
        self._sudo_mode: str | None = None  # "root", "nopasswd" or "password", once checked
        self._lock = threading.RLock()
        self._conn: Any = None
        self._was_connected = False

    # -- connection ----------------------------------------------------
    def _connection(self) -> Any:
        import paramiko
        from fabric import Config, Connection

        with self._lock:
            if self._conn is not None and self._conn.is_connected:
                return self._conn
            self._drop()
            configs = self.configs()
            # One explicit SSHConfig, Includes inlined (paramiko's parser has no Include).
            config = Config(ssh_config=configs.paramiko())
            # Gateways are always passed explicitly: Fabric's own ProxyJump handling builds
            # multi-hop chains in reverse and recurses on wildcard ``Host *`` jump rules.
            conn = self._make(Connection, config, self.name, gateway=False)
            jump = str(conn.ssh_config.get("proxyjump", "")).strip()
            command = str(conn.ssh_config.get("proxycommand", "")).strip()
            if jump and jump.lower() != "none":
                # OpenSSH order: the first hop is dialled directly, each next one through the
                # one before, the target through the last.
                gateway: Any = False
                for hop in jump.split(","):
                    gateway = self._make(Connection, config, hop.strip(), gateway=gateway)
                conn = self._make(Connection, config, self.name, gateway=gateway)
            elif command and command.lower() != "none" and not jump:
                conn = self._make(Connection, config, self.name, gateway=command)
            try:
                conn.open()
            except paramiko.BadHostKeyException as exc:
                raise HostKeyError(
                    f"{self.name}: host key CHANGED ({exc.key.get_name()}); refusing to connect. "
                    "If the host was reinstalled, remove its old key from known_hosts.",
                    host=self.name,
                ) from exc
            except paramiko.SSHException as exc:
                if "not found in known_hosts" in str(exc):
                    raise HostKeyError(
                        f"{self.name}: host key unknown; refusing to connect. "
                        "Verify the key and add it to known_hosts (e.g. ssh-keyscan, checked out of band).",
                        host=self.name,
                    ) from exc
                raise ConnectError(f"{self.name}: SSH failed: {exc}", host=self.name) from exc
            except socket.gaierror as exc:
                if configs.knows(self.name):
                    raise ConnectError(f"{self.name}: cannot resolve its HostName: {exc}", host=self.name) from exc
                raise ConnectError(
                    f"{self.name}: unknown host: no Host entry names it in the ssh_config read "
                    f"({configs.describe()}) and the name does not resolve ({exc.strerror}). "
                    "Add a Host block to ~/.ssh/config, or pass --ssh-config / set WORKBENCH_SSH_CONFIG.",
                    host=self.name) from exc
            except (OSError, EOFError) as exc:
                if self._was_connected:  # it answered before: a stall, not a configuration problem
                    raise self.unresponsive("could not reconnect", self.connect_timeout) from exc
                raise ConnectError(f"{self.name}: cannot connect: {exc}", host=self.name) from exc
            conn.transport.set_keepalive(KEEPALIVE_S)
            self._conn = conn
            self._was_connected = True
            return conn

    def configs(self) -> ConfigSet:
        """The ssh_config files this host resolves its alias with (read once, at first use)."""
        if self._configs is None:
            self._configs = (ConfigSet.from_files([self.ssh_config_path]) if self.ssh_config_path
                             else ConfigSet.from_files(user_files(), required=False))
        return self._configs

    def _make(self, connection_cls: Any, config: Any, host: str, *, gateway: Any) -> Any:
        conn = connection_cls(host, config=config, connect_timeout=int(self.connect_timeout), gateway=gateway)
        conn.connect_kwargs.setdefault("look_for_keys", True)
        conn.connect_kwargs.setdefault("banner_timeout", self.connect_timeout)
        conn.connect_kwargs.setdefault("auth_timeout", self.connect_timeout)
        _harden(conn)
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            with signals.held, contextlib.suppress(Exception):
                self._conn.close()
        self._conn = None

    def _open_channel(self, timeout: float) -> Any:
        conn = self._connection()
        started = time.monotonic()
        try:
            return conn.transport.open_session(timeout=timeout)
        except Exception as exc:
            if self._answers(conn):  # a host too busy to open a session (or refusing one), not a dead link
                raise CommandTimeout(f"{self.name}: no SSH channel opened ({exc or type(exc).__name__}), though "
                                     "the connection answers (a busy host); kept", host=self.name) from exc
            with self._lock:
                self._drop()
            raise self.unresponsive("no SSH channel opened", time.monotonic() - started) from exc

    def _answers(self, conn: Any, timeout: float = PROBE_TIMEOUT) -> bool:
        """Whether the SSH connection itself still answers: a global request, which sshd replies to
        without starting a process, so a host too loaded to run a command still does, and a cut link
        does not.  The connection is dropped only when it does not: dropping one that carries the
        session's lock ends the lock, and the host's guard would take a live session over."""
        transport: Any = getattr(conn, "transport", None)
        answered: list[bool] = []
        done = threading.Event()

        def ask() -> None:
            try:  # paramiko's wait has no timeout: it ends when a reply (even a refusal) comes or the link dies
                transport.global_request("keepalive@openssh.com", wait=True)
                answered.append(bool(transport.is_active()))
            except Exception:
                answered.append(False)
            finally:
                done.set()

        threading.Thread(target=ask, daemon=True, name=f"ssh-probe-{self.name}").start()
        return done.wait(timeout) and answered == [True]

    def _not_started(self, exc: BaseException, waited: float) -> HostError:
        """A channel opened but its command did not start: sshd refused the request (a host out of
        processes: nothing ran, the connection is kept) or the link died (dropped)."""
        conn = self._conn
        if conn is not None and self._answers(conn):
            return CommandRefused(f"{self.name}: the host did not start the command ({exc or type(exc).__name__}: "
                                  "sshd refused it -- out of processes or memory?), though its SSH connection "
                                  "answers; kept", host=self.name)
        with self._lock:
            self._drop()
        return self.unresponsive("the SSH connection dropped", waited)

    def unresponsive(self, what: str, waited: float) -> HostUnresponsive:
        """The one error for a stall, whatever paramiko said ("No existing session", "Timeout
        opening channel.", "Channel closed."): what we waited for and how long."""
        return HostUnresponsive(f"{self.name}: host stopped answering ({what}; waited {waited:.0f} s)",
                                host=self.name, waited=waited)

    def alive(self, timeout: float = PROBE_TIMEOUT) -> bool:
        """Whether the host answers a trivial command within ``timeout``."""
        with signals.held:  # (bounded by ``timeout``)
            return self._alive(timeout)

    def _alive(self, timeout: float) -> bool:
        try:
            chan = self._open_channel(timeout)
        except HostError:
            return False
        try:
            chan.settimeout(timeout)
            chan.exec_command("true")
            deadline = time.monotonic() + timeout
            while not chan.exit_status_ready():
                if time.monotonic() > deadline:
                    return False
                select.select([chan], [], [], 0.2)
            return True
        except Exception:
            return False
        finally:
            close_channel(chan)

    # -- sudo ----------------------------------------------------------
    def _sudo_check(self) -> str:
        """How commands become root here: already root, passwordless sudo, or sudo with the
        password (checked now with ``sudo -k``, so a wrong one fails before any real command)."""
        with self._lock:
            if self._sudo_mode is not None:
                return self._sudo_mode
            who = self._plain("id -un; id -u", None)
            user, _, uid = who.stdout.strip().partition("\n")
            if who.exited == 0 and uid.strip() == "0":
                self._sudo_mode = "root"
                return self._sudo_mode
            probe = self._plain("sudo -n -- true", None)
            if probe.exited == 127:
                raise SudoAuthFailure(f"{self.name}: sudo is not installed; log in as root instead", host=self.name)
            if probe.exited == 0:
                self._sudo_mode = "nopasswd"
                return self._sudo_mode
            password = self._sudo_password if self._sudo_password is not None else os.environ.get(SUDO_PASSWORD_ENV)
            if "not in the sudoers" in probe.stderr or "may not run sudo" in probe.stderr:
                raise SudoAuthFailure(f"{self.name}: user {user!r} may not run sudo here", host=self.name)
            if not password:
                raise SudoAuthFailure(
                    f"{self.name}: sudo needs a password for {user!r}; set {SUDO_PASSWORD_ENV} in the environment",
                    host=self.name)
            _check_sudo_password(password)
            check = self._plain("sudo -k -S -p '' -- true", (password + "\n").encode())
            if check.exited != 0:
                why = "not allowed to run commands as root" if "not allowed" in check.stderr else "wrong password"
                raise SudoAuthFailure(f"{self.name}: sudo refused {user!r}: {why}", host=self.name)
            self._sudo_password = password
            self._sudo_mode = "password"
            return self._sudo_mode

    def _plain(self, cmd: str, data: bytes | None, timeout: float = 4 * PROBE_TIMEOUT) -> Result:
        return self._exec(shell.with_deadline(cmd, timeout), data, timeout, text=cmd)

    def _become(self, wrapped: str, data: bytes | None) -> tuple[str, bytes | None]:
        """``wrapped`` (a whole shell command line) run as root when ``sudo`` is on."""
        if not self.sudo or self._sudo_check() == "root":
            return wrapped, data
        if self._sudo_mode == "nopasswd":
            return shell.join(["sudo", "-n", "--", "sh", "-c", wrapped]), data
        # sudo -S reads the password a byte at a time up to the newline: the rest of stdin
        # (environment, input) reaches the command untouched.
        secret = (self._sudo_password or "").encode() + b"\n"
        return shell.join(["sudo", "-k", "-S", "-p", "", "--", "sh", "-c", wrapped]), secret + (data or b"")

    # -- commands ------------------------------------------------------
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
        wrapped, data = self._become(shell.with_deadline(self.fence.wrap(text) if self.fence else text, timeout),
                                     data)
        return self._exec(wrapped, data, timeout, check=check, text=shown)

    def _exec(self, wrapped: str, data: bytes | None, timeout: float, *, check: bool = False,
              text: str | None = None) -> Result:
        text = wrapped if text is None else text
        started = time.monotonic()
        deadline = started + timeout + GRACE_S
        out: list[bytes] = []
        err: list[bytes] = []
        chan = None
        try:  # each step held (a Ctrl-C is raised between paramiko's calls, never inside one)
            with signals.held:
                chan = self._open_channel(min(PROBE_TIMEOUT, timeout + GRACE_S))
                try:
                    chan.exec_command(wrapped)
                except Exception as exc:  # refused by sshd, or the transport died after the channel opened
                    raise self._not_started(exc, time.monotonic() - started) from exc
                if data:
                    threading.Thread(target=self._send_stdin, args=(chan, data), daemon=True).start()
                else:
                    chan.shutdown_write()
            while True:
                with signals.held:
                    step = self._read_step(chan, out, err, deadline)
                if step == "over":
                    break
                if step == "idle" and time.monotonic() >= deadline:
                    self._on_deadline(text, timeout)
            with signals.held:
                status = chan.recv_exit_status()
        finally:
            if chan is not None:
                close_channel(chan)
        result = Result(text, b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace"),
                        status, self.name, time.monotonic() - started)
        if status == shell.TIMEOUT_EXIT and time.monotonic() - started >= timeout:
            raise CommandTimeout(f"{self.name}: command ran past {timeout:.0f} s and was killed on the host: {clip(text, 200)}",
                                 host=self.name, result=result)
        return _check(result, check, self.fence)

    @staticmethod
    def _read_step(chan: Any, out: list[bytes], err: list[bytes], deadline: float) -> str:
        """Read what has come ("read"), or wait for more, at most half a second ("idle"); "over" once
        the command is over."""
        got = False
        if chan.recv_ready():
            out.append(chan.recv(65536))
            got = True
        if chan.recv_stderr_ready():
            err.append(chan.recv_stderr(65536))
            got = True
        if got:
            return "read"
        # Done only at EOF with both buffers drained: the exit status can arrive
        # before the last stderr packets.
        if (chan.eof_received or chan.closed) and chan.exit_status_ready() \
                and not chan.recv_ready() and not chan.recv_stderr_ready():
            return "over"
        if chan.closed and not chan.recv_ready() and not chan.recv_stderr_ready():
            return "over"
        left = deadline - time.monotonic()
        if left > 0:
            select.select([chan], [], [], min(left, 0.5))
        return "idle"

    @staticmethod
    def _send_stdin(chan: Any, data: bytes) -> None:
        with contextlib.suppress(Exception):
            chan.sendall(data)
            chan.shutdown_write()

    def _on_deadline(self, text: str, timeout: float) -> None:
        """The host's own deadline did not report back: tell a hung host from a slow command."""
        if self.alive():
            raise CommandTimeout(f"{self.name}: command ran past {timeout:.0f} s: {clip(text, 200)}", host=self.name)
        conn = self._conn
        if conn is not None and self._answers(conn):
            raise CommandTimeout(f"{self.name}: command ran past {timeout:.0f} s, and the host ran no probe command "
                                 f"either, though its SSH connection answers (a busy host); kept: {clip(text, 200)}",
                                 host=self.name)
        with self._lock:
            self._drop()
        raise self.unresponsive("no reply to a command, and a liveness probe failed",
                                timeout + GRACE_S + PROBE_TIMEOUT)

    def stream(self, cmd: Command, *, env: Mapping[str, str] | None = None, tether: bool = True) -> LineStream:
        text, data = _prepare(cmd, None, env)
        wrapped, data = self._become(shell.tethered(text) if tether else text, data)
        chan = None
        try:
            with signals.held:
                chan = self._open_channel(PROBE_TIMEOUT)
                chan.set_combine_stderr(True)
                chan.exec_command(wrapped)
                if data:
                    chan.sendall(data)
        except BaseException as exc:  # (a Ctrl-C held during the calls comes at the block's end)
            if chan is not None:
                close_channel(chan)
            if chan is None or not isinstance(exc, Exception):
                raise
            raise self._not_started(exc, 0.0) from exc

        def close() -> None:
            with signals.held:  # (both: a Ctrl-C between them would leave the channel open)
                with contextlib.suppress(Exception):
                    chan.shutdown_write()  # EOF on stdin: the tether kills the command on the host
                with contextlib.suppress(Exception):
                    close_channel(chan)

        def write(data: bytes) -> None:
            try:  # (not held: a full window can block it for as long as the far side does not read)
                chan.sendall(data)
            except Exception as exc:  # paramiko: socket.error or EOFError on a closed channel
                raise OSError(f"{self.name}: the stream's channel is closed") from exc

        stream = LineStream(close, self.name, write if not tether else None)

        def pump() -> None:
            buf = b""
            idle_since = time.monotonic()
            try:
                while True:
                    if chan.recv_ready():
                        chunk = chan.recv(65536)
                        if not chunk:
                            break
                        buf += chunk
                        *lines, buf = buf.split(b"\n")
                        for line in lines:
                            stream._feed(line.decode(errors="replace"))
                        idle_since = time.monotonic()
                        continue
                    if chan.closed or (chan.exit_status_ready() and not chan.recv_ready()):
                        break
                    select.select([chan], [], [], 1.0)
                    if time.monotonic() - idle_since > 4 * PROBE_TIMEOUT:
                        idle_since = time.monotonic()
                        # a busy host (no probe command ran, the connection answers) keeps the stream:
                        # ending it would end a lock held over it
                        conn = self._conn
                        if not self.alive() and not (conn is not None and self._answers(conn)):
                            raise self.unresponsive("a stream went silent, and a liveness probe failed",
                                                    4 * PROBE_TIMEOUT + PROBE_TIMEOUT)
                if buf:
                    stream._feed(buf.decode(errors="replace"))
                status = chan.recv_exit_status() if chan.exit_status_ready() else None
                stream._finish(status)
            except BaseException as exc:  # delivered to the consumer
                stream._finish(None, exc)
            finally:
                with contextlib.suppress(Exception):  # (EOFError: the connection is gone already)
                    close_channel(chan)

        threading.Thread(target=pump, daemon=True, name=f"stream-{self.name}").start()
        return stream

    def put(self, data: bytes, path: str, mode: int = 0o644) -> None:
        self.run(_put_command(path, mode), input=data, check=True)

    def get(self, path: str, *, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        import base64

        res = self.run(["base64", "-w0", path], timeout=timeout, check=True)
        return base64.b64decode(res.stdout)

    @contextlib.contextmanager
    def tunnel(self, remote_port: int) -> Iterator[int]:
        """Forward a free local port to ``127.0.0.1:remote_port`` on the host."""
        with signals.held:
            conn = self._connection()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        local_port = listener.getsockname()[1]
        stop = threading.Event()

        def pipe(a: Any, b: Any) -> None:
            try:
                while not stop.is_set():
                    r, _, _ = select.select([a, b], [], [], 0.5)
                    for src in r:
                        data = src.recv(65536)
                        if not data:
                            return
                        (b if src is a else a).sendall(data)
            except Exception:
                return
            finally:
                a.close()
                close_channel(b)

        def accept() -> None:
            while not stop.is_set():
                r, _, _ = select.select([listener], [], [], 0.5)
                if not r:
                    continue
                try:
                    client, addr = listener.accept()
                    chan = conn.transport.open_channel(
                        "direct-tcpip", ("127.0.0.1", remote_port), addr, timeout=PROBE_TIMEOUT
                    )
                except Exception:
                    with contextlib.suppress(Exception):
                        client.close()
                    continue
                threading.Thread(target=pipe, args=(client, chan), daemon=True).start()

        thread = threading.Thread(target=accept, daemon=True, name=f"tunnel-{self.name}")
        thread.start()
        try:
            yield local_port
        finally:
            stop.set()
            listener.close()
            thread.join(2)

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __repr__(self) -> str:
        return f"SSHHost({self.name!r}{', sudo=True' if self.sudo else ''})"
