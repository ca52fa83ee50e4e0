"""The workload options ``workbench bench`` and the measuring runbooks share, turned into a ``LoadSpec``.

One implementation for both front ends (``workbench/cli/bench.py`` parses flags into it,
``workbench/runbooks/measure.py`` typed parameters): the request headers from the environment
(the API key and ``NAME=ENVVAR`` headers: values are never taken from a command line or a
parameter, and never written; :func:`secret_envs` names the variables a redactor must learn),
goodput SLOs, and the base ``LoadSpec`` with its dataset read here, on the controller — the
items travel inside the spec (``spec.json`` on the host, mode 0600, removed after the run),
so a load run on the GPU host needs no copy of the file there.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.bench.loadcore import LoadSpec
from workbench.bench.metrics import SLO
from workbench.bench.workloads import load_workload
from workbench.errors import ConfigError

API_KEY_ENVS = ("WORKBENCH_API_KEY", "OPENAI_API_KEY")  # tried in order when no variable is named
DURATION_CAP = 1_000_000  # measured requests a duration-bounded run may start at most
DATASET_ITEMS_MAX = 10_000  # dataset items shipped for a duration-bounded run (cycled)
GOODPUT_KEYS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "e2el": "e2e_ms", "e2e": "e2e_ms"}


def _parse_header(item: str, what: str) -> tuple[str, str]:
    name, sep, var = item.partition("=")
    if not sep or not name.strip() or not var:
        raise ConfigError(f"{what} takes NAME=ENVVAR (the value is read from the environment), not {item!r}")
    return name.strip(), var


def request_headers(api_key_env: str | None, header_items: Sequence[str],
                    environ: Mapping[str, str] | os._Environ[str] = os.environ, *,
                    what: tuple[str, str] = ("--api-key-env", "--header")) -> dict[str, str]:
    """Headers from the environment: ``Authorization: Bearer $KEY`` (the variable ``api_key_env``
    names, else the first of :data:`API_KEY_ENVS` that is set) and each ``NAME=ENVVAR``.
    ``what``: how the two options are called in messages."""
    headers = {}
    if api_key_env:
        if not environ.get(api_key_env):
            raise ConfigError(f"{what[0]} {api_key_env}: that environment variable is not set")
        headers["Authorization"] = f"Bearer {environ[api_key_env]}"
    else:
        for var in API_KEY_ENVS:
            if environ.get(var):
                headers["Authorization"] = f"Bearer {environ[var]}"
                break
    for item in header_items:
        name, var = _parse_header(item, what[1])
        if var not in environ:
            raise ConfigError(f"{what[1]} {name}: environment variable {var} is not set")
        if any(c in name + environ[var] for c in "\r\n"):
            raise ConfigError(f"{what[1]} {name}: a header name or value cannot hold a line break")
        headers[name] = environ[var]
    return headers


def secret_envs(api_key_env: str | None, header_items: Sequence[str]) -> list[str]:
    """The environment variables whose values :func:`request_headers` sends: what a redactor learns."""
    names = [api_key_env] if api_key_env else list(API_KEY_ENVS)
    for item in header_items:
        _name, sep, var = str(item).partition("=")
        if sep and var:
            names.append(var)
    return names


def goodput_slo(bounds: Mapping[str, float], what: str = "--goodput") -> SLO | None:
    """``{"ttft": 2000, "tpot": 50}`` (ms) -> ``SLO(ttft_ms=2000, tpot_ms=50)``; empty -> None."""
    if not bounds:
        return None
    out: dict[str, float] = {}
    for key, value in bounds.items():
        if key.lower() not in GOODPUT_KEYS:
            raise ConfigError(f"{what} takes ttft, tpot or e2el bounds (ms), not {key!r}")
        try:
            ms = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{what} {key}: the bound must be milliseconds, not {value!r}") from None
        if not ms > 0:
            raise ConfigError(f"{what} {key}: the bound must be > 0 ms")
        out[GOODPUT_KEYS[key.lower()]] = ms
    return SLO(**out)


def dataset_items(path: str, *, count: int | None = None, fmt: str = "auto", chat: bool = False,
                  output_len: int | None = None) -> list[dict[str, Any]]:
    """:func:`~workbench.bench.workloads.load_workload`'s items, the file parsed once per content (a
    ShareGPT file is hundreds of MB; a sweep builds a spec per configuration, validation reads it first)."""
    try:
        st = Path(path).stat()
    except OSError:
        return load_workload(path, count=count, fmt=fmt, chat=chat, output_len=output_len)  # its own error
    items = _parsed(str(path), st.st_mtime_ns, st.st_size, fmt, chat, output_len)
    return list(items[:count] if count else items)


@functools.lru_cache(maxsize=2)
def _parsed(path: str, _mtime_ns: int, _size: int, fmt: str, chat: bool,
            output_len: int | None) -> tuple[dict[str, Any], ...]:
    return tuple(load_workload(path, fmt=fmt, chat=chat, output_len=output_len))


@dataclass(frozen=True)
class Workload:
    """What each request is and how the points are bounded (everything but the URL and the ladder)."""

    api: str = "completions"
    model: str = ""
    input_len: int = 128
    output_len: int = 128
    num_requests: int | None = None  # measured requests per point (at least); None: 32, or the cap of a duration run
    requests_per_concurrency: int = 0  # closed loop: at least this x concurrency measured requests
    warmup: int = 2
    ignore_eos: bool = True
    max_concurrency: int | None = None  # rate ladder: cap on requests in flight
    burstiness: float = 1.0
    duration_s: float | None = None
    range_ratio: float = 0.0
    prefix_len: int = 0
    prefix_groups: int = 0
    dataset: str = ""  # a file on the controller
    dataset_format: str = "auto"
    dataset_output_len: int | None = None
    flush_cache: bool = False

    def per_concurrency(self, rates: Sequence[float]) -> int | None:
        """``run_sweep``'s requests_per_concurrency: none for a rate ladder or a duration-bounded run."""
        return None if rates or self.duration_s else (self.requests_per_concurrency or None)

    def spec(self, url: str, *, rates: Sequence[float] = (), concurrencies: Sequence[int] = (),
             headers: Mapping[str, str] | None = None) -> LoadSpec:
        """The base ``LoadSpec`` of a sweep (``run_sweep`` sets each point's concurrency or rate)."""
        num = self.num_requests or (DURATION_CAP if self.duration_s else 32)
        dataset: list[dict[str, Any]] = []
        if self.dataset:
            need = self.warmup + max(num, (self.per_concurrency(rates) or 0) * max(concurrencies or [1]))
            dataset = dataset_items(self.dataset, count=min(need, DATASET_ITEMS_MAX), fmt=self.dataset_format,
                                    chat=self.api == "chat", output_len=self.dataset_output_len)
        try:
            return LoadSpec(url=url, model=self.model, api=self.api, input_len=self.input_len,
                            output_len=self.output_len, num_requests=num, warmup=self.warmup,
                            ignore_eos=self.ignore_eos, concurrency=self.max_concurrency if rates else 1,
                            rate=rates[0] if rates else None, burstiness=self.burstiness,
                            duration_s=self.duration_s, range_ratio=self.range_ratio, prefix_len=self.prefix_len,
                            prefix_groups=self.prefix_groups, dataset=dataset, flush_cache=self.flush_cache,
                            headers=dict(headers or {}))
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
