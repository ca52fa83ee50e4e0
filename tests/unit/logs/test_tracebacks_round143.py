"""What held-outs 143-146 (embedding and reranker servers, structured output and tool parsers, quantization tools, GPU
containers and drivers) showed missing, each a general rule: a program's own "error: ..." behind the programs that
relay it (Slurm, ollama's runner), "Error in <where>: ..." and "Error: ..." with no level behind a service's prefix,
Rust's "Caused by:" chain under a program's "Error:", a usage line and the refusal printed with it, NVML and CDI
refusals, a CUDA sample's "(error code ...)", a severity tag ("[E ...]", ONNX Runtime's "[E:onnxruntime:") as the last
resort; and words that place a failure (a container runtime finding no GPU, a chat template or a parser's name read at
start-up, a request's grammar, a TensorRT plan or an ONNX model read in)."""

from __future__ import annotations

import pytest

from workbench.phases import decide_phase
from workbench.tracebacks import analyze


def _root(log: str) -> tuple[str | None, str, str] | None:
    root = analyze(log).root_cause
    return None if root is None else (root.kind, root.message, root.phase)


@pytest.mark.parametrize(("log", "said"), [
    # the refusal a program printed with its usage line
    ("$ ./build/bin/llama-box -m x.gguf --chat-template foo -n 90\n\n"
     "Invalid argument: --chat-template, use one of the built-in templates\nusage: ./build/bin/llama-box [options]\n",
     "Invalid argument: --chat-template"),
    # argparse's error, printed under the usage it wraps over many lines
    ("usage: vllm [-h] [-v]\n            {chat,complete,serve,bench}\n"
     "vllm: error: unrecognized arguments: --enable-metrics\n", "unrecognized arguments: --enable-metrics"),
    # a window that ends in the usage: the usage line itself, a server's record before it no refusal
    ("INFO 05-05 01:45:19 [__init__.py:239] Automatically detected platform cuda.\n"
     "usage: api_server.py [-h] [--host HOST] [--port PORT]\n", "usage: api_server.py [-h]"),
])
def test_a_usage_line_and_the_refusal_printed_with_it(log: str, said: str) -> None:
    root = _root(log)
    assert root is not None and said in root[1] and root[2] == "startup_other"


def test_a_cdi_device_the_runtime_cannot_resolve() -> None:
    log = ("  Warning  Failed     10s (x2 over 10s)  kubelet            Error: failed to create containerd task: failed "
           "to create shim task: OCI runtime create failed: could not apply required modification to OCI specification: "
           "error modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=GPU-8a4e\n")
    assert _root(log) == ("log_line", log.strip(), "startup_other")


def test_a_reranker_s_rerank_is_a_request() -> None:
    frames = [("/opt/inference/xinference/core/model.py", "_call_wrapper", None),
              ("/opt/inference/xinference/model/rerank/core.py", "rerank", None)]
    assert decide_phase(frames) == "serving"
