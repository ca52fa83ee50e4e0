"""The report's culprit view: readable signature with the hash as id, where (innermost frame and
file), ranks, the root-cause traceback collapsed, redacted values named — from a real bisect run's
result.json and trials.parquet, from the fields a newer bisect writes, and from a full 8-rank log."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.runbooks import explain, show
from workbench.runs import read_table

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runbooks"
RUN = FIXTURES / "bisect_run"


@pytest.fixture
def result() -> dict:
    return json.loads((RUN / "result.json").read_text())


@pytest.fixture
def trials() -> list[dict]:
    return read_table(RUN / "trials.parquet").to_dict(orient="records")


def test_an_older_result_gets_where_and_a_readable_signature_from_the_trials_log(result, trials) -> None:
    cublas, ep = (explain.view(c, trials) for c in result["culprits"])
    assert cublas.edits == "--ep-size 8, --enable-nccl-nvls"
    assert cublas.signature_id == "RuntimeError@bf5b7c54f7"  # the hash, kept as the id
    assert cublas.signature == ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling "
                                "cublasGemmStridedBatchedEx at forward_absorb_prepare (deepseek_v2.py)")
    assert (cublas.function, cublas.file, cublas.phase) == ("forward_absorb_prepare", "deepseek_v2.py",
                                                            "cuda_graph_capture")
    assert cublas.traceback.splitlines()[-1].startswith("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED")
    assert ep.where.startswith("dispatch (standard.py:") and ep.signature_id == "AttributeError@b18d5cd60d85"
    assert ep.redacted == ()


def test_the_fields_a_newer_bisect_writes_are_used_as_given(result) -> None:
    c = {**result["culprits"][0], "signature": "RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED in cublasGemm",
         "signature_id": "RuntimeError@bf5b7c54f7", "ranks": ["TP0", "TP1"], "traceback": "Traceback ...\nRuntimeError: x",
         "innermost_frame": {"function": "DeepseekV2AttentionMLA.forward_absorb_prepare",
                             "file": "/x/sglang/srt/models/deepseek_v2.py", "line": 121}}
    v = explain.view(c, [])
    assert v.signature == "RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED in cublasGemm"
    assert v.where == "DeepseekV2AttentionMLA.forward_absorb_prepare (deepseek_v2.py:121)"
    assert v.ranks == ("TP0", "TP1") and v.traceback.endswith("RuntimeError: x")


def test_ranks_come_from_a_log_that_names_them() -> None:
    log = (FIXTURES / "sim_ep8_nvls_variant.log").read_text()
    c = {"edits": [["--ep-size", "8"], ["--enable-nccl-nvls", True]], "signature": "RuntimeError@bf5b7c54f7",
         "exception_type": "RuntimeError", "phase": "cuda_graph_capture", "message": "CUDA error: x"}
    v = explain.view(c, [{"edits": c["edits"], "outcome": "failed", "log_excerpt": log}])
    assert len(v.ranks) == 8 and v.ranks[0] == "TP0 EP0"
    assert v.function == "forward_absorb_prepare"


def test_a_redacted_value_is_named_as_redacted() -> None:
    c = {"edits": [["--dist-init-addr", "[ADDRESS]:20000"]], "signature": "RuntimeError@abc1234567",
         "exception_type": "RuntimeError", "phase": "nccl_init", "message": "NCCL error"}
    v = explain.view(c, [])
    assert v.redacted == ("--dist-init-addr",)
    page = show.culprit_html(v)
    assert "value of --dist-init-addr redacted" in page
    assert "innermost frame not in the log" in page and "not named in the log excerpt" in page
    assert "redacted" in show.culprit_lines({"culprits": [c]})[0]


def test_the_conclusion_names_where_and_keeps_the_traceback_one_click_away(result, trials, tmp_path) -> None:
    run_dir = tmp_path / "runs" / result["run_id"]
    run_dir.mkdir(parents=True)
    (run_dir / "trials.parquet").write_bytes((RUN / "trials.parquet").read_bytes())
    result["params"]["data_dir"] = str(tmp_path)
    page = show.conclusion(result).data
    assert page.index("<h3>OK: 2 minimal culprit(s)") < page.index("forward_absorb_prepare")
    assert "<code>deepseek_v2.py</code>" in page and "cuda_graph_capture" in page
    assert page.count("<details class='wb-traceback'>") == 2 and "(id <code>RuntimeError@bf5b7c54f7</code>)" in page
    lines = show.culprit_lines(result)
    assert lines[0].startswith("culprit: --ep-size 8, --enable-nccl-nvls -> RuntimeError: CUDA error: ")
    assert lines[0].endswith("in cuda_graph_capture  [RuntimeError@bf5b7c54f7]")
    assert all(line.count("in cuda_graph_capture") == 1 for line in lines)  # the phase said once


@pytest.mark.parametrize(("message", "key"), [
    ("CUDA error: X when calling `f(a, (int)b, c)`", "CUDA error: X when calling f"),
    ("'NoneType' object has no attribute 'topk_ids'", "'NoneType' object has no attribute 'topk_ids'"),
    ("first\nsecond", "first"), (None, ""),
])
def test_key_message(message, key) -> None:
    assert explain.key_message(message) == key


def test_the_report_keeps_the_culprit_view_with_the_traceback_collapsed(result, tmp_path) -> None:
    import nbformat

    from workbench.runbooks.report import export_html

    run_dir = tmp_path / "runs" / result["run_id"]
    run_dir.mkdir(parents=True)
    (run_dir / "trials.parquet").write_bytes((RUN / "trials.parquet").read_bytes())
    result["params"]["data_dir"] = str(tmp_path)
    shown = show.conclusion(result)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Bisect"),
                nbformat.v4.new_code_cell("show.conclusion(result)", metadata={"tags": ["conclusion"]}, outputs=[
                    nbformat.v4.new_output("display_data", data={"text/html": shown.data, "text/plain": "<HTML>"})])]
    page = export_html(nb, run_dir).read_text()
    body = page[page.index("<h3>OK: 2 minimal culprit(s)"):]
    assert "forward_absorb_prepare" in body and "<summary>root-cause traceback (" in body
    details = re.search(r"<details class=[\"']wb-traceback[\"']>", body)
    assert details and details.start() < body.index("(int)num_batches")  # the full message only in the traceback


def test_a_signature_that_carries_its_phase_says_it_once() -> None:
    # New results carry the readable signature with its phase (issue 16); the line adds ranks only.
    c = {"edits": [["--ep-size", "8"]], "signature_id": "AttributeError@4b2fde3c34", "phase": "cuda_graph_capture",
         "signature": "AttributeError: 'NoneType' object has no attribute 'topk_ids' in cuda_graph_capture",
         "exception_type": "AttributeError", "ranks": ["TP0 EP0"]}
    (line,) = show.culprit_lines({"culprits": [c]})
    assert line.count("in cuda_graph_capture") == 1 and "cuda_graph_capture on TP0 EP0" in line
