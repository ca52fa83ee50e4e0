"""The interface every service backend offers, and the helpers they share."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from workbench import gpus
from workbench.errors import ConfigError
from workbench.hosts import Host, LineStream
from workbench.journal import Entry
from workbench.journal.frame import JournalFrame
from workbench.systemd import UnitStatus, normalize_unit, valid_unit
from workbench.unitfile import UnitFile, split_command
from workbench.variants import Variant


@dataclass
class ServiceInfo:
    """One row of a host's inventory."""

    status: UnitStatus
    argv: list[str] = field(default_factory=list)
    gpus: list[int] = field(default_factory=list)
    backend: str = ""  # the kind of the backend that runs it: systemd, process or container
    image: str = ""  # containers: the image they run

    def row(self) -> dict[str, object]:
        s = self.status
        return {"unit": s.unit, "backend": self.backend, **({"image": self.image} if self.image else {}), "load": s.load_state, "active": s.active_state, "sub": s.sub_state,
                "result": s.result, "exit_status": s.exit_status, "restarts": s.n_restarts,
                "invocation": s.invocation_id, "main_pid": s.main_pid, "gpus": self.gpus,
                "command": shlex.join(self.argv) if self.argv else ""}


DEFAULT_PORTS = {"sglang": 30000, "vllm": 8000}


def server_port(argv: list[str]) -> int:
    """The port a server listens on, from its command line (``--port N`` / ``--port=N``)."""
    for i, tok in enumerate(argv):
        if tok == "--port" and i + 1 < len(argv):
            return int(argv[i + 1])
        if tok.startswith("--port="):
            return int(tok.split("=", 1)[1])
    return DEFAULT_PORTS["vllm"] if any("vllm" in a for a in argv[:4]) else DEFAULT_PORTS["sglang"]


SERVER_MARKS = (  # (engine, what its command line holds): the module, entry point or CLI that serves
    ("sglang", ("sglang.launch_server", "sglang.srt.", "sglang serve")),
    ("vllm", ("vllm.entrypoints", "vllm serve")),
    ("trtllm", ("trtllm-serve", "tensorrt_llm.serve")),
    ("lmdeploy", ("lmdeploy serve", "lmdeploy.serve")),
)


def server_engine(argv: list[str]) -> str:
    """The inference engine a command line serves (``sglang``, ``vllm``, ``trtllm``, ``lmdeploy``),
    or '' for anything else; an image's path or a ``podman run`` in front of it does not matter."""
    words = [a.rsplit("/", 1)[-1] if a.startswith("/") else a for a in argv]
    line = " ".join(words)
    return next((engine for engine, marks in SERVER_MARKS if any(m in line for m in marks)), "")


def file_digests(host: Host, st: UnitStatus) -> dict[str, str]:
    """sha256 of ``st``'s unit file and drop-ins, by path."""
    paths = [p for p in (st.fragment_path, *st.drop_in_paths) if p]
    if not paths:
        return {}
    res = host.run(["sha256sum", "--", *paths], timeout=30, check=True)
    out = {}
    for line in res.stdout.splitlines():
        digest, _, path = line.partition("  ")
        out[path] = digest
    return out


