"""The inventory: which hosts there are, how to reach each, which backends it has, and groups.

Entries come from two files, both optional:

- the user's ``$WORKBENCH_INVENTORY`` (default ``~/.config/workbench/inventory.toml``)::

      [groups]
      prod = ["h100-[1-4]", "gpu-c"]
      [hosts.h100-1]
      backends = ["container"]

- the running testbed's ``hosts.json`` (written by ``workbench testbed up``, removed by
  ``down``; the testbed writes, the hosts read: nothing here imports the testbed).

An SSH alias needs no entry: ssh_config is where aliases live.  :func:`ssh_configs`
gives the precedence: an explicit ``--ssh-config``/``$WORKBENCH_SSH_CONFIG`` alone, else
the testbed's ssh_config **and** the user's ``~/.ssh/config`` (``Include`` honoured) and
the system file.  :func:`expand_hosts` turns ``gpu-[a-d]``, ``node[01-12]``, a named group
(``prod`` or ``@prod``) and comma lists into host names, wherever a host list is accepted.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.sshconfig import ConfigSet, user_files

ENV_SSH_CONFIG = "WORKBENCH_SSH_CONFIG"
ENV_INVENTORY = "WORKBENCH_INVENTORY"
TESTBED_FILE = "hosts.json"
# The local testbed's older file: earlier trees read every host in it as a *local* host, so the
# nspawn testbed must never write it; read only when ``hosts.json`` is absent.
LEGACY_FILE = "inventory.json"
TRANSPORTS = ("ssh", "local")


def cache_dir() -> Path:
    """``$WORKBENCH_CACHE``, else ``$XDG_CACHE_HOME/workbench``, else ``~/.cache/workbench``."""
    env = os.environ.get("WORKBENCH_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "workbench"


def testbed_dir() -> Path:
    """Where a running testbed keeps its state (``$WORKBENCH_TESTBED_DIR``, else the cache's ``testbed``)."""
    env = os.environ.get("WORKBENCH_TESTBED_DIR")
    return Path(env) if env else cache_dir() / "testbed"


def testbed_file() -> Path:
    return testbed_dir() / TESTBED_FILE


def user_file() -> Path:
    env = os.environ.get(ENV_INVENTORY)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "workbench" / "inventory.toml"


@dataclass(frozen=True)
class HostEntry:
    """One host of the inventory."""

    name: str
    transport: str = "ssh"  # "ssh": an ssh_config alias; "local": a directory on this machine
    ssh_config: str | None = None  # the file that defines the alias (testbed entries)
    backends: tuple[str, ...] = ()  # service backends known to be there; empty: detect
    properties: dict[str, Any] = field(default_factory=dict)
    source: str = ""


@dataclass
class Inventory:
    hosts: dict[str, HostEntry] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def get(self, name: str) -> HostEntry | None:
        return self.hosts.get(name)

    def expand(self, spec: str | Sequence[str]) -> list[str]:
        return expand_hosts(spec, self)


def _entry(name: str, raw: Mapping[str, Any], source: str, ssh_config: str | None) -> HostEntry:
    transport = str(raw.get("transport", "local" if raw.get("backend") == "local" else "ssh"))
    if transport not in TRANSPORTS:
        raise ConfigError(f"{source}: host {name}: transport must be one of {TRANSPORTS}, not {transport!r}")
    backends = raw.get("backends", ())
    if not isinstance(backends, list | tuple) or not all(isinstance(b, str) for b in backends):
        raise ConfigError(f"{source}: host {name}: backends must be a list of names")
    props = {k: v for k, v in raw.items() if k not in ("transport", "backends", "ssh_config")}
    return HostEntry(name, transport, raw.get("ssh_config") or ssh_config, tuple(backends), props, source)


def _merge(inv: Inventory, data: Mapping[str, Any], source: str) -> None:
    hosts = data.get("hosts", {})
    groups = data.get("groups", {})
    if not isinstance(hosts, Mapping) or not isinstance(groups, Mapping):
        raise ConfigError(f"{source}: 'hosts' and 'groups' must be tables")
    ssh_config = data.get("ssh_config")
    for name, raw in hosts.items():
        if name not in inv.hosts:  # the first source wins
            inv.hosts[name] = _entry(name, raw if isinstance(raw, Mapping) else {}, source, ssh_config)
    for name, members in groups.items():
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise ConfigError(f"{source}: group {name} must be a list of host names or patterns")
        inv.groups.setdefault(name, list(members))
    inv.sources.append(source)


def load(*, user: Path | None = None, testbed: Path | None = None) -> Inventory:
    """The inventory from the user's file, then the testbed's (missing files are empty)."""
    inv = Inventory()
    u = user or user_file()
    if u.is_file():
        try:
            data = tomllib.loads(u.read_text()) if u.suffix == ".toml" else json.loads(u.read_text())
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"inventory {u} is not valid: {exc}") from exc
        _merge(inv, data, str(u))
    t = testbed or testbed_file()
    if testbed is None and not t.exists():
        t = testbed_dir() / LEGACY_FILE
    try:
        data = json.loads(t.read_text())
    except OSError:
        data = None
    except ValueError as exc:
        raise ConfigError(f"testbed inventory {t} is not valid JSON: {exc}") from exc
    if data:
        _merge(inv, data, str(t))
    return inv


