"""The assembled panel: hosts discovered, tabs titled, the host choice shared by every tab."""

from __future__ import annotations

from workbench.widgets import WorkbenchPanel
from workbench.widgets.app import TITLES
from workbench.widgets.context import discover_hosts, ssh_config_hosts

from .fakes import FakeHost, FakeServices

SSH_CONFIG = """\
# Written by `workbench testbed up`
Host gpu-a
    HostName 10.0.0.1
Host gpu-b gpu-b-alias
    User root
Host *.internal !bastion
    ProxyJump bastion
host   lower
"""


def test_ssh_config_hosts_skip_patterns():
    assert ssh_config_hosts(SSH_CONFIG) == ["gpu-a", "gpu-b", "gpu-b-alias", "lower"]


def test_discover_hosts_reads_the_given_ssh_config(tmp_path, monkeypatch):
    monkeypatch.setattr("workbench.testbed.local.load_inventory", lambda: {})
    path = tmp_path / "ssh_config"
    path.write_text(SSH_CONFIG)
    assert discover_hosts(str(path))[:2] == ["gpu-a", "gpu-b"]


def test_panel_tabs_and_host_choice(tmp_path):
    panel = WorkbenchPanel(hosts=["gpu-a", "gpu-b"], data_dir=tmp_path, connect=FakeHost,
                           services_for=FakeServices)
    assert [panel.tab.get_title(i) for i in range(len(TITLES))] == list(TITLES)
    assert panel.ctx.current == "gpu-a"
    panel.host.value = "gpu-b"
    assert panel.ctx.current == "gpu-b"
    panel.services.refresh()
    panel.services.wait(10)
    assert "gpu-b" in panel.services.lock_info.value
    panel.lock_wait.value = 120
    assert panel.ctx.lock_wait == 120
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    panel.close()


def test_no_hosts_is_explained(tmp_path):
    panel = WorkbenchPanel(hosts=[], data_dir=tmp_path, connect=FakeHost)
    assert "No hosts found" in panel.widget.children[1].value