class Services(Protocol):
    """Everything that differs per deployment kind; outside the backends nothing asks the kind
    (``kind`` is for display: the backend column of ``status``)."""

    host: Host
    kind: str
    state_dir: str  # where sessions keep their record on this host
    lock_dir: str  # where the host lock lives

    def status(self, unit: str) -> UnitStatus: ...

    def statuses(self, units: list[str]) -> list[UnitStatus]: ...

    def units(self, pattern: str = "*") -> list[str]: ...

    def unit_text(self, unit: str) -> str: ...

    def start(self, unit: str) -> UnitStatus: ...

    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus: ...

    def restart(self, unit: str) -> UnitStatus: ...

    def stop_if_running(self, unit: str) -> bool: ...

    def reset(self, unit: str) -> None: ...

    def install_variant(self, variant: Variant) -> bool: ...

    def remove_variant(self, name: str) -> bool: ...

    # Whether a variant's journal reads the same while remove_variant runs (a read may overlap it).
    def journal_outlives_removal(self, name: str) -> bool: ...

    def variant_files(self) -> dict[str, str]: ...

    def cursor(self) -> str: ...

    def follow(self, unit: str, cursor: str) -> LineStream: ...

    def parse_entry(self, line: str, unit: str) -> Entry | None: ...

    # The journal source (workbench.journal.read asks these; the text of an invocation for the
    # traceback analysis is journal.read.invocation_text, from journal_read's frame).
    def journal_invocations(self, unit: str, n: int | None = None, *, timeout: float = 120.0) -> pd.DataFrame: ...

    def journal_read(self, unit: str, *, invocation: str | int | None = None, last_invocations: int | None = None,
                     since: Any = None, until: Any = None, timeout: float = 600.0, compress: bool = True,
                     jobs: int | None = None, text: bool = True) -> JournalFrame: ...

    def journal_since(self, unit: str, cursor: str, *, invocation: str | None = None, timeout: float = 600.0,
                      compress: bool = True) -> tuple[JournalFrame, str]: ...

    def tail_entries(self, unit: str = "", invocation: str = "", lines: int = 500) -> list[Entry]: ...

    # The server: the host port that reaches it (from its command line ``argv``), GPU holders
    # named by unit, and the exact commands a variant run issues (from the builders that run them).
    def host_port(self, unit: str, argv: list[str]) -> int: ...

    def attribute_gpus(self, inv: gpus.GpuInventory, units: list[str]) -> gpus.GpuInventory: ...

    # What the unit's definition is now, as "where -> digest" (the record keeps it; a change since is
    # the operator's to judge, never guessed): unit files' sha256 (systemd, process), a container's
    # id under ``container:RUNTIME:NAME`` (the host guard checks both kinds the same way).
    def definition(self, st: UnitStatus) -> dict[str, str]: ...

    # The processes the running unit's server (command line ``argv``) descends from: its main
    # process; a container's own init where the unit runs one.  The watch takes a health answer
    # as the start's own only from a listener below one of them.  Empty: not known, not judged.
    def server_roots(self, unit: str, st: UnitStatus, argv: list[str]) -> set[int]: ...

    def plan(self, variant: Variant) -> tuple[str, list[str]]: ...

    # The commands a restore runs, as argv: the session's restore runs them over the host seam,
    # the guard (:mod:`workbench.hostguard`) runs the same ones on the host.  Each is idempotent.
    def remove_variant_argv(self, name: str) -> list[str]: ...

    def start_argv(self, unit: str) -> list[str]: ...  # start unless running; returns at once

    def stop_argv(self, unit: str) -> list[str]: ...

    def running_argv(self, unit: str) -> list[str]: ...  # exits 0 while the unit runs

    # The guard, started natively (a transient unit, a detached process, ...).
    def guard_start_argv(self, name: str, argv: list[str]) -> list[str]: ...

    def guard_stop_argv(self, name: str) -> list[str]: ...

    def guard_alive_argv(self, name: str) -> list[str]: ...

    # ``argv`` run so that what it leaves running (a container's monitor) lives outside the
    # caller's own group: the guard's end must not take down the base it restarted.
    def outlive_argv(self, argv: list[str]) -> list[str]: ...


class DetachedGuard:
    """The guard as a detached process in its own session (hosts without systemd): its PID in
    ``state_dir/NAME.pid``, its output in ``state_dir/NAME.log``; stopped only if that PID is still
    the guard (``hostguard`` in its command line).  Its children outlive it (it is stopped by its
    PID alone), so nothing it starts needs a group of its own.  Also the stop-then-start of
    backends with no restart of their own."""

    state_dir: str

    def guard_start_argv(self, name: str, argv: list[str]) -> list[str]:
        return ["sh", "-c", 'log=$1; pidf=$2; shift 2; setsid "$@" </dev/null >>"$log" 2>&1 & echo $! >"$pidf"',
                "guard", f"{self.state_dir}/{name}.log", f"{self.state_dir}/{name}.pid", *argv]

    def guard_stop_argv(self, name: str) -> list[str]:
        return ["sh", "-c", 'p=$(cat "$1" 2>/dev/null) && grep -q hostguard "/proc/$p/cmdline" 2>/dev/null '
                '&& kill -TERM "$p"; rm -f -- "$1"; true', "disarm", f"{self.state_dir}/{name}.pid"]

    def guard_alive_argv(self, name: str) -> list[str]:
        return ["sh", "-c", 'p=$(cat "$1" 2>/dev/null) && grep -q hostguard "/proc/$p/cmdline"', "alive",
                f"{self.state_dir}/{name}.pid"]

    def outlive_argv(self, argv: list[str]) -> list[str]:
        return argv

    # stop then start, for backends with no restart of their own (they define these three)
    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus:
        raise NotImplementedError

    def start(self, unit: str) -> UnitStatus:
        raise NotImplementedError

    def status(self, unit: str) -> UnitStatus:
        raise NotImplementedError

    def restart(self, unit: str) -> UnitStatus:
        self.stop(unit)
        return self.start(unit)

    def stop_if_running(self, unit: str) -> bool:
        if not self.status(unit).running:
            return False
        self.stop(unit)
        return True


def exec_argv(unit_text: str, unit: str = "unit") -> list[str]:
    """The argv of a unit's single ``ExecStart=``."""
    execs = UnitFile.parse(unit_text, source=unit).get_all("Service", "ExecStart")
    if len(execs) != 1:
        raise ConfigError(f"{unit}: expected exactly one ExecStart=, found {len(execs)}")
    return split_command(execs[0])[1]


def _check_unit(unit: str) -> str:
    unit = normalize_unit(unit)
    if not valid_unit(unit):
        raise ConfigError(f"not a valid unit name: {unit!r}")
    return unit


