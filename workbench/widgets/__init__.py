"""The interactive control panel (ipywidgets): one module per tab, background work in ``background``.

``WorkbenchPanel()`` in a JupyterLab cell shows every tab; each tab is also a
plain object (``ServicesTab(ctx)``, ...) with methods tests call without a browser.
"""

from workbench.widgets.app import WorkbenchPanel
from workbench.widgets.background import Cancelled, Task, TaskBar, TaskContext, routed
from workbench.widgets.bench_tab import BenchTab
from workbench.widgets.context import Invocation, PanelContext
from workbench.widgets.journal_tab import JournalTab, entries_frame, filter_frame, read_entries
from workbench.widgets.runs_tab import RunsTab
from workbench.widgets.services_tab import ServicesTab
from workbench.widgets.tracebacks_tab import TracebacksTab
from workbench.widgets.variant_tab import VariantTab

__all__ = [
    "BenchTab", "Cancelled", "Invocation", "JournalTab", "PanelContext", "RunsTab", "ServicesTab", "Task", "TaskBar",
    "TaskContext", "TracebacksTab", "VariantTab", "WorkbenchPanel", "entries_frame", "filter_frame", "read_entries",
    "routed",
]
