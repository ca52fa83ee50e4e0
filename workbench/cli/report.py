"""``workbench report RUN_DIR|NOTEBOOK``: (re)write a run's offline report.html.

A run directory made by ``workbench run`` is re-rendered from its sanitized
``notebook.ipynb``.  A notebook from plain ``papermill`` still holds the raw
parameters: it is sanitized first (secrets of ``secret_env`` read from this
environment) into ``RUN_DIR/notebook.ipynb``; the run directory is ``--run-dir``
or the one the runbook printed (``run directory: ...``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

_RUN_DIR_LINE = re.compile(r"^run directory: (\S+)\s*$", re.M)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report", help="write report.html for a run directory or a papermill output notebook",
        description="Render a run's offline report.html (conclusion first, code collapsed, no CDN). Given a "
        "notebook from plain papermill, sanitize it into the run directory first.",
        epilog="examples:\n  workbench report data/runs/20261201-101500-bisect-1a2b\n"
               "  papermill runbooks/bisect.ipynb out.ipynb -p host gpu-a && workbench report out.ipynb\n")
    p.add_argument("target", metavar="RUN_DIR|NOTEBOOK", help="a run directory, or a papermill output notebook")
    p.add_argument("--run-dir", metavar="DIR", help="the run directory of NOTEBOOK (default: the one it printed)")
    p.set_defaults(func=report)


def run_dir_of(nb: Any) -> Path | None:
    """The run directory a runbook notebook printed (``run directory: data/runs/<id>``)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                m = _RUN_DIR_LINE.search(str(out.get("text", "")))
                if m:
                    return Path(m.group(1))
    return None


def report(args: argparse.Namespace) -> int:
    import nbformat

    from workbench.redact import Redactor
    from workbench.runbooks.execute import NOTEBOOK_NAME
    from workbench.runbooks.report import export_html
    from workbench.runbooks.sanitize import sanitize

    target = Path(args.target)
    if target.is_dir():
        notebook = target / NOTEBOOK_NAME
        if not notebook.is_file():
            raise ConfigError(f"{target} has no {NOTEBOOK_NAME}; for a papermill output give the notebook itself")
        print(export_html(notebook, args.run_dir or target))
        return 0
    if not target.is_file():
        raise ConfigError(f"{target}: no such run directory or notebook")
    nb = nbformat.read(str(target), as_version=4)
    run_dir = Path(args.run_dir) if args.run_dir else run_dir_of(nb)
    if run_dir is None:
        raise ConfigError(f"{target} does not say its run directory; give --run-dir")
    params = dict(nb.metadata.get("papermill", {}).get("parameters") or {})
    redactor = Redactor.for_params(params)
    run_dir.mkdir(parents=True, exist_ok=True)
    clean = sanitize(nb, redactor, params, notebook_path=str(run_dir / NOTEBOOK_NAME))
    nbformat.write(clean, str(run_dir / NOTEBOOK_NAME))
    print(export_html(clean, run_dir, redactor=redactor))
    print(f"note: {target} still holds the raw parameters; {run_dir / NOTEBOOK_NAME} is the sanitized copy")
    return 0
