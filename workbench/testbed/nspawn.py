"""Boot and stop one testbed host with ``systemd-nspawn`` (the thin part that touches the machine).

The host's tree is an overlay of the cached root filesystem (read-only lower
layer) and a per-host upper layer, so hosts never share state and ``up`` copies
nothing.  Readiness is event-driven: nspawn runs with ``--notify-ready=yes``
and tells us ``READY=1`` on a private notify socket once the host's systemd has
finished booting.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from workbench.errors import WorkbenchError


def run(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise WorkbenchError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def mount_overlay(lower: Path, upper: Path, work: Path, merged: Path) -> None:
    for d in (upper, work, merged):
        d.mkdir(parents=True, exist_ok=True)
    if os.path.ismount(merged):
        return
    run(["mount", "-t", "overlay", "overlay", "-o",
         f"lowerdir={lower},upperdir={upper},workdir={work}", str(merged)])


def umount(path: Path) -> None:
    if os.path.ismount(path):
        if run(["umount", str(path)], check=False).returncode != 0:
            run(["umount", "-l", str(path)], check=False)


def nspawn_argv(name: str, root: Path, netns: str, binds: list[tuple[str, str]],
                extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    argv = [
        "systemd-nspawn",
        "--boot",
        f"--directory={root}",
        f"--machine={name}",
        "--keep-unit",
        "--register=no",
        f"--network-namespace-path=/run/netns/{netns}",
        "--notify-ready=yes",
        "--console=passive",
        "--resolv-conf=off",
        "--timezone=off",
        "--link-journal=no",
    ]
    for src, dst in binds:
        argv.append(f"--bind-ro={src}:{dst}")
    return argv + list(extra)


def boot(argv: list[str], log: Path, *, timeout: float = 120.0, env: dict[str, str] | None = None) -> int:
    """Start nspawn in its own session (``env``: nspawn's own settings, added to ours); return its
    PID once the host reports READY=1."""
    sockdir = Path(tempfile.mkdtemp(prefix="wb-notify-"))
    sockpath = sockdir / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(sockpath))
    env = dict(os.environ, **(env or {}), NOTIFY_SOCKET=str(sockpath))
    try:
        with open(log, "ab") as fh:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                stop(proc.pid, argv_marker=str(argv[2]))
                raise WorkbenchError(f"host did not finish booting within {timeout:.0f} s; see {log}")
            sock.settimeout(min(left, 0.5))
            try:
                msg = sock.recv(4096).decode(errors="replace")
            except TimeoutError:
                if proc.poll() is not None:
                    tail = log.read_text(errors="replace").splitlines()[-20:]
                    raise WorkbenchError(f"systemd-nspawn exited ({proc.returncode}) while booting:\n" + "\n".join(tail)) from None
                continue
            if "READY=1" in msg.split("\n"):
                return proc.pid
    finally:
        sock.close()
        with contextlib.suppress(OSError):
            sockpath.unlink()
            sockdir.rmdir()


def is_ours(pid: int, argv_marker: str) -> bool:
    """Whether ``pid`` is still the nspawn we started (and not a recycled PID)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(cmdline) and cmdline[0].endswith(b"systemd-nspawn") and argv_marker.encode() in cmdline


def stop(pid: int, *, argv_marker: str, timeout: float = 30.0) -> bool:
    """Power the host off (SIGTERM makes nspawn halt the container cleanly), SIGKILL past ``timeout``."""
    if not is_ours(pid, argv_marker):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)  # polling a process we do not parent; no event to wait on
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    return True


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
