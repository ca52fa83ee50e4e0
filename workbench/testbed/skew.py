"""A testbed host whose clock runs off, for as long as a ``with`` block lasts.

The nspawn hosts share this machine's kernel clock and lack ``CAP_SYS_TIME`` (``date -s`` is
refused inside one), and a time namespace (``unshare --time``) shifts only CLOCK_MONOTONIC and
CLOCK_BOOTTIME, never CLOCK_REALTIME.  What is left is userland: Debian's ``libfaketime``
(``LD_PRELOAD``, ``FAKETIME=+S``) under the two things that stamp and report a host's time:

- **journald**: a runtime drop-in gives ``systemd-journald.service`` the preload and journald is
  restarted (its stdout streams live in PID 1's fd store and survive), so every line the journal
  records from then on carries the host's skewed receive time;
- **SSH sessions**: ``/etc/environment`` (read by ``pam_env`` for every new SSH connection) gets
  the same two variables, so ``date``, ``journalctl`` and Python over a *new* connection see the
  skewed clock, as on a host whose clock is off.  Connections already open keep the real clock.

Units started by PID 1 keep the real clock (their own printed timestamps), as do connections
opened before.  On the way out the drop-in and ``/etc/environment`` are put back and journald is
restarted again.  The library comes from this machine's ``libfaketime`` package (``apt-get
install libfaketime``); :func:`available` says whether it is there.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

from workbench.errors import ConfigError
from workbench.hosts import Host

LIBRARY = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
DROP_IN = "/run/systemd/system/systemd-journald.service.d/workbench-skew.conf"
ENVIRONMENT = "/etc/environment"


def available() -> bool:
    return Path(LIBRARY).is_file()


def _variables(seconds: float) -> list[str]:
    # FAKETIME "+S" shifts every clock call; monotonic clocks are left real (intervals stay true)
    return [f"LD_PRELOAD={LIBRARY}", f"FAKETIME={seconds:+.3f}", "FAKETIME_DONT_FAKE_MONOTONIC=1",
            "DONT_FAKE_MONOTONIC=1"]


@contextlib.contextmanager
def skewed_clock(host: Host, root: Path, seconds: float) -> Iterator[None]:
    """``host`` (a testbed host, ``root`` its file system on this machine) runs ``seconds`` ahead."""
    if not available():
        raise ConfigError(f"no {LIBRARY}: apt-get install libfaketime")
    if not seconds:
        raise ConfigError("a skew of 0 s is no skew")
    target = root / LIBRARY.lstrip("/")
    placed = not target.exists()
    if placed:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(LIBRARY, target)
    env_file = root / ENVIRONMENT.lstrip("/")
    saved = env_file.read_bytes() if env_file.exists() else None
    variables = _variables(seconds)
    try:
        host.put(("[Service]\n" + "".join(f"Environment={v}\n" for v in variables)).encode(), DROP_IN)
        host.run(["sh", "-c", "systemctl daemon-reload && systemctl restart systemd-journald"], check=True,
                 timeout=60)
        env_file.write_bytes((saved or b"") + "".join(f"{v}\n" for v in variables).encode())
        yield
    finally:
        if saved is None:
            env_file.unlink(missing_ok=True)
        else:
            env_file.write_bytes(saved)
        host.run(["sh", "-c", f"rm -f {shlex.quote(DROP_IN)} && rmdir --ignore-fail-on-non-empty "
                  f"{shlex.quote(str(Path(DROP_IN).parent))} && "
                  "systemctl daemon-reload && systemctl restart systemd-journald"], check=True, timeout=60)
        if placed:
            target.unlink(missing_ok=True)
