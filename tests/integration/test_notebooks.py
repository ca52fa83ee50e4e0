"""Every notebook in notebooks/ executes top to bottom (papermill), on the testbed where it needs hosts.

``NOTEBOOKS`` names each one with what it needs; a notebook added to notebooks/ without an
entry here fails ``test_every_notebook_is_listed``, so none is left unexecuted.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).parents[2]
NB_DIR = ROOT / "notebooks"
# name -> needs the testbed
NOTEBOOKS = {
    "workbench.ipynb": True,
    "journal_to_pandas.ipynb": True,
    "tracebacks_of_a_log.ipynb": False,
    "past_run.ipynb": False,
}


def test_every_notebook_is_listed():
    assert sorted(p.name for p in NB_DIR.glob("*.ipynb")) == sorted(NOTEBOOKS)


def test_committed_notebooks_carry_no_outputs():
    for name in NOTEBOOKS:
        nb = nbformat.read(NB_DIR / name, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{name}: commit it without outputs"


def execute(name: str, tmp_path: Path, **params) -> nbformat.NotebookNode:
    import papermill

    out = tmp_path / name
    papermill.execute_notebook(str(NB_DIR / name), str(out), parameters=params, cwd=str(NB_DIR),
                               kernel_name="python3", progress_bar=False, execution_timeout=300)
    return nbformat.read(out, as_version=4)


def text_of(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            parts.append(o.get("text", ""))
            parts.append(str(o.get("data", {}).get("text/plain", "")))
            parts.append(str(o.get("data", {}).get("text/html", "")))
    return "\n".join(parts)


@pytest.mark.testbed
def test_workbench_panel_notebook(testbed, tmp_path):
    nb = execute("workbench.ipynb", tmp_path)
    first = nb.cells[0]
    assert "application/vnd.jupyter.widget-view+json" in first.outputs[0]["data"]


@pytest.mark.testbed
def test_journal_to_pandas(testbed, tmp_path):
    nb = execute("journal_to_pandas.ipynb", tmp_path, host="gpu-b", lines=200)
    text = text_of(nb)
    assert "message" in text and "rank" in text


def test_tracebacks_of_a_log(tmp_path):
    text = text_of(execute("tracebacks_of_a_log.ipynb", tmp_path))
    assert "AttributeError" in text and "TP7 EP7" in text and "cuda_graph_capture" in text


def test_past_run(tmp_path):
    """A real (tiny) sweep against the fixed-schedule server, saved as the panel saves it, then plotted."""
    from workbench.bench import LoadSpec, local_runner, run_sweep
    from workbench.bench.fixedserver import FixedScheduleServer
    from workbench.runs import Run

    with FixedScheduleServer(ttft_ms=5, itl_ms=2) as url:
        res = run_sweep(LoadSpec(url=url, model="fixed", num_requests=4, output_len=8, input_len=8, warmup=0),
                        [1, 2], runner=local_runner(progress=False), labels={"variant": "fixed"})
    run = Run.create("bench", data_dir=tmp_path / "data")
    run.table("results", res.results)
    run.write_result({"status": "ok", "host": "local", "conclusion": "fixed"})
    text = text_of(execute("past_run.ipynb", tmp_path, data_dir=str(tmp_path / "data")))
    assert run.id in text and "output_throughput" in text


def test_past_run_without_runs(tmp_path):
    text = text_of(execute("past_run.ipynb", tmp_path, data_dir=str(tmp_path / "empty")))
    assert "run a benchmark from the panel first" in text
