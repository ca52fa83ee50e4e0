"""The panel's claims on the container backend (gpu-c's podman container), through the panel's own
objects and a real PanelContext: the services table lists the container with its backend and
invocation, a variant run from the Variant tab shows its phase timeline and outcome and the host is
left as found, the Journal tab reads the container's lines. (The same tabs are driven in a real
browser on systemd units: test_browser.py.)"""

from __future__ import annotations

import pytest

from workbench.services import ContainerServices
from workbench.ssh import SSHHost
from workbench.widgets.context import PanelContext
from workbench.widgets.journal_tab import JournalTab
from workbench.widgets.services_tab import ServicesTab
from workbench.widgets.variant_tab import VariantTab

from .test_containers import BASE, _as_found, _definition, host_c  # noqa: F401  (the fixture)

pytestmark = pytest.mark.testbed


@pytest.fixture
def ctx(host_c, tmp_path):  # noqa: F811
    config = str(host_c.ssh_config_path)
    c = PanelContext(["gpu-c"], connect=lambda name: SSHHost(name, ssh_config=config), data_dir=tmp_path,
                     lock_wait=300, ready_timeout=180)
    yield c
    c.close()


def test_the_services_table_lists_the_container(ctx, host_c) -> None:  # noqa: F811
    tab = ServicesTab(ctx, pattern="sglang*")
    tab.refresh()
    assert tab.wait(120).state == "done", tab.bar.error.value
    rows = {r["unit"]: r for r in tab.rows}
    assert rows[BASE]["backend"] == "container" and rows[BASE]["active"] == "active", rows.get(BASE)
    assert BASE in tab.table.value and BASE in tab.unit.options
    inv = ContainerServices(host_c).status(BASE).invocation_id
    assert any(i.invocation == inv and i.unit == BASE for i in ctx.invocations)


def test_a_variant_from_the_panel_runs_on_the_container_and_the_host_is_as_found(ctx, host_c) -> None:  # noqa: F811
    before = _definition(host_c)
    tab = VariantTab(ctx)
    tab.base.value = BASE
    tab.add_edit("--ep-size", "8")  # the seeds' first culprit: fails in cuda graph capture
    tab.run()
    assert tab.wait(300).state == "done", tab.bar.error.value
    assert "FAILED in cuda_graph_capture" in tab.outcome.value and "topk_ids" in tab.outcome.value, tab.outcome.value
    assert "cuda_graph_capture" in tab.timeline.value and "weight_loading" in tab.timeline.value
    assert any(i.unit.startswith(f"{BASE}-wb-") and "failed" in i.label for i in ctx.invocations)
    _as_found(host_c, before)


def test_the_journal_tab_reads_the_containers_lines(ctx) -> None:
    tab = JournalTab(ctx, unit=BASE)
    tab.load()
    assert tab.wait(120).state == "done", tab.bar.error.value
    assert len(tab.frame) > 0 and tab.frame["message"].str.contains("fired up and ready to roll").any()
    assert {r for r in tab.frame["rank"] if r} >= {"TP0"}
