"""The runbook notebooks' shared shape, generated from their parameter models.

``parameters_source(Model)`` is the text of a runbook's ``parameters`` cell: one
typed assignment per field with its help as a comment — what
``papermill --help-notebook`` shows.  ``build(...)`` writes a runbook notebook
from cell sources; ``python -m workbench.runbooks.notebooks`` regenerates every
notebook in ``runbooks/`` (a test checks they are up to date).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import nbformat
from pydantic import BaseModel


def runbooks_dir() -> Path:
    """Where the runbook notebooks are: the copy a built wheel carries (setup.py puts
    ``runbooks/*.ipynb`` into ``workbench/runbooks/ipynb/``), else the checkout's ``runbooks/``."""
    packaged = Path(__file__).resolve().parent / "ipynb"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "runbooks"


RUNBOOKS_DIR = runbooks_dir()


def _type_name(annotation: Any) -> str:
    """An annotation papermill's parser accepts (``\\w`` words, brackets, commas: no ``|``)."""
    if isinstance(annotation, type):
        return annotation.__name__
    text = str(annotation).replace("typing.", "")
    if "|" in text or "Optional" in text or "Union" in text:
        origin = getattr(annotation, "__origin__", None)
        return origin.__name__ if isinstance(origin, type) else "object"
    return text


def parameters_source(model: type[BaseModel]) -> str:
    lines = []
    common = [n for n in model.model_fields if n in ("data_dir", "run_id", "ssh_config")]
    names = [n for n in model.model_fields if n not in common] + common
    for name in names:
        field = model.model_fields[name]
        if field.is_required():  # papermill needs a value: None, which validation reports as missing
            lines.append(f"{name}: {_type_name(field.annotation)} = None  # required: {field.description or ''}")
            continue
        default = field.get_default(call_default_factory=True)
        value = json.dumps(default) if isinstance(default, dict | list) else repr(default)
        if isinstance(default, dict | list):
            value = value.replace("true", "True").replace("false", "False").replace("null", "None")
        help_text = field.description or ""
        lines.append(f"{name}: {_type_name(field.annotation)} = {value}" + (f"  # {help_text}" if help_text else ""))
    return "\n".join(lines)


def build(title: str, intro: str, model: type[BaseModel], cells: list[tuple[str, str, list[str]]]) -> nbformat.NotebookNode:
    """A notebook: title, parameters, then (kind, source, tags) cells."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    # Where `workbench run` finds the schema to check parameters against before a kernel starts.
    nb.metadata["workbench"] = {"parameters": f"{model.__module__}:{model.__name__}"}
    nb.cells.append(nbformat.v4.new_markdown_cell(f"# {title}\n\n{intro}"))
    nb.cells.append(nbformat.v4.new_code_cell(parameters_source(model), metadata={"tags": ["parameters"]}))
    for kind, source, tags in cells:
        maker = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        nb.cells.append(maker(source, metadata={"tags": tags} if tags else {}))
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    return nb


Cell = tuple[str, str, list[str]]


def runbook(module: str, title: str, intro: str, model: type[BaseModel], conclusion: list[str],
            body: list[Cell]) -> nbformat.NotebookNode:
    """The shape every runbook shares: validate the parameters, run, the conclusion (``show.conclusion``
    and ``conclusion`` expressions of ``rb``), the body, then provenance."""
    cells: list[Cell] = [
        ("code", f"from workbench.runbooks import {module} as rb\nfrom workbench.runbooks import show\n\n"
                 f"params = rb.{model.__name__}.from_namespace(globals())", []),
        ("code", "run, result = rb.run(params)\nprint(f'run directory: {run.dir}')", []),
        ("md", "## Conclusion", ["conclusion"]),
        ("code", "show.conclusion(result)", ["conclusion"]),
        *[("code", expr, ["conclusion"]) for expr in conclusion],
        *body,
        ("md", "## Provenance", ["provenance"]),
        ("code", "show.provenance(result)", ["provenance"]),
    ]
    return build(title, intro, model, cells)


def all_notebooks() -> dict[str, nbformat.NotebookNode]:
    from workbench.runbooks import ab, benchmark, bisect, factorial, sweep, triage

    return {"bisect.ipynb": bisect.notebook(), "factorial.ipynb": factorial.notebook(),
            "ab.ipynb": ab.notebook(), "benchmark.ipynb": benchmark.notebook(),
            "triage.ipynb": triage.notebook(), "sweep.ipynb": sweep.notebook()}


def main() -> int:
    for name, nb in all_notebooks().items():
        nbformat.write(nb, RUNBOOKS_DIR / name)
        print(f"wrote runbooks/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
