"""A deployment described once, in TOML (read-only from the workbench's side).

::

    [deployment.k26-2node]
    unit = "sglang-k26-2node.service"   # the same unit name on every node
    port = 30000                        # the head's HTTP port (default: the head's --port)
    join_timeout = 120                  # seconds for every node to join once the head starts

    [[deployment.k26-2node.node]]
    host = "gpu-a"                      # an ssh_config alias
    rank = 0                            # its --node-rank; rank 0 is the head (serves HTTP)
    [[deployment.k26-2node.node]]
    host = "gpu-b"
    rank = 1

A node runs one service of its host, named the way every other command names it: a systemd
service (``NAME.service``; on a host without systemd, the process backend's unit of that name)
or a named container (podman, or docker with a daemon: ``NAME`` as ``podman ps -a`` lists it,
``[A-Za-z0-9][A-Za-z0-9_.-]*``, at most 128 characters).  A node's own ``unit`` overrides the
deployment's, so a deployment may mix them::

    [[deployment.k26-mixed.node]]
    host = "gpu-a"
    rank = 0                            # the deployment's unit, sglang-k26-2node.service
    [[deployment.k26-mixed.node]]
    host = "gpu-c"
    rank = 1
    unit = "sglang-k26-2node-n1"        # a container on gpu-c

Which backend answers for a name is the host's business (:func:`workbench.services.services_for`:
a host with podman puts its containers beside its units, and ``NAME.service`` also reaches a
container ``NAME`` where no unit has the name); nothing here asks.  Refused here: other unit types
(``.socket``, ``.timer``, ...: not a server), templates (``@``), and anything neither a unit nor a
container name (spaces, a slash, a leading dot or dash).  Nodes are distinct hosts.  Each node's
command line must fit the deployment in its engine's way (SGLang's ``--nnodes``/``--node-rank``/
``--dist-init-addr``; vLLM's ``--nnodes``/``--node-rank``/``--master-addr`` with ``--headless``
workers, or its data-parallel ``--data-parallel-*`` flags: :mod:`workbench.deployment.topology`):
checked by :func:`workbench.deployment.control.preflight` before any node is stopped or started.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.containers import NAME_RE as CONTAINER_NAME
from workbench.errors import ConfigError
from workbench.systemd import valid_unit

DEPLOYMENTS_ENV = "WORKBENCH_DEPLOYMENTS"
_KEYS = {"unit", "port", "join_timeout", "node"}
_NODE_KEYS = {"host", "rank", "unit"}


@dataclass(frozen=True)
class Node:
    host: str
    rank: int
    unit: str

    @property
    def label(self) -> str:
        return f"node{self.rank}"

    def answers_to(self, name: str) -> bool:
        """``name`` names this node's service: as written, or with ``.service`` added or dropped
        (``NAME`` and ``NAME.service`` are one service to every backend)."""
        return name == self.unit or name.removesuffix(".service") == self.unit.removesuffix(".service")


_OTHER_TYPES = (".socket", ".target", ".timer", ".scope", ".slice", ".mount", ".path", ".device", ".swap",
                ".automount")


def service_name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a node's service (None: a systemd service or a container name)."""
    if not isinstance(name, str) or not name:
        return "must name a service (NAME.service) or a container (NAME), here or in the deployment"
    if name.endswith(_OTHER_TYPES):
        return f"{name!r} is a .{name.rsplit('.', 1)[1]} unit, not a server: name a .service or a container"
    if name.endswith(".service"):
        return None if valid_unit(name) and "@" not in name else f"{name!r} is not a valid unit name"
    if not CONTAINER_NAME.match(name):
        return (f"{name!r} is neither a unit (NAME.service) nor a container name "
                "([A-Za-z0-9][A-Za-z0-9_.-]*, at most 128 characters)")
    return None


@dataclass(frozen=True)
class Deployment:
    name: str
    nodes: tuple[Node, ...]
    port: int | None = None
    join_timeout: float = 120.0

    @property
    def head(self) -> Node:
        return self.nodes[0]

    @property
    def workers(self) -> tuple[Node, ...]:
        return self.nodes[1:]

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(n.host for n in self.nodes)

    def uses(self, name: str) -> bool:
        """Whether ``name`` is one of its nodes' services (see :meth:`Node.answers_to`)."""
        return any(n.answers_to(name) for n in self.nodes)

    def start_order(self) -> tuple[Node, ...]:
        """Workers first (they wait for the head's rendezvous), the head last."""
        return (*self.workers, self.head)

    def stop_order(self) -> tuple[Node, ...]:
        """The head first: the workers then lose nothing that is still serving."""
        return self.nodes

    def node(self, key: str | int) -> Node:
        for n in self.nodes:
            if key in (n.host, n.rank, n.label):
                return n
        raise ConfigError(f"deployment {self.name}: no node {key!r} (nodes: {', '.join(self.hosts)})")


