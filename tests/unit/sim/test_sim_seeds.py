"""The seeds' four configurations against the packaged default fault file."""

from __future__ import annotations

import re

import pytest
from simhelpers import DDTREE

TP8 = ["--tp-size", "8", *DDTREE]


def test_tp8_ddtree_starts(start_server):
    s = start_server(TP8)
    assert s.wait_for("The server is fired up and ready to roll!")
    assert len(re.findall(r" TP\d\] Capture cuda graph end\.", s.text)) == 8
    assert re.search(
        r"\] Load weight end\. elapsed=[\d.]+ s, type=KimiK25ForConditionalGeneration", s.text
    )
    assert "Uvicorn running on http://127.0.0.1:" in s.text


def test_tp8_nvls_starts(start_server):
    s = start_server([*TP8, "--enable-nccl-nvls"])
    assert s.wait_for("The server is fired up and ready to roll!")
    assert "Scheduler hit an exception" not in s.text


@pytest.mark.parametrize(
    "extra",
    [["--enable-nccl-nvls"], ["--enable-nccl-nvls", "--enable-flashinfer-allreduce-fusion"]],
)
def test_ep8_nvls_fails_with_cublas_in_capture(start_server, extra):
    s = start_server([*TP8, "--ep-size", "8", *extra])
    rc = s.wait_exit()
    text = s.text
    assert rc == -9  # the launcher SIGKILLs itself, as kill_process_tree does
    headers = re.findall(
        r"^\[[\d\- :]+ TP(\d) EP(\d)\] Scheduler hit an exception: Traceback", text, re.M
    )
    assert sorted(int(t) for t, _ in headers) == list(range(8))
    assert all(t == e for t, e in headers)
    first = text.index("Scheduler hit an exception")
    assert "Capture cuda graph begin" in text[:first]
    assert "Capture cuda graph end" not in text
    assert (
        text.count(
            "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling "
            "`cublasGemmStridedBatchedEx(handle, opa, opb"
        )
        == 8
    )
    assert text.count("During handling of the above exception, another exception occurred:") == 8
    assert (
        text.count("Exception: Capture cuda graph failed: CUDA error: CUBLAS_STATUS_EXECUTION") == 8
    )
    for frame in (
        "sglang/srt/model_executor/cuda_graph_runner.py",
        "in _dummy_run",
        "in run_once",
        "sglang/srt/models/kimi_k25.py",
        "in forward_absorb_prepare",
        "q_nope_out = torch.bmm(q_nope.transpose(0, 1), self.w_kc)",
        "torch/nn/modules/module.py",
        "in run_scheduler_process",
    ):
        assert frame in text
    assert "torch/_C" not in text  # native frames never show
    assert "Received sigquit from a child process. It usually means the child failed." in text


def test_ep8_fails_with_nonetype_in_capture(start_server):
    s = start_server([*TP8, "--ep-size", "8"])
    assert s.wait_exit() == -9
    text = s.text
    assert text.count("AttributeError: 'NoneType' object has no attribute 'topk_ids'") == 8
    assert "Capture cuda graph failed" not in text  # not a RuntimeError: not wrapped
    assert "in _dummy_run" in text and "token_dispatcher/standard.py" in text
    assert "CUBLAS" not in text
