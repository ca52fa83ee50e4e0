"""llama-box (gpustack's llama.cpp server) logs each request it takes: a failure after one is served."""

from __future__ import annotations

from workbench.tracebacks import analyze

_LOG = """0.04.466.952 I srv        log_server_request: rid 4441010 | GET /v1/models 10.0.0.7:53924
0.17.365.320 I srv        log_server_request: rid 17339378 | POST /v1/chat/completions 10.0.0.7:53941
0.17.512.622 E ggml_cuda_compute_forward: ADD failed
0.17.512.848 E CUDA error: no kernel image is available for execution on the device
"""


def test_a_failure_after_a_request_llama_box_took_is_serving() -> None:
    root = analyze(_LOG).root_cause
    assert root is not None and "no kernel image" in (root.message or "")
    assert root.phase == "serving"
    before = analyze(_LOG.split("\n", 2)[2]).root_cause  # the same failure with no request before it
    assert before is not None and before.phase != "serving"