def parse_deployments(text: str, source: str = "<deployments>") -> dict[str, Deployment]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: not valid TOML: {e}") from None
    extra = set(doc) - {"deployment"}
    if extra:
        raise ConfigError(f"{source}: unknown top-level key {sorted(extra)[0]!r} (expected [deployment.NAME])")
    return {name: _parse_one(name, body, source) for name, body in doc.get("deployment", {}).items()}


def _parse_one(name: str, body: Any, source: str) -> Deployment:
    where = f"{source}: deployment {name!r}"
    if not isinstance(body, dict):
        raise ConfigError(f"{where}: must be a table")
    extra = set(body) - _KEYS
    if extra:
        raise ConfigError(f"{where}: unknown key {sorted(extra)[0]!r} (known: {', '.join(sorted(_KEYS))})")
    unit = body.get("unit")
    raw_nodes = body.get("node", [])
    if not isinstance(raw_nodes, list) or len(raw_nodes) < 2:
        raise ConfigError(f"{where}: needs at least two [[deployment.{name}.node]] tables")
    nodes = []
    for i, raw in enumerate(raw_nodes):
        if not isinstance(raw, dict) or set(raw) - _NODE_KEYS:
            raise ConfigError(f"{where}: node[{i}]: a table with host, rank and optionally unit")
        host, rank, node_unit = raw.get("host"), raw.get("rank"), raw.get("unit", unit)
        if not isinstance(host, str) or not host:
            raise ConfigError(f"{where}: node[{i}].host: must be a host alias")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise ConfigError(f"{where}: node[{i}].rank: must be an integer >= 0 (the --node-rank)")
        problem = service_name_problem(node_unit)
        if problem is not None:
            raise ConfigError(f"{where}: node[{i}].unit: {problem}")
        assert isinstance(node_unit, str)
        nodes.append(Node(host, rank, node_unit))
    nodes.sort(key=lambda n: n.rank)
    if [n.rank for n in nodes] != list(range(len(nodes))):
        raise ConfigError(f"{where}: node ranks must be 0..{len(nodes) - 1}, each once")
    if len({n.host for n in nodes}) != len(nodes):
        raise ConfigError(f"{where}: a host appears twice")
    port = body.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise ConfigError(f"{where}: port must be a TCP port")
    join = body.get("join_timeout", 120.0)
    if isinstance(join, bool) or not isinstance(join, int | float) or join <= 0:
        raise ConfigError(f"{where}: join_timeout must be a positive number of seconds")
    return Deployment(name, tuple(nodes), port, float(join))


def default_path(ssh_config: str | None = None) -> Path | None:
    """``$WORKBENCH_DEPLOYMENTS``; else ``deployments.toml`` beside the ssh_config in use: the one
    given (or ``$WORKBENCH_SSH_CONFIG``) alone, otherwise the first beside any file of the ssh_config
    precedence (the testbed's, then ``~/.ssh/config``), then beside the inventory file
    (``~/.config/workbench/deployments.toml`` by default)."""
    env = os.environ.get(DEPLOYMENTS_ENV)
    if env:
        return Path(env)
    from workbench.hosts import default_ssh_config
    from workbench.inventory import ssh_configs, user_file

    chosen = ssh_config or default_ssh_config()
    if chosen:
        candidate = Path(chosen).with_name("deployments.toml")
        return candidate if candidate.is_file() else None
    for config in ssh_configs().paths:
        candidate = Path(config).with_name("deployments.toml")
        if candidate.is_file():
            return candidate
    candidate = user_file().with_name("deployments.toml")
    return candidate if candidate.is_file() else None


def load_deployments(path: str | os.PathLike[str] | None = None, *, ssh_config: str | None = None
                     ) -> dict[str, Deployment]:
    """The deployments of ``path`` (else :func:`default_path`); a missing file is an error."""
    p = Path(path) if path is not None else default_path(ssh_config)
    if p is None:
        raise ConfigError(f"no deployments file: pass one, set ${DEPLOYMENTS_ENV}, or put deployments.toml "
                          "next to your ssh_config")
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read deployments file {p}: {e.strerror}") from None
    return parse_deployments(text, str(p))


def find_deployment(deployments: dict[str, Deployment], key: str, hosts: tuple[str, ...] = ()) -> Deployment:
    """By name, or by unit (and, if given, the hosts it spans): what the CLI accepts."""
    if key in deployments:
        return deployments[key]
    using = [d for d in deployments.values() if d.uses(key)]
    matches = [d for d in using if not hosts or set(hosts) == set(d.hosts)]
    if len(matches) == 1:
        return matches[0]
    if hosts and using and not matches:  # the unit is a deployment's, the host list is not its nodes
        said = "; ".join(f"{d.name} on {', '.join(d.hosts)} ({len(d.nodes)} nodes)" for d in using)
        raise ConfigError(f"{key} is the unit of {said}, not of {', '.join(hosts)} ({len(hosts)} hosts): "
                          "give exactly its nodes, or the deployment's name")
    known = ", ".join(sorted(deployments)) or "none"
    raise ConfigError(f"no single deployment matches {key!r}{' on ' + ','.join(hosts) if hosts else ''} "
                      f"(known: {known})")
