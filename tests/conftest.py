"""Shared fixtures: the testbed is brought up once per session for the integration tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def testbed():
    """The nspawn testbed with at least two hosts (reused if already running; torn down if started here)."""
    from workbench.testbed import testbed as tb

    ok, why = tb.can_use_nspawn()
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the testbed tests, but nspawn is unavailable: {why}")
        pytest.skip(f"nspawn testbed unavailable: {why}")
    state = tb.load()
    started_here = False
    if not (state and state.backend == "nspawn" and tb._healthy(state) and len(state.hosts) >= 2):
        state = tb.up(2)
        started_here = True
    yield state
    if started_here and not os.environ.get("WORKBENCH_KEEP_TESTBED"):
        tb.down()


@pytest.fixture(scope="session")
def ssh_config(testbed) -> str:
    return str(testbed.ssh_config)


@pytest.fixture
def host_a(ssh_config):
    from workbench.hosts import SSHHost

    h = SSHHost("gpu-a", ssh_config=ssh_config)
    yield h
    h.close()


@pytest.fixture
def host_b(ssh_config):
    from workbench.hosts import SSHHost

    h = SSHHost("gpu-b", ssh_config=ssh_config)
    yield h
    h.close()
