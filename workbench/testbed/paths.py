"""Where the testbed keeps its cache and state (outside the repository).

The locations are the inventory's (:mod:`workbench.inventory`): the testbed writes its
host entries where the hosts read them, and the dependency points one way.
"""

from __future__ import annotations

from pathlib import Path

from workbench.inventory import cache_dir, testbed_dir, testbed_file

__all__ = ["cache_dir", "inventory_file", "rootfs_cache", "state_dir"]


def state_dir() -> Path:
    """The running testbed's state: keys, ssh_config, known_hosts, host roots, state.json."""
    return testbed_dir()


def inventory_file() -> Path:
    """The testbed's inventory entries (read by :func:`workbench.inventory.load`)."""
    return testbed_file()


def rootfs_cache() -> Path:
    return cache_dir() / "rootfs"
