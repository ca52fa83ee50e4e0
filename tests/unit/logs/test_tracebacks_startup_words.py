"""Failures that nothing but their own kind or words place at start-up: a module that would not import (a lazy import
inside a served request keeps the serving phase its frames give), a message that says "on startup"."""

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
