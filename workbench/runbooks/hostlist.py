"""The ``hosts`` parameter of the runbooks: names, ``gpu-[a-b]`` ranges and ``@group`` from the inventory.

Used as a ``mode="before"`` validator, so a bad list (an unknown group, an invalid name, an empty
range) is a parameter error before anything touches a host.  A string is a host list
(``"gpu-[a-b]"``, ``"@prod"``, ``"gpu-a,gpu-b"``); a list is expanded item by item; an empty list
stays empty (runbooks where it means "the ``host`` parameter alone").
"""

from __future__ import annotations

from typing import Any

from workbench.inventory import expand_hosts


def expand_param(value: Any) -> Any:
    """``hosts`` as the runbook gets it: expanded, duplicates dropped, order kept."""
    if isinstance(value, str):
        return expand_hosts(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return expand_hosts(list(value))
    return value  # empty, or not strings: the field's own type check answers
