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


@pytest.mark.parametrize(("log", "said", "phase"), [
    # Slurm's slurmd log: its error() under the time and the step
    ("[2024-07-05T14:10:54.164] [51.0] pyxis: starting container: pyxis_51.0\n"
     "[2024-07-05T14:11:11.152] [51.0] error: pyxis: couldn't start container\n",
     "pyxis: couldn't start container", "startup_other"),
    # relayed by the programs around it
    ("qdo-srun.py: srun#64: slurmstepd: error: Detected 1 oom_kill event in StepId=43622791.67. Some of the step "
     "tasks have been OOM Killed.\n", "Detected 1 oom_kill event", "unknown"),
    # llama.cpp's grammar parser as ollama's runner prints it, behind compose's prefix: a request's grammar
    ('ollama  | parse: error parsing grammar: unknown escape at \\d"{4,4} "-\\d"{2,2} "\n',
     "error parsing grammar: unknown escape", "serving"),
    # no level, a time before it
    ("[2025-06-23 07:22:00] Error in parse_streaming_increment: Expecting value: line 1 column 1 (char 0)\n",
     "Error in parse_streaming_increment: Expecting value", "unknown"),
    # Rust's anyhow under TEI's "Error:": the deepest cause is in the message
    ("text-embeddings-1  | Error: Could not create backend\ntext-embeddings-1  | \ntext-embeddings-1  | Caused by:\n"
     "text-embeddings-1  |     Could not start backend: Runtime compute cap 52 is not compatible with compile time "
     "compute cap 75\n", "Runtime compute cap 52 is not compatible", "startup_other"),
    # a CUDA sample's check, as a GPU validator runs it
    ("[Vector addition of 50000 elements]\nFailed to allocate device vector A (error code CUDA driver version is "
     "insufficient for CUDA runtime version)!\n", "CUDA driver version is insufficient", "unknown"),
    ("[task 2025-07-01T05:06:30.004+00:00] [train] nvidia-smi failed with return code 18\n"
     "[task 2025-07-01T05:06:30.005+00:00] [train] [nvidia-smi(stdout)] Failed to initialize NVML: Driver/library "
     "version mismatch\n", "Failed to initialize NVML: Driver/library version mismatch", "startup_other"),
    # ONNX Runtime's own error record, its severity letter the level
    ("2025-12-28 12:17:36.369097028 [E:onnxruntime:, inference_session.cc:2280 operator()] Exception during "
     "initialization: /onnxruntime/ov_interface.cc:79 Exception while Reading network\n",
     "Exception while Reading network", "weight_loading"),
])
def test_failure_lines_of_programs_with_no_level(log: str, said: str, phase: str) -> None:
    root = _root(log)
    assert root is not None and root[0] == "log_line" and said in root[1] and root[2] == phase


@pytest.mark.parametrize("log", [
    "note: error is expected here when the cache is cold\n",
    "error log:INFO 07-01 10:00:00 [api_server.py:1] args: Namespace(host=None)\n",  # prose glued to a record
    "we saw error as follow:\n",
])
def test_words_near_error_that_report_none(log: str) -> None:
    assert analyze(log).root_cause is None


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


@pytest.mark.parametrize(("text", "phase"), [
    ('docker: Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]].',
     "startup_other"),
    ("common_chat_templates_init: failed to parse chat template (defaulting to chatml): Expected closing block tag",
     "startup_other"),
    ("KeyError: 'invalid tool call parser: openai (chose from { deepseek_v3, glm45, hermes })'", "startup_other"),
    ("[2024-07-05T14:11:11.152] [51.0] error: pyxis: couldn't start container", "startup_other"),
    ("The engine plan file is not compatible with this version of TensorRT, expecting library version 10.3",
     "weight_loading"),
])
def test_words_that_name_a_step(text: str, phase: str) -> None:
    assert decide_phase((), (text,)) == phase


def test_a_reranker_s_rerank_is_a_request() -> None:
    frames = [("/opt/inference/xinference/core/model.py", "_call_wrapper", None),
              ("/opt/inference/xinference/model/rerank/core.py", "rerank", None)]
    assert decide_phase(frames) == "serving"
