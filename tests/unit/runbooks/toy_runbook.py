"""A runbook in miniature for the execute/report tests: writes trials and a result, can die at each step."""

from __future__ import annotations

from pathlib import Path

import nbformat
from pydantic import Field

from workbench.runbooks.params import RunbookParams


class ToyParams(RunbookParams):
    die_at: str = Field("", description="start | after_trials | after_result | raise | hang")
    token: str = Field("", description="a secret given as a parameter")
    note: str = Field("", description="free text (may hold an address)")
    secret_env: list[str] = Field(default_factory=list, description="env vars whose values are secret")


SETUP = """\
import os, time
import pandas as pd
from workbench.redact import Redactor
from workbench.runs import Run

run = Run.create("toy", data_dir=data_dir, run_id=run_id,
                 redactor=Redactor.for_params({"token": token, "secret_env": secret_env}))

def step(name):
    if die_at == name:
        os.kill(os.getpid(), 9)

step("start")"""

TRIALS = """\
pw = os.environ.get(secret_env[0], "") if secret_env else os.environ.get(globals().get("api_key_env") or "-", "")
print(f"using token={token} pw {pw} note {note}")
trials = pd.DataFrame([{"edits": [["--ep-size", "8"]], "outcome": "failed", "reused": False},
                       {"edits": [["--enable-nccl-nvls", True]], "outcome": "ready", "reused": False}])
run.table("trials", trials)
step("after_trials")
if die_at == "hang":
    (run.dir / "hanging").touch()  # the test's signal goes in now: inside the sleep, not a C call before it
    time.sleep(120)"""

RESULT = """\
result = {"status": "ok", "conclusion": "The toy concluded: --ep-size 8 breaks it.", "host_restored": True,
          "trials": [{"edits": [["--ep-size", "8"]], "outcome": "failed", "reused": False}],
          "params": {"token": token, "note": note}, "provenance": {"host": "toy-host", "gpu": "B300"}}
run.write_result(result)
step("after_result")"""


def notebook(path: Path) -> Path:
    """Write the toy runbook to ``path``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    code, md = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell
    nb.cells = [
        md("# Toy: a runbook in miniature\n\nIt records two trials and concludes."),
        code('die_at = ""\ntoken = ""\nnote = ""\nsecret_env = []\ndata_dir = "data"\nrun_id = ""\nssh_config = ""',
             metadata={"tags": ["parameters"]}),
        code(SETUP),
        code(TRIALS),
        code(RESULT),
        md("## Conclusion", metadata={"tags": ["conclusion"]}),
        code("from IPython.display import Markdown\nMarkdown(f\"**{result['conclusion']}**\")",
             metadata={"tags": ["conclusion"]}),
        md("## Trials table"),
        code("trials"),
        code('import altair as alt\nalt.Chart(trials).mark_bar().encode(x="outcome:N", y="count():Q")'),
        code('if die_at == "raise":\n    raise RuntimeError(f"boom with {token} at {note}")'),
        md("## Provenance", metadata={"tags": ["provenance"]}),
        code("print('provenance: toy-host, B300')", metadata={"tags": ["provenance"]}),
    ]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"toy-{i}"
    nbformat.write(nb, str(path))
    return path