def write_entries(path: Path, *, hosts: Mapping[str, Mapping[str, Any]], source: str,
                  ssh_config: str | None = None, groups: Mapping[str, list[str]] | None = None,
                  extra: Mapping[str, Any] | None = None) -> None:
    """Write an inventory file atomically (the testbed's way of announcing its hosts)."""
    data: dict[str, Any] = {"source": source, **(extra or {}), "hosts": {k: dict(v) for k, v in hosts.items()},
                            "groups": dict(groups or {})}
    if ssh_config:
        data["ssh_config"] = ssh_config
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)


# -- ssh_config precedence ----------------------------------------------------


def ssh_configs(explicit: str | os.PathLike[str] | None = None, inventory: Inventory | None = None) -> ConfigSet:
    """The ssh_config files to resolve aliases with, in precedence order.

    ``explicit`` (``--ssh-config``), else ``$WORKBENCH_SSH_CONFIG``: that file alone, as
    ``ssh -F``.  Otherwise the testbed's ssh_config (its blocks name only its own aliases,
    so the user's ``Host *`` defaults never reach into them) and then OpenSSH's defaults,
    ``~/.ssh/config`` and ``/etc/ssh/ssh_config``.
    """
    chosen = explicit or os.environ.get(ENV_SSH_CONFIG)
    if chosen:
        return ConfigSet.from_files([chosen])
    inv = inventory if inventory is not None else load()
    files: list[str | os.PathLike[str]] = []
    for entry in inv.hosts.values():
        if entry.transport == "ssh" and entry.ssh_config and entry.ssh_config not in files:
            files.append(entry.ssh_config)
    legacy = testbed_dir() / "ssh_config"  # a testbed brought up before it wrote inventory entries
    if not files and legacy.is_file():
        files.append(str(legacy))
    return ConfigSet.from_files([*files, *user_files()], required=False)


# -- host lists and groups -------------------------------------------------------

_BRACKET = re.compile(r"\[([^\[\]]+)\]")
_NAME = re.compile(r"^[A-Za-z0-9@][A-Za-z0-9._@-]*$")


def _range_items(body: str, spec: str) -> list[str]:
    items: list[str] = []
    for part in body.split(","):
        lo, sep, hi = part.partition("-")
        if not sep:
            items.append(part)
        elif lo.isdigit() and hi.isdigit():
            width = len(lo) if lo.startswith("0") else 0
            if int(hi) < int(lo) or int(hi) - int(lo) > 4096:
                raise ConfigError(f"host range {spec!r}: {part!r} is not an increasing range")
            items += [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]
        elif len(lo) == 1 and len(hi) == 1 and lo.isalpha() and hi.isalpha() and lo <= hi:
            items += [chr(c) for c in range(ord(lo), ord(hi) + 1)]
        else:
            raise ConfigError(f"host range {spec!r}: cannot expand {part!r} (use a-d or 01-12)")
    return items


