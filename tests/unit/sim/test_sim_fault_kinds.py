"""Every error kind of the catalogue, in a phase it can strike in, on the ranks the file names."""

from __future__ import annotations

import re
import urllib.request

import pytest
from simhelpers import write_faults

CASES = [
    (
        "cublas",
        "warmup",
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling",
        'status = "CUBLAS_STATUS_NOT_SUPPORTED"',
        "Prefill batch.",
    ),
    (
        "cuda_oom",
        "kv_cache_alloc",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate",
        "",
        "Load weight end.",
    ),
    (
        "nccl",
        "nccl_init",
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "",
        "Init torch distributed begin.",
    ),
    (
        "nonetype",
        "warmup",
        "AttributeError: 'NoneType' object has no attribute 'topk_ids'",
        "",
        "Prefill batch.",
    ),
    (
        "illegal_memory_access",
        "cuda_graph_capture",
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        "",
        "Capture cuda graph begin.",
    ),
    (
        "weight_key_error",
        "weight_loading",
        "KeyError: 'model.layers.9.mlp.gate.bias'",
        'name = "model.layers.9.mlp.gate.bias"',
        "Load weight begin.",
    ),
]


@pytest.mark.parametrize(
    ("kind", "phase", "message", "params", "before"), CASES, ids=[c[0] for c in CASES]
)
def test_kind_strikes_listed_ranks(start_server, tmp_path, kind, phase, message, params, before):
    path = write_faults(
        tmp_path,
        f"""
version = 1
[[fault]]
id = "k"
phase = "{phase}"
kind = "{kind}"
ranks = [1]
when.all_of = ["--tp-size=4"]
[fault.params]
{params}
""",
    )
    s = start_server(["--tp", "4", "--sim-fault-file", str(path)])
    assert s.wait_exit() == -9
    text = s.text
    ranks = re.findall(r"^\[[\d\- :]+ TP(\d)\] Scheduler hit an exception", text, re.M)
    assert ranks == ["1"]
    assert message in text
    assert before in text[: text.index("Scheduler hit an exception")]
    assert "Received sigquit from a child process" in text


def test_serving_fault_after_requests(start_server, tmp_path):
    path = write_faults(
        tmp_path,
        """
version = 1
[[fault]]
phase = "serving"
kind = "illegal_memory_access"
after_requests = 2
""",
    )
    s = start_server(["--tp", "4", "--sim-fault-file", str(path)])
    assert s.wait_for("The server is fired up and ready to roll!")
    body = b'{"prompt": "hello", "max_tokens": 4, "ignore_eos": true}'
    req = urllib.request.Request(f"{s.url}/v1/completions", data=body)
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
    with pytest.raises(OSError):
        urllib.request.urlopen(
            urllib.request.Request(f"{s.url}/v1/completions", data=body), timeout=30
        )
    assert s.wait_exit() == -9
    assert s.text.count("torch.AcceleratorError: CUDA error: an illegal memory access") == 4
    assert "in process_batch_result" in s.text and "in event_loop_overlap" in s.text


def test_bad_fault_file_is_a_startup_error(start_server, tmp_path):
    path = write_faults(
        tmp_path,
        """
version = 1
[[fault]]
phase = "cuda_graph_capture"
kind = "cublas"
when.all_of = ["--no-such-flag=1"]
""",
    )
    s = start_server(["--tp", "4", "--sim-fault-file", str(path)])
    assert s.wait_exit() == 2
    assert f"{path}: fault[0] (fault-0).when.all_of: '--no-such-flag=1': unknown flag" in s.text
    assert "Scheduler" not in s.text
