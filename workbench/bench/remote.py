"""Run the host client on the GPU host, next to the server, through the ``Host`` seam.

``run_on_host(host, spec)`` ships ``loadcore.py`` and ``hostclient.py`` (standard library only)
into a fresh temporary directory with ``Host.put``, runs them with the host's ``python3`` through
``Host.stream`` and reads the JSON-lines records as they arrive (one progress tick each). The
spec's URL is as seen from the host, e.g. ``http://127.0.0.1:30000``.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any, Protocol

from tqdm.auto import tqdm

from workbench.bench.loadcore import LoadSpec
from workbench.errors import HostError

_HERE = Path(__file__).parent
SHIPPED = ("loadcore.py", "hostclient.py")


class HostLike(Protocol):
    """The part of ``workbench.hosts.Host`` this module uses."""

    name: str

    def run(self, cmd: Any, *, timeout: float = 60, check: bool = False, input: str | None = None) -> Any: ...
    def stream(self, cmd: Any) -> Any: ...
    def put(self, data: bytes, path: str, mode: int = 0o644) -> None: ...


def ship(host: HostLike) -> str:
    """Copy the host client into a new temporary directory on ``host``; returns its path."""
    tmp = host.run(["mktemp", "-d", "/tmp/workbench-bench.XXXXXX"], check=True).stdout.strip()
    if not tmp.startswith("/tmp/workbench-bench."):
        raise HostError(f"mktemp on {host.name} printed {tmp!r}, not a directory", host=host.name)
    for name in SHIPPED:
        host.put((_HERE / name).read_bytes(), f"{tmp}/{name}")
    return tmp


def parse_lines(lines: Any, on_record: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any] | None, list[str]]:
    """Split the host client's output into records, the run line, and any other lines."""
    records: list[dict[str, Any]] = []
    run: dict[str, Any] | None = None
    other: list[str] = []
    for line in lines:
        text = line.strip()
        try:
            obj = json.loads(text) if text.startswith("{") else None
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            if text:
                other.append(text)
        elif obj.get("kind") == "run":
            run = obj
        elif obj.get("kind") == "request":
            records.append(obj)
            if on_record is not None:
                on_record(obj)
    return records, run, other


def run_on_host(host: HostLike, spec: LoadSpec, *, python: str = "python3",
                progress: bool = True) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run ``spec`` with the host client on ``host``; returns (records, run self-check).

    ``python`` is the interpreter command on the host (split like a shell would). Each request
    is bounded by ``spec.timeout_s``, so the run ends by itself.
    """
    status = None
    tmp = ship(host)
    try:
        # the spec may carry an API key in its headers: readable by this user only, removed below
        host.put(json.dumps(spec.to_dict()).encode(), f"{tmp}/spec.json", mode=0o600)
        bar = tqdm(total=spec.warmup + spec.num_requests, disable=not progress, unit="req",
                   desc=f"{host.name} c={spec.concurrency}" + (f" rate={spec.rate}/s" if spec.rate else ""))
        try:
            with host.stream([*shlex.split(python), f"{tmp}/hostclient.py", f"{tmp}/spec.json"]) as lines:
                records, run, other = parse_lines(lines, lambda _r: bar.update(1))
                status = getattr(lines, "exit_status", None)
        finally:
            bar.close()
    finally:
        host.run(["rm", "-rf", "--", tmp])
    if run is None:
        tail = "\n".join(other[-20:]) or "(no output)"
        raise HostError(f"the host client on {host.name} ended (exit status {status}) without its run line; "
                        f"its output:\n{tail}",
                        host=host.name)
    return records, run
