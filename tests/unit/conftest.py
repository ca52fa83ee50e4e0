"""Fixtures shared by unit tests of several areas."""

from __future__ import annotations

from pathlib import Path

import pytest

K26_2NODE = Path(__file__).parents[1] / "fixtures" / "deployment" / "k26-2node.toml"  # gpu-a node 0, gpu-b node 1


@pytest.fixture
def deps(tmp_path, monkeypatch):
    """The two-node deployment file, with an ssh_config and an inventory of this test's own: whether a
    testbed is up (its ssh_config found) or the user has an inventory never changes what a test sees."""
    p = tmp_path / "deployments.toml"
    p.write_text(K26_2NODE.read_text())
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text("Host gpu-a\n    HostName 127.0.0.1\nHost gpu-b\n    HostName 127.0.0.1\n")
    monkeypatch.setenv("WORKBENCH_DEPLOYMENTS", str(p))
    monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(ssh_config))
    monkeypatch.setenv("WORKBENCH_INVENTORY", str(tmp_path / "no-inventory.toml"))
    return p
