"""Shared fixtures: the testbed is brought up once per session for the integration tests."""

from __future__ import annotations

import os

import pytest


def wanted_provision(items: list[pytest.Item]) -> tuple[str, ...]:
    """The provisioners this session needs: the real vLLM too when it runs ``realserver`` tests."""
    if any(item.get_closest_marker("realserver") for item in items):
        return ("sim", "vllm")
    return ("sim",)


@pytest.fixture(scope="session")
def testbed(request):
    """The nspawn testbed with at least two hosts (reused if already running; torn down if started here).

    A running testbed is reused when it has every provisioner the session needs; one
    that lacks ``vllm`` while ``realserver`` tests are selected is brought up again,
    once, with its provisioners and ``vllm``, and left running (it was running before).
    """
    from workbench.testbed import testbed as tb

    ok, why = tb.can_use_nspawn()
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the testbed tests, but nspawn is unavailable: {why}")
        pytest.skip(f"nspawn testbed unavailable: {why}")
    want = wanted_provision(request.session.items)
    state = tb.load()
    started_here = False
    running = bool(state and state.backend == "nspawn" and tb._healthy(state) and len(state.hosts) >= 2)
    if not running:
        state = tb.up(2, provision=want)
        started_here = True
    elif state is not None and not set(want) <= set(have := tb.provisioned(state)):
        # what it has (gpu-c's containers, ...) kept, what the session needs added
        state = tb.up(len(state.hosts), provision=tuple(dict.fromkeys([*have, *want])))
    yield state
    if started_here and not os.environ.get("WORKBENCH_KEEP_TESTBED"):
        tb.down()


@pytest.fixture(scope="session")
def ssh_config(testbed) -> str:
    return str(testbed.ssh_config)


@pytest.fixture
def host_a(ssh_config):
    from workbench.ssh import SSHHost

    h = SSHHost("gpu-a", ssh_config=ssh_config)
    yield h
    h.close()


@pytest.fixture
def host_b(ssh_config):
    from workbench.ssh import SSHHost

    h = SSHHost("gpu-b", ssh_config=ssh_config)
    yield h
    h.close()


@pytest.fixture
def vllm_host(testbed):
    """gpu-a of a testbed provisioned with the real vLLM: ``vllm-tiny.service`` (port 8000,
    ``/health``) installed, not enabled. Use it inside a ``HostSession`` so the host is restored."""
    from workbench.ssh import SSHHost

    if "vllm" not in testbed.provision:
        pytest.fail("the testbed runs without the vllm provisioner: mark the test `realserver` "
                    "so tests/conftest.py brings it up with sim,vllm")
    h = SSHHost("gpu-a", ssh_config=str(testbed.ssh_config))
    yield h
    h.close()
