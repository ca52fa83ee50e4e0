"""Failures that nothing but their own kind or words place at start-up: a module that would not import (a lazy import
inside a served request keeps the serving phase its frames give), a message that says "on startup"; and a collective
library's transports failing, which connect its ranks as a communicator is set up; a model file the loader cannot use."""

from __future__ import annotations

import pytest

from workbench.tracebacks import analyze


@pytest.mark.parametrize("log", [
    "ImportError: [sgl_kernel] CRITICAL: Could not load any common_ops library!\n",
    "Traceback (most recent call last):\n  File \"/app/modules/models.py\", line 12, in load\n"
    "    from exllamav2 import ExLlamaV2\nModuleNotFoundError: Nenhum m\u00f3dulo chamado 'exllamav2'\n",
    "Traceback (most recent call last):\n  File \"/app/run.py\", line 3, in <module>\n    import flash_attn\n"
    "ImportError: flash_attn_2_cuda.cpython-312.so: cannot open shared object file\n\n"
    "The above exception was the direct cause of the following exception:\n\n"
    "Traceback (most recent call last):\n  File \"/app/run.py\", line 5, in <module>\n    raise RuntimeError(e)\n"
    "RuntimeError: flash-attn is broken\n",
])
def test_an_import_failure_with_nothing_else_is_startup(log: str) -> None:
    root = analyze(log).root_cause
    assert root is not None and root.phase == "startup_other"


def test_an_import_inside_a_served_request_stays_serving() -> None:
    log = ("Traceback (most recent call last):\n"
           "  File \"/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py\", line 300, in run_busy_loop\n"
           "    self._process_engine_step()\n"
           "  File \"/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py\", line 320, in _process_engine_step\n"
           "    import outlines\n"
           "ModuleNotFoundError: No module named 'outlines'\n")
    root = analyze(log).root_cause
    assert root is not None and root.phase == "serving"


def test_another_error_with_nothing_else_stays_unknown() -> None:
    root = analyze("ValueError: the value is wrong\n").root_cause
    assert root is not None and root.phase == "unknown"


def test_a_message_that_says_on_startup_is_startup() -> None:
    log = ("(EngineCore_DP0 pid=6940) ValueError: Free memory on device cuda:1 (19.77/22.05 GiB) on startup is less than "
           "desired GPU memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization.\n")
    root = analyze(log).root_cause
    assert root is not None and root.phase == "startup_other"


@pytest.mark.parametrize("line", [
    "bm-h100-02:630335:630409 [2] transport/nvls.cc:254 NCCL WARN Cuda failure 1 'invalid argument'",
    "host:461:502 [1] /build/rccl/hipify/src/transport/p2p.cc:239 NCCL WARN hipIpcGetMemHandle failed : invalid argument",
    "[ERROR] HCCL(2717288,python3):2025-07-23-03:47:57.070.463 [hccl_socket.cc:100] [2717288][HcclSocket][Listen] "
    "socket type[1], listen on ip[192.0.2.160] and specific port[16666] fail.",
    "host:11172:11249 [3] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 192.0.2.7<51577> failed : Software "
    "caused connection abort",
    "(RayWorkerWrapper pid=933, ip=192.0.2.24) [rank1]:[E528 08:52:46.164295950 ProcessGroupGloo.cpp:145] Gloo "
    "connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
    "RuntimeError: The server socket has failed to listen on any local network address. port: 46571, useIpv6: 0, code: -9",
])
def test_a_collective_librarys_transport_failing_is_communicator_set_up(line: str) -> None:
    root = analyze(line + "\n").root_cause
    assert root is not None and root.phase == "nccl_init"


@pytest.mark.parametrize("log", [
    "Traceback (most recent call last):\n  File \"/app/app.py\", line 10, in <module>\n"
    "    model = Llama(model_path=path, n_ctx=4096)\n"
    "  File \"/usr/lib/python3.10/site-packages/llama_cpp/llama.py\", line 368, in __init__\n"
    "    raise ValueError(f\"Model path does not exist: {model_path}\")\n"
    "ValueError: Model path does not exist: /app/models/model.gguf\n",
    "gguf_init_from_file: invalid magic characters 'tjgg'\n"
    "llama_load_model_from_file: failed to load model\n"
    "Traceback (most recent call last):\n  File \"/home/user/app/app.py\", line 12, in <module>\n"
    "    llm = Llama(model_path=path)\n"
    "ValueError: Failed to load model from file: /home/user/llama-2-7b-chat.ggmlv3.q4_1.bin\n",
])
def test_a_model_file_the_loader_cannot_use_is_weight_loading(log: str) -> None:
    root = analyze(log).root_cause
    assert root is not None and root.phase == "weight_loading"


@pytest.mark.parametrize("line", [
    "[2025-12-15 15:19:22.681+08:00] [38] [452] [server] [ERROR] [http_server.cpp:163] : [MIE04E02041C] [endpoint] "
    "Failed to listen 172.17.0.3:40032, please check if business ip and port are legal.",
    "EE1001: [PID: 42] 2025-11-10-16:26:28.542.748 The argument is invalid.Reason: Set visible device failed, invalid "
    "device=6, input visible devices:6",
    "slurmstepd: error: pyxis:     [ERROR] URL https://registry.example/v2/img/manifests/latest returned error code: 401 "
    "Unauthorized",
])
def test_a_process_refused_what_it_starts_with_is_startup(line: str) -> None:
    root = analyze(line + "\n").root_cause
    assert root is not None and root.phase == "startup_other"
