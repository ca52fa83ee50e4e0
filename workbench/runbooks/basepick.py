"""The base a runbook works on when none is named: the one inference server running on its host.

``workbench run sweep -p host gpu-a -p grid ...`` names no ``base_unit``; where exactly one unit or
container on the host runs a server (SGLang, vLLM, TensorRT-LLM, LMDeploy: its command line says
so) that is the base, and the run says which it took.  None or several: nothing is guessed, the
missing-parameter error stands, with the servers that were found named.  Reading the host's
inventory changes nothing on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

BASE_FIELDS = ("base_unit", "unit")  # what the runbooks call the service they work on


@dataclass(frozen=True)
class BasePick:
    field: str  # the parameter it fills
    host: str
    servers: tuple[str, ...]  # the running servers found

    @property
    def value(self) -> str | None:
        return self.servers[0] if len(self.servers) == 1 else None

    def words(self) -> str:
        if self.value is not None:
            return (f"{self.field} {self.value}: the one inference server running on {self.host} "
                    f"(-p {self.field} NAME to choose another)")
        found = (f"several run on {self.host}: {', '.join(self.servers)}" if self.servers
                 else f"no inference server runs on {self.host} to take as the base")
        return f"missing required parameter(s) {self.field} (give it with -p {self.field} NAME); {found}"


def missing_base(params: Mapping[str, Any], fields: Mapping[str, Any]) -> str:
    """The base parameter a runbook requires and ``params`` leaves out ('' when none is missing)."""
    for name in BASE_FIELDS:
        info = fields.get(name)
        if info is not None and getattr(info, "is_required", lambda: False)() and not params.get(name):
            return name
    return ""


def the_host(params: Mapping[str, Any]) -> str:
    """The one host of the run's parameters ('' when it names none, a cluster, or several)."""
    from workbench.runbooks.execute import hosts_of
    from workbench.slurm.clusters import is_cluster

    hosts = hosts_of(params)
    return hosts[0] if len(hosts) == 1 and not is_cluster(hosts[0]) else ""


def pick(field: str, host_name: str, *, ssh_config: str | None = None) -> BasePick:
    """The running servers on ``host_name`` as the candidates for the run's ``field``."""
    from workbench.hosts import connect
    from workbench.services import running_servers, services_for

    host = connect(host_name, ssh_config=ssh_config)
    try:
        servers = tuple(i.status.unit for i in running_servers(services_for(host)))
    finally:
        host.close()
    return BasePick(field, host_name, servers)
