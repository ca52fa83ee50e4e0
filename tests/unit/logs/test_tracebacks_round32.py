"""Mechanisms added from misses of held-out 32 (vLLM and SGLang, measured once untuned first), each on lines written
in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.logformats import _parse
from workbench.tracebacks import analyze


def test_terminate_without_an_active_exception_is_the_failure_not_the_abort_after_it() -> None:
    """sglang#29955: at shutdown "terminate called without an active exception" (std::terminate with nothing thrown),
    then faulthandler's "Fatal Python error: Aborted": the C++ line says what failed; the abort ends its message."""
    log = "\n".join((
        "[2026-07-02 14:16:25] Gracefully exiting... Remaining number of requests 0.",
        "terminate called without an active exception",
        "Fatal Python error: Aborted",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.message == "terminate called without an active exception"


def test_a_cloud_logging_severity_and_time_before_a_colour_code_that_lost_its_esc() -> None:
    """vllm#15784: Google Cloud Logging's export puts the entry's severity and RFC 3339 time before each line, and the
    worker's colour codes lost their ESC ("INFO 2025-...Z [1;36m(VllmWorkerProcess pid=630)[0;0m ERROR ...")."""
    line = ("INFO 2025-03-30T23:51:21.299840450Z [1;36m(VllmWorkerProcess pid=630)[0;0m ERROR 03-30 23:51:21 "
            "multiproc_worker_utils.py:243] KeyError: 'layers.32.self_attn.qkv_proj.k_scale'")
    parsed = _parse(line)[0]
    assert parsed.time == "03-30 23:51:21"  # the writer's own time where it gives one
    assert parsed.process == "VllmWorkerProcess" and parsed.level == "ERROR"
    assert parsed.message == "KeyError: 'layers.32.self_attn.qkv_proj.k_scale'"
    plain = _parse("ERROR 2025-03-30T23:51:21.303592681Z Traceback (most recent call last):")[0]
    assert plain.time == "2025-03-30T23:51:21.303592681Z" and plain.message == "Traceback (most recent call last):"


def test_a_key_error_naming_a_quantised_checkpoints_scale_is_weight_loading() -> None:
    """vllm#15784: the worker's KeyError for a ModelOpt FP8 checkpoint's "...qkv_proj.k_scale" (the loader's lookup of
    a tensor among the model's parameters), the main process's stack cut above it: weight loading."""
    p = "ERROR 2025-03-30T23:51:21.303592681Z [rank0]: "
    log = "\n".join((
        "INFO 2025-03-30T23:51:21.299840450Z [1;36m(VllmWorkerProcess pid=630)[0;0m ERROR 03-30 23:51:21 "
        "multiproc_worker_utils.py:243] KeyError: 'layers.32.self_attn.qkv_proj.k_scale'",
        p + "Traceback (most recent call last):",
        p + 'File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        p + "return _run_code(code, main_globals, None,",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "KeyError" and rc.phase == "weight_loading"
