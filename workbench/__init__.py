"""workbench: investigate LLM inference servers on remote GPU hosts from Jupyter."""

from workbench.errors import WorkbenchError

__version__ = "0.1.0"
__all__ = ["WorkbenchError", "__version__"]
