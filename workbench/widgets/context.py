"""What every tab of the panel shares: the hosts, how to reach them, the settings, recent invocations.

Tabs take a :class:`PanelContext` in their constructor and reach hosts only
through it (``ctx.host()``, ``ctx.services()``, ``ctx.lock()``, ``ctx.session()``),
so a test builds one with fakes (``connect=``, ``services_for=``) and drives a
tab without a browser or a host.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.hosts import Host
from workbench.lock import HostLock
from workbench.services import Services
from workbench.services import services_for as default_services_for
from workbench.session import HostSession

CURRENT = "current"  # label of an invocation read from a unit's status, not started by the panel
_HOST_LINE = re.compile(r"^\s*Host\s+(.+?)\s*$", re.I | re.M)


def ssh_config_hosts(text: str) -> list[str]:
    """The concrete aliases of an ssh_config (``Host`` patterns with ``*``, ``?`` or ``!`` left out)."""
    out: list[str] = []
    for m in _HOST_LINE.finditer(text):
        for name in m.group(1).split():
            if not any(c in name for c in "*?!") and name not in out:
                out.append(name)
    return out


def discover_hosts(ssh_config: str | None) -> list[str]:
    """Hosts of the local testbed inventory, then the aliases of ``ssh_config`` (or ~/.ssh/config)."""
    from workbench.testbed.local import load_inventory

    names = list(load_inventory())
    path = Path(ssh_config) if ssh_config else Path.home() / ".ssh" / "config"
    if path.is_file():
        names += [n for n in ssh_config_hosts(path.read_text(errors="replace")) if n not in names]
    return names


@dataclass(frozen=True)
class Invocation:
    """One start of a unit on a host, as other tabs may want to read it."""

    host: str
    unit: str
    invocation: str
    label: str = ""

    @property
    def key(self) -> str:
        return f"{self.host}:{self.invocation}"

    def describe(self) -> str:
        return f"{self.host} {self.unit} {self.invocation[:8]}" + (f" — {self.label}" if self.label else "")


class PanelContext:
    """Hosts by name (one connection each), the chosen host, settings and the invocations seen."""

    def __init__(self, hosts: Sequence[str], *, connect: Callable[[str], Host],
                 services_for: Callable[[Host], Services] = default_services_for,
                 data_dir: str | Path = "data", lock_wait: float = 0.0, ready_timeout: float = 600.0) -> None:
        self.hosts = list(hosts)
        self.current = self.hosts[0] if self.hosts else ""
        self._connect = connect
        self._services_for = services_for
        self._hosts: dict[str, Host] = {}
        self._services: dict[str, Services] = {}
        self._mutex = threading.Lock()
        self.data_dir = Path(data_dir)
        self.lock_wait = lock_wait
        self.ready_timeout = ready_timeout
        self.invocations: list[Invocation] = []
        self._host_listeners: list[Callable[[str], None]] = []
        self._invocation_listeners: list[Callable[[Invocation], None]] = []

    # -- hosts ------------------------------------------------------------------
    def host(self, name: str | None = None) -> Host:
        name = name or self.current
        with self._mutex:
            if name not in self._hosts:
                self._hosts[name] = self._connect(name)
            return self._hosts[name]

    def services(self, name: str | None = None) -> Services:
        name = name or self.current
        host = self.host(name)
        with self._mutex:
            if name not in self._services:
                self._services[name] = self._services_for(host)
            return self._services[name]

    def lock(self, purpose: str, name: str | None = None) -> HostLock:
        """The host lock a session would take (held around start/stop so no session is disturbed)."""
        svc = self.services(name)
        return HostLock(svc.host, purpose=purpose, wait=self.lock_wait, lock_dir=svc.lock_dir)

    def session(self, purpose: str, name: str | None = None) -> HostSession:
        svc = self.services(name)
        return HostSession(svc.host, services=svc, purpose=purpose, lock_wait=self.lock_wait,
                           ready_timeout=self.ready_timeout)

    def select(self, name: str) -> None:
        if name != self.current:
            self.current = name
            for fn in list(self._host_listeners):
                fn(name)

    def on_host(self, fn: Callable[[str], None]) -> None:
        self._host_listeners.append(fn)

    # -- invocations ----------------------------------------------------------------
    def add_invocation(self, inv: Invocation) -> None:
        """Tell every tab about a start (a variant run, a unit's current invocation)."""
        if not inv.invocation or any(i.key == inv.key for i in self.invocations):
            return
        self.invocations.insert(0, inv)
        for fn in list(self._invocation_listeners):
            fn(inv)

    def on_invocation(self, fn: Callable[[Invocation], None]) -> None:
        self._invocation_listeners.append(fn)

    def invocation_options(self) -> list[tuple[str, str]]:
        return [(i.describe(), i.key) for i in self.invocations]

    def find_invocation(self, key: str) -> Invocation | None:
        return next((i for i in self.invocations if i.key == key), None)

    def close(self) -> None:
        for h in self._hosts.values():
            h.close()
        self._hosts.clear()
        self._services.clear()
