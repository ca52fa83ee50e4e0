"""Where the testbed keeps its cache and state (outside the repository)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$WORKBENCH_CACHE``, else ``$XDG_CACHE_HOME/workbench``, else ``~/.cache/workbench``."""
    env = os.environ.get("WORKBENCH_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "workbench"


def state_dir() -> Path:
    """The running testbed's state: keys, ssh_config, known_hosts, host roots, state.json."""
    env = os.environ.get("WORKBENCH_TESTBED_DIR")
    return Path(env) if env else cache_dir() / "testbed"


def rootfs_cache() -> Path:
    return cache_dir() / "rootfs"
