"""workbench: investigate LLM inference servers on remote GPU hosts from Jupyter."""

from workbench.errors import WorkbenchError
from workbench.importcost import defer_rfc3987_syntax

defer_rfc3987_syntax()  # before anything imports jsonschema: 1.5 s less for every process (importcost.py)

__version__ = "0.1.0"
__all__ = ["WorkbenchError", "__version__"]
