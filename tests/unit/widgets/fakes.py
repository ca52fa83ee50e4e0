"""Fakes at our own seams (Host.run, Services, the lock, the session), fed with real captured output."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from workbench.errors import CommandFailed
from workbench.hosts import LineStream, Result
from workbench.journal import parse_json_entry
from workbench.journal.frame import RAW_FIELDS, JournalFrame, build_frame
from workbench.services import SystemdServices
from workbench.systemd import UnitStatus, parse_show
from workbench.widgets.context import PanelContext

FIXTURES = Path(__file__).parents[2] / "fixtures"
SHOW = (FIXTURES / "systemd" / "show_three_units.txt").read_text()
JOURNAL = (FIXTURES / "widgets" / "journal_ep8_invocation.jsonl").read_text()
EP8_LOG = (FIXTURES / "widgets" / "ep8_invocation.log").read_text()
EP8_INVOCATION = "934b65d4857e4eb39d9aaf3392d5d2b2"
BASE = "sglang-k26-ddtree.service"
UNIT_TEXT = """[Service]
ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /models/Kimi-K2.6 --port 30000 --tp-size 8
"""


class FakeHost:
    """Answers the few commands the panel sends itself: the lock probe and nvidia-smi (missing here)."""

    def __init__(self, name: str = "gpu-b", *, lock: str = "free") -> None:
        self.name = name
        self.lock = lock
        self.commands: list[Any] = []

    def run(self, cmd: Any, **kw: Any) -> Result:
        self.commands.append(cmd)
        text = " ".join(cmd) if isinstance(cmd, list) else cmd
        if "/proc/locks" in text:
            return Result(text, f"{self.lock}\n", "", 0, self.name)
        if text.startswith("cat -- ") and "owner.json" in text:
            if self.lock == "held":
                return Result(text, '{"user": "alice", "purpose": "bisect"}', "", 0, self.name)
            return Result(text, "", "no such file", 1, self.name)
        if "nvidia-smi" in text:
            return Result(text, "", "nvidia-smi: not found", 127, self.name)
        if text.startswith("journalctl"):
            return Result(text, JOURNAL, "", 0, self.name)
        raise AssertionError(f"unexpected command: {text}")

    def close(self) -> None:
        pass

    @contextlib.contextmanager
    def tunnel(self, remote_port: int) -> Iterator[int]:
        """A local port that reaches ``remote_port`` (here: the same number, as on LocalHost)."""
        self.commands.append(f"tunnel {remote_port}")
        yield remote_port


def statuses() -> dict[str, UnitStatus]:
    out = {}
    for block in parse_show(SHOW):
        st = UnitStatus.from_show(block)
        out[st.unit] = st
    return out


class FakeServices:
    """A systemd backend whose units are the captured ``systemctl show`` blocks; records its calls."""

    kind = "systemd"
    state_dir = "/run/workbench"
    lock_dir = "/run/lock"

    def __init__(self, host: FakeHost) -> None:
        self.host = host
        self.units_ = statuses()
        self.calls: list[tuple[str, str]] = []
        self.follow_lines: list[str] = []
        self.follow_ends = False

    def units(self, pattern: str = "*") -> list[str]:
        import fnmatch

        found = sorted(u for u in self.units_ if fnmatch.fnmatch(u, pattern))
        if not found:  # as SystemdServices.units: `systemctl list-unit-files PATTERN` exits 1 on no match
            raise CommandFailed("command exited 1", host=self.host.name,
                                result=Result("systemctl list-unit-files", "", "", 1, self.host.name))
        return found

    def statuses(self, units: list[str]) -> list[UnitStatus]:
        return [self.units_[u] for u in units]

    def status(self, unit: str) -> UnitStatus:
        return self.units_[unit]

    def unit_text(self, unit: str) -> str:
        return UNIT_TEXT

    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus:
        self.calls.append(("stop", unit))
        return self.units_[unit]

    def start(self, unit: str) -> UnitStatus:
        self.calls.append(("start", unit))
        return self.units_[unit]

    # The systemd backend's own reader, over the fake host's captured journalctl output.
    tail_entries = SystemdServices.tail_entries
    attribute_gpus = SystemdServices.attribute_gpus

    def journal_read(self, unit: str, *, invocation: str | int | None = None, **_: Any) -> JournalFrame:
        """One invocation's lines as the systemd backend frames them (what invocation_text reads)."""
        self.calls.append(("invocation_text", str(invocation)))
        text = EP8_LOG if invocation == EP8_INVOCATION else "all good\n"
        lines = text.splitlines()
        n = len(lines)
        cols: dict[str, list[Any]] = {k: [None] * n for k in RAW_FIELDS}
        cols.update(usec=list(range(1, n + 1)), message=lines, unit=[unit] * n, invocation=[str(invocation)] * n,
                    origin=["unit"] * n)
        return build_frame(pa.table({k: pa.array(v, RAW_FIELDS[k]) for k, v in cols.items()}), unit=unit)

    def cursor(self) -> str:
        return "s=0"

    def follow(self, unit: str, cursor: str) -> LineStream:
        stream = LineStream(lambda: None, self.host.name)
        for line in self.follow_lines:
            stream._feed(line)
        if self.follow_ends:
            stream._finish(0)
        return stream

    def parse_entry(self, line: str, unit: str) -> Any:
        return parse_json_entry(line)


class FakeLock:
    def __init__(self, log: list[str], purpose: str) -> None:
        self.log, self.purpose = log, purpose

    def __enter__(self) -> FakeLock:
        self.log.append(f"lock {self.purpose}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.log.append("unlock")


class FakeContext(PanelContext):
    """A panel context on fake hosts; ``session_factory`` supplies what ``session()`` returns."""

    def __init__(self, tmp: Path, *, lock: str = "free", session_factory: Any = None) -> None:
        self.fake_hosts: dict[str, FakeHost] = {}
        self.fake_services: dict[str, FakeServices] = {}
        self.events: list[str] = []
        self.session_factory = session_factory

        def connect(name: str) -> Any:
            self.fake_hosts[name] = FakeHost(name, lock=lock)
            return self.fake_hosts[name]

        def services_for(host: Any) -> Any:
            self.fake_services[host.name] = FakeServices(host)
            return self.fake_services[host.name]

        super().__init__(["gpu-a", "gpu-b"], connect=connect, services_for=services_for, data_dir=tmp)

    def lock(self, purpose: str, name: str | None = None) -> Any:
        from workbench.lock import HostLock

        if purpose == "status":  # owner()/path only: the real object over the fake host
            return HostLock(self.host(name))
        return FakeLock(self.events, purpose)

    def session(self, purpose: str, name: str | None = None) -> Any:
        assert self.session_factory is not None, "this test gives no session"
        return self.session_factory(self, purpose)