def expand_pattern(spec: str) -> list[str]:
    """``gpu-[a-d]`` -> gpu-a..gpu-d; ``node[01-03]`` keeps the zero padding; several brackets multiply."""
    pieces = _BRACKET.split(spec)
    if any("[" in p or "]" in p for p in pieces[::2]):
        raise ConfigError(f"host list {spec!r}: unbalanced brackets")
    choices = [[p] if i % 2 == 0 else _range_items(p, spec) for i, p in enumerate(pieces)]
    return ["".join(c) for c in itertools.product(*choices)]


def _split(spec: str | Sequence[str]) -> list[str]:
    """Split on commas outside brackets."""
    words = [spec] if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for word in words:
        depth, cur = 0, ""
        for ch in word:
            depth += ch == "["
            depth -= ch == "]"
            if ch == "," and depth == 0:
                out.append(cur)
                cur = ""
            else:
                cur += ch
        out.append(cur)
    return [w.strip() for w in out if w.strip()]


def expand_hosts(spec: str | Sequence[str], inventory: Inventory | None = None, *, _depth: int = 0) -> list[str]:
    """Host names from a host list: names, ``gpu-[a-d]`` ranges, groups (``@prod`` or ``prod``
    when no host has that name), comma-separated or as a list; duplicates dropped, order kept."""
    if _depth > 8:
        raise ConfigError("host groups nest deeper than 8 levels (a group includes itself?)")
    inv = inventory if inventory is not None else load()
    out: list[str] = []
    for word in _split(spec):
        group = word[1:] if word.startswith("@") else word if word in inv.groups and word not in inv.hosts else None
        if group is not None:
            if group not in inv.groups:
                known = ", ".join(sorted(inv.groups)) or "none"
                raise ConfigError(f"unknown host group {group!r} (groups: {known}; from {inv.sources or 'no inventory'})")
            names = expand_hosts(inv.groups[group], inv, _depth=_depth + 1)
        else:
            names = expand_pattern(word)
        for name in names:
            if not _NAME.match(name):
                raise ConfigError(f"not a valid host name: {name!r}")
            if name not in out:
                out.append(name)
    if not out:
        raise ConfigError(f"empty host list: {spec!r}")
    return out


def names(inventory: Inventory | None = None, configs: ConfigSet | None = None) -> list[str]:
    """Every host one could name: inventory entries, then concrete ssh_config aliases."""
    inv = inventory if inventory is not None else load()
    out = list(inv.hosts)
    out += [a for a in (configs or ssh_configs(inventory=inv)).aliases() if a not in out]
    return out



def require_known(hosts: Sequence[str], *, ssh_config: str | os.PathLike[str] | None = None, what: str = "") -> None:
    """Refuse, before anything connects, a host that neither the inventory nor the ssh_config names.

    Known: ``local``/``localhost``, an inventory entry, or a ``Host`` line of the ssh_config in use
    (:func:`ssh_configs`) other than a bare ``*``.  The :class:`ConfigError` names the unknown
    hosts, where it looked and the valid names.  ``what`` prefixes the message (``deployment X: ``)."""
    inv = load()
    configs = ssh_configs(ssh_config, inv)
    unknown = [h for h in hosts if h not in ("local", "localhost") and h not in inv.hosts and not configs.knows(h)]
    if unknown:
        known = names(inv, configs)
        valid = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "") or "none"
        raise ConfigError(f"{what}{', '.join(unknown)}: no inventory entry or ssh_config Host names "
                          f"{'it' if len(unknown) == 1 else 'them'} (ssh_config: {configs.describe()}; "
                          f"inventory: {', '.join(inv.sources) or 'none'}); valid hosts: {valid}")
