"""Which Slurm clusters there are: ``slurm:NAME`` wherever a host goes.

A cluster is reached through its submit host (an ssh_config alias, or ``local`` for this
machine) and has a directory of job scripts.  Entries come from, in order (the first that
names a cluster wins):

* ``$WORKBENCH_SLURM_CLUSTERS`` — a JSON or TOML file; else ``~/.config/workbench/slurm.toml``::

      [clusters.prod]
      submit_host = "login-1"          # ssh_config alias
      script_dir = "/home/me/jobs"     # where bare script names are looked up
      partition = "gpu"                # optional: account, qos too
      env = { SLURM_CONF = "/etc/slurm/slurm.conf" }
      node_hosts = { gpu17 = "gpu17.hpc" }   # optional: how a node is reached by SSH (else its name)

* the running testbed's ``slurm.json`` (written by the testbed, read here; nothing here
  imports the testbed).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

from workbench import inventory
from workbench.errors import ConfigError
from workbench.hosts import LocalHost, connect
from workbench.slurm.cluster import SlurmCluster

PREFIX = "slurm:"
ENV = "WORKBENCH_SLURM_CLUSTERS"
TESTBED_FILE = "slurm.json"


def user_file() -> Path:
    env = os.environ.get(ENV)
    return Path(env) if env else inventory.user_file().with_name("slurm.toml")


def testbed_file() -> Path:
    return inventory.testbed_dir() / TESTBED_FILE


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    text = path.read_text()
    try:
        doc = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}") from exc
    clusters = doc.get("clusters", {})
    if not isinstance(clusters, dict):
        raise ConfigError(f"{path}: 'clusters' must be a table of cluster names")
    return {name: {**entry, "source": str(path)} for name, entry in clusters.items()}


def load() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in (user_file(), testbed_file()):
        for name, entry in _read(path).items():
            found.setdefault(name, entry)
    return found


def is_cluster(spec: str) -> bool:
    return spec.startswith(PREFIX)


def connect_cluster(spec: str, *, ssh_config: str | None = None) -> SlurmCluster:
    """The cluster ``slurm:NAME``; an unknown name is a :class:`ConfigError` naming the files read."""
    if not is_cluster(spec):
        raise ConfigError(f"not a cluster: {spec!r} (clusters are written slurm:NAME)")
    name = spec[len(PREFIX):]
    entries = load()
    entry = entries.get(name)
    if entry is None:
        raise ConfigError(f"no Slurm cluster {name!r} (read {user_file()} and {testbed_file()}; "
                          f"known: {', '.join(sorted(entries)) or 'none'})")
    submit = str(entry.get("submit_host", "local"))
    host = LocalHost(spec) if submit in ("local", "localhost") else connect(submit, ssh_config=ssh_config)
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError(f"{entry['source']}: clusters.{name}.env must map names to strings")
    node_hosts = entry.get("node_hosts", {})
    if not isinstance(node_hosts, dict) or not all(isinstance(v, str) for v in node_hosts.values()):
        raise ConfigError(f"{entry['source']}: clusters.{name}.node_hosts must map node names to host aliases")
    return SlurmCluster(host, name=name, script_dir=str(entry.get("script_dir", "")),
                        partition=entry.get("partition"), account=entry.get("account"), qos=entry.get("qos"),
                        env=env, node_hosts=node_hosts)
