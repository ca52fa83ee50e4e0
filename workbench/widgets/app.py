"""The panel: a host picker and settings over six tabs, each a plain object tests drive without a browser."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from workbench.errors import ConfigError
from workbench.hosts import Host, connect, default_ssh_config
from workbench.runs import default_data_dir
from workbench.services import Services
from workbench.services import services_for as default_services_for
from workbench.widgets.background import guarded
from workbench.widgets.bench_tab import BenchTab
from workbench.widgets.context import PanelContext, discover_hosts
from workbench.widgets.fleet_tab import FleetTab
from workbench.widgets.gpu_tab import GpuTab
from workbench.widgets.journal_tab import JournalTab
from workbench.widgets.runs_tab import RunsTab
from workbench.widgets.services_tab import ServicesTab
from workbench.widgets.tracebacks_tab import TracebacksTab
from workbench.widgets.variant_tab import VariantTab

TITLES = ("Fleet", "Hosts and services", "Variant", "Journal", "Tracebacks", "Benchmark", "GPU", "Runs")


class WorkbenchPanel:
    """``WorkbenchPanel()`` in a notebook cell shows the panel for the hosts of your ssh_config (or the
    local testbed inventory); ``hosts=``, ``ssh_config=``, ``data_dir=`` override, ``connect=`` and
    ``services_for=`` replace how hosts are reached (tests)."""

    def __init__(self, hosts: Sequence[str] | None = None, *, ssh_config: str | None = None,
                 data_dir: str | Path | None = None, lock_wait: float = 0.0, ready_timeout: float = 600.0,
                 connect: Callable[[str], Host] | None = None,
                 services_for: Callable[[Host], Services] = default_services_for,
                 tabs: dict[str, Any] | None = None) -> None:
        ssh_config = ssh_config if ssh_config is not None else default_ssh_config()
        data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        names = list(hosts) if hosts is not None else discover_hosts(ssh_config)
        self.ctx = PanelContext(names, connect=connect or functools.partial(_connect, ssh_config=ssh_config),
                                services_for=services_for, data_dir=data_dir, lock_wait=lock_wait,
                                ready_timeout=ready_timeout)
        self.fleet = FleetTab(self.ctx, **(tabs or {}).get("fleet", {}))
        self.services = ServicesTab(self.ctx, **(tabs or {}).get("services", {}))
        self.variant = VariantTab(self.ctx, **(tabs or {}).get("variant", {}))
        self.journal = JournalTab(self.ctx, **(tabs or {}).get("journal", {}))
        self.tracebacks = TracebacksTab(self.ctx, **(tabs or {}).get("tracebacks", {}))
        self.bench = BenchTab(self.ctx, **(tabs or {}).get("bench", {}))
        self.gpu = GpuTab(self.ctx, **(tabs or {}).get("gpu", {}))
        self.runs = RunsTab(self.ctx, **(tabs or {}).get("runs", {}))
        self.error = widgets.HTML(value="")
        self.host = widgets.Dropdown(options=names, value=self.ctx.current or None, description="host")
        self.host.add_class("wb-host")
        self.lock_wait = widgets.BoundedFloatText(value=lock_wait, min=0, max=3600, step=5,
                                                  description="wait for a busy host (s)",
                                                  style={"description_width": "initial"},
                                                  layout=widgets.Layout(width="260px"))
        self.lock_wait.add_class("wb-lockwait")
        self.host.observe(guarded(self.error, lambda ch: self.select(ch["new"])), names="value")
        self.lock_wait.observe(guarded(self.error, lambda ch: setattr(self.ctx, "lock_wait", float(ch["new"]))),
                               names="value")
        self.tab = widgets.Tab(children=[t.widget for t in self.tabs()])
        for i, title in enumerate(TITLES):
            self.tab.set_title(i, title)
        self.tab.add_class("wb-tabs")
        header = widgets.HBox([self.host, self.lock_wait,
                               widgets.HTML(f"<span style='color:#666'>data: {Path(data_dir)}</span>")])
        note = "" if names else ("<b>No hosts found</b>: give <code>WorkbenchPanel(hosts=[...])</code> or an "
                                 "ssh_config with Host entries.")
        self.widget = widgets.VBox([header, widgets.HTML(note), self.error, self.tab])
        self.widget.add_class("wb-panel")

    def tabs(self) -> list[Any]:
        return [self.fleet, self.services, self.variant, self.journal, self.tracebacks, self.bench, self.gpu, self.runs]

    def select(self, name: str) -> None:
        """Work on host ``name`` from now on (every tab)."""
        if name not in self.ctx.hosts:
            raise ConfigError(f"unknown host {name!r}; known: {self.ctx.hosts}")
        self.ctx.select(name)
        if self.host.value != name:
            self.host.value = name

    def cancel_all(self) -> None:
        for t in self.tabs():
            t.bar.cancel()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def close(self) -> None:
        self.cancel_all()
        self.ctx.close()


def _connect(name: str, *, ssh_config: str | None) -> Host:
    return connect(name, ssh_config=ssh_config)
