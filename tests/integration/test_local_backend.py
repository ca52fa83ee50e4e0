"""The local testbed backend: hosts on this machine whose services are supervised plain processes.

The same workbench code as on systemd hosts: status with GPUs held (by process group), a variant
that fails as the seeds say, the watch, the lock, and the host restored.
"""

from __future__ import annotations

import pytest

from workbench.hosts import LocalHost, connect
from workbench.services import ProcessServices, inventory, services_for
from workbench.session import HostSession

BASE = "sglang-k26-ddtree.service"


@pytest.fixture(scope="module")
def local_host(tmp_path_factory):
    import os

    from workbench.testbed import local

    state = tmp_path_factory.mktemp("localtb")
    old = os.environ.get("WORKBENCH_TESTBED_DIR")
    os.environ["WORKBENCH_TESTBED_DIR"] = str(state)
    try:
        local.up(1, progress=lambda _m: None)
        host = connect("gpu-a")
        assert isinstance(host, LocalHost)
        from workbench.watch import watch_start

        out = watch_start(services_for(host), BASE, start=False, timeout=120)
        assert out.ok, out.describe()
        yield host
    finally:
        local.down(progress=lambda _m: None)
        if old is None:
            os.environ.pop("WORKBENCH_TESTBED_DIR", None)
        else:
            os.environ["WORKBENCH_TESTBED_DIR"] = old


def test_process_backend_status_and_gpus(local_host):
    svc = services_for(local_host)
    assert isinstance(svc, ProcessServices)
    rows = {r.status.unit: r for r in inventory(svc)}
    base = rows[BASE]
    assert base.status.running and base.gpus == list(range(8))
    assert "--tp-size" in base.argv


def test_process_backend_variant_fails_like_the_seeds_and_host_is_restored(local_host):
    svc = services_for(local_host)
    before = svc.status(BASE)
    with HostSession(local_host) as s:
        trial = s.run_variant(BASE, {"--ep-size": "8"}, timeout=120)
        assert trial.outcome.outcome == "failed" and trial.outcome.phase == "cuda_graph_capture"
        assert any("'NoneType' object has no attribute" in line for line in trial.outcome.tail)
    after = svc.status(BASE)
    assert after.running and after.invocation_id != before.invocation_id  # restarted and ready again
    assert svc.variant_files() == {}
