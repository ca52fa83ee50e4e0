"""The ``hosts`` parameter of the runbooks: names, ``gpu-[a-b]`` ranges and ``@group`` from the inventory.

Used as a ``mode="before"`` validator, so a bad list (an unknown group, an invalid name, an empty
range) is a parameter error before anything touches a host.  A string is a host list
(``"gpu-[a-b]"``, ``"@prod"``, ``"gpu-a,gpu-b"``); a list is expanded item by item; an empty list
stays empty (runbooks where it means "the ``host`` parameter alone").
"""

from __future__ import annotations

from typing import Any

from workbench.inventory import expand_hosts
from workbench.slurm.clusters import is_cluster


def expand_param(value: Any) -> Any:
    """``hosts`` as the runbook gets it: expanded, duplicates dropped, order kept.

    A cluster (``slurm:NAME``) is not a host list: it stays as given, for the runbook's own
    check (a cluster alone runs trials as jobs; a cluster mixed with hosts is refused there)."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        out: list[str] = []
        for word in value:
            for name in [word] if is_cluster(word) else expand_hosts(word):
                if name not in out:
                    out.append(name)
        return out
    return value  # empty, or not strings: the field's own type check answers


def check_deployment(hosts: list[str], base_unit: str, ssh_config: str) -> None:
    """A deployment's unit on hosts that are not exactly its nodes, or a deployment with a node that
    no inventory or ssh_config names, as a parameter error (``ValueError`` in a validator): refused
    before the run starts, so ``workbench run`` exits 2 with nothing touched.  A Slurm cluster is
    checked by its own runbook."""
    if not hosts or not base_unit or any(is_cluster(h) for h in hosts):
        return
    from workbench.deployment.runner import deployment_for
    from workbench.errors import ConfigError

    try:
        deployment_for(hosts, base_unit, ssh_config=ssh_config or None)
    except ConfigError as exc:
        raise ValueError(f"hosts: {exc}") from None
