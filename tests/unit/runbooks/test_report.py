"""report.html: conclusion first, provenance last, code collapsed, charts inline, nothing from the network."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import altair as alt
import nbformat
import pandas as pd
import pytest

from workbench.runbooks.report import (
    arrange,
    charts_to_svg,
    export_fallback,
    export_html,
    external_refs,
    render_html,
)

TRIALS = pd.DataFrame({"edits": ["--ep-size 8", "--enable-nccl-nvls"], "outcome": ["failed", "ready"]})


def chart_output() -> nbformat.NotebookNode:
    chart = alt.Chart(TRIALS).mark_bar().encode(x="edits:N", y="count():Q", color="outcome:N")
    spec = chart.to_dict()
    mime = f"application/vnd.vegalite.v{alt.SCHEMA_VERSION.lstrip('v').split('.')[0]}+json"
    return nbformat.v4.new_output("display_data", data={mime: spec, "text/plain": "alt.Chart(...)"})


def executed(*, conclusion_ran: bool = True) -> nbformat.NotebookNode:
    """A runbook notebook as executed: provenance first and conclusion last, to be rearranged."""
    nb = nbformat.v4.new_notebook()
    md, code, out = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell, nbformat.v4.new_output
    conclusion_out = [out("display_data", data={"text/markdown": "### The culprit is --ep-size 8",
                                                "text/plain": "<Markdown>"})] if conclusion_ran else []
    nb.cells = [
        md("# Bisect: which flag edits break a working unit?\n\nIntro."),
        code("host = 'gpu-a'", metadata={"tags": ["parameters"]}),
        code('# Parameters\nhost = "gpu-b"\n', metadata={"tags": ["injected-parameters"]}),
        md("## Provenance", metadata={"tags": ["provenance"]}),
        code("show.provenance(result)", metadata={"tags": ["provenance"]},
             outputs=[out("display_data", data={"text/html": "<b>provenance: gpu-b, B300, driver 580</b>",
                                                "text/plain": ""})]),
        md("## Trials"),
        code("rb.trials_frame(result)", outputs=[out("execute_result", execution_count=3, data={
            "text/html": TRIALS.to_html(), "text/plain": str(TRIALS)})]),
        code("rb.trials_chart(result)", outputs=[chart_output()]),
        code("HTML(cdn_chart)", outputs=[out("display_data", data={"text/html": (
            '<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>'
            '<link rel="stylesheet" href="//cdn.example.org/x.css"><div>chart from a CDN</div>'), "text/plain": ""})]),
        md("## Conclusion", metadata={"tags": ["conclusion"]}),
        code("show.conclusion(result)", metadata={"tags": ["conclusion"]}, outputs=conclusion_out),
    ]
    return nb


RESULT_FAILED = {"run_id": "20260101-000000-bisect-abcd", "status": "failed", "conclusion": "Run failed (kernel_died)",
                 "failure": {"kind": "kernel_died", "message": "the kernel died"}, "host_restored": True,
                 "trials": [{"edits": [["--ep-size", "8"]]}], "params": {"host": "gpu-b"},
                 "provenance": {"host": "gpu-b", "gpu": "B300"}}


def test_cells_are_rearranged_for_a_reader():
    nb = arrange(executed())
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert nb.cells[0].source.startswith("# Bisect")
    assert tags[1] == ["conclusion"] and tags[2] == ["conclusion"]
    assert tags[-2:] == [["parameters"], ["injected-parameters"]]
    assert ["provenance"] in tags[-5:]


def test_report_reads_top_down(tmp_path):
    html = export_html(executed(), tmp_path).read_text()
    pos = [html.index(s) for s in ("Bisect: which flag", "The culprit is --ep-size 8", "<table", "provenance: gpu-b",
                                   '# Parameters')]
    assert pos == sorted(pos), "title, conclusion, trials table, provenance, parameters"
    assert "<title>Bisect: which flag edits break a working unit?</title>" in html


def test_no_external_references(tmp_path):
    html = export_html(executed(), tmp_path).read_text()
    assert external_refs(html) == []
    assert not re.search(r"""<(?:script|img|iframe)\b[^>]*\bsrc\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert not re.search(r"""<link\b[^>]*\bhref\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert "require.min.js" not in html and "MathJax" not in html and "chart from a CDN" in html


def test_external_refs_finds_what_would_load():
    assert external_refs('<script src="https://cdn.x/y.js"></script>')
    assert external_refs("<img src='//cdn.x/y.png'>")
    assert external_refs('<style>@import url("https://fonts.x/css");</style>')
    assert external_refs('<script type="module">await import("https://cdn.x/m.mjs")</script>')
    assert not external_refs('<a href="https://github.com/x">a link is no load</a><img src="data:image/png;base64,AA">')


def test_code_is_hidden_but_available(tmp_path):
    html = export_html(executed(), tmp_path).read_text()
    blocks = re.findall(r"<details class=\"wb-code\"[^>]*>", html)
    assert blocks and all(" open" not in b for b in blocks)
    assert "trials_frame" in html  # in a collapsed block, not gone
    assert "In&nbsp;[" not in html  # no prompts


def test_charts_become_inline_svg():
    nb = executed()
    assert charts_to_svg(nb) == 1
    data = nb.cells[7].outputs[0].data
    assert "image/svg+xml" in data and not any("vegalite" in k for k in data)
    assert data["image/svg+xml"].lstrip().startswith("<svg")


def test_altairs_cdn_html_output_becomes_svg_and_other_remote_code_a_note():
    chart = alt.Chart(TRIALS).mark_bar().encode(x="edits:N", y="count():Q")
    with alt.renderers.enable("html"):
        bundle = chart._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert external_refs(data["text/html"])  # it would load Vega from a CDN
    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output
    nb.cells = [nbformat.v4.new_code_cell("chart", outputs=[
        out("display_data", data={"text/html": data["text/html"], "text/plain": ""}),
        out("display_data", data={"text/html": '<script>import("https://esm.sh/x")</script>', "text/plain": ""})])]
    assert charts_to_svg(nb) == 1
    first, second = (o.data for o in nb.cells[0].outputs)
    assert "image/svg+xml" in first and "text/html" not in first
    assert "left out of the offline report" in second["text/html"]


def test_failed_run_with_cells_not_run_takes_its_conclusion_from_the_result(tmp_path):
    html = render_html(executed(conclusion_ran=False), result=RESULT_FAILED)
    assert "Run failed (kernel_died)" in html and "from result.json" in html
    assert html.index("Run failed (kernel_died)") < html.index("<table")
    assert "20260101-000000-bisect-abcd" in html  # in the title


def test_failed_run_whose_conclusion_ran_shows_a_status_block():
    html = render_html(executed(), result=RESULT_FAILED)
    assert html.index("Run failed: kernel_died") < html.index("The culprit is --ep-size 8")
    assert "Host restored: <b>yes</b>" in html


def test_report_passes_the_redactor(tmp_path):
    nb = executed()
    nb.cells[4].outputs[0].data["text/html"] += "<p>10.77.3.4</p>"
    assert "10.77.3.4" not in export_html(nb, tmp_path).read_text()


def test_renders_offline_in_a_real_browser(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser check, but chromium is not installed")
        pytest.skip("chromium is not installed")
    path = export_html(executed(), tmp_path)
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()],
                          capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "The culprit is --ep-size 8" in dom and "<svg" in dom and "<details" in dom
    assert dom.index("The culprit is --ep-size 8") < dom.index("provenance: gpu-b")


def test_workbench_report_sanitizes_a_plain_papermill_notebook_into_its_run_dir(tmp_path, capsys):
    from workbench.cli import main

    run_dir = tmp_path / "data" / "runs" / "20260101-000000-bisect-abcd"
    nb = executed()
    nb.metadata["papermill"] = {"parameters": {"host": "gpu-b", "edits": {"--api-key": "tok-CANARY-123"}}}
    nb.cells[2].source = '# Parameters\nhost = "gpu-b"\nedits = {"--api-key": "tok-CANARY-123"}\n'
    nb.cells[6].outputs.insert(0, nbformat.v4.new_output("stream", name="stdout", text=f"run directory: {run_dir}\n"))
    raw = tmp_path / "out.ipynb"
    nbformat.write(nb, str(raw))
    assert main(["report", str(raw)]) == 0
    assert str(run_dir / "report.html") in capsys.readouterr().out
    for name in ("notebook.ipynb", "report.html"):
        assert "tok-CANARY-123" not in (run_dir / name).read_text()
    assert main(["report", str(run_dir)]) == 0  # re-render from the run directory


def test_a_plain_report_when_the_notebook_cannot_be_rendered(tmp_path):
    html = export_fallback(tmp_path, RESULT_FAILED, "FileNotFoundError: no notebook").read_text()
    assert "could not be rendered" in html and "Run failed: kernel_died" in html and "gpu-b" in html
    assert external_refs(html) == []
