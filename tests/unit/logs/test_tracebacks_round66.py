"""Mechanisms added in the twenty-fourth stop: failures that are no Python stack and no ERROR record, from the
projects around the engines (held-out 65's misses), on lines in the shapes of real logs (the thread says which)."""

from __future__ import annotations

import pytest

from workbench.tracebacks import analyze

_ZAP = ('{"level":"Level(-2)","ts":"2025-07-21T16:54:54Z","caller":"manager/internal.go:196","msg":"Registering '
        'metrics http server extra handler","path":"/debug/pprof/mutex"}\n')


def test_a_go_panic_is_the_failure() -> None:
    """llm-d-router#255: the router's zap records, then Go's runtime ending the process on a nil dereference."""
    log = (_ZAP + "panic: runtime error: invalid memory address or nil pointer dereference\n"
           "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1da9531]\n\ngoroutine 1 [running]:\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line"
    assert "invalid memory address or nil pointer dereference" in rc.message


def test_a_go_runtime_fatal_error_is_the_failure_and_a_compilers_is_not_taken_for_one() -> None:
    rc = analyze(_ZAP + "fatal error: concurrent map writes\n\ngoroutine 41 [running]:\n").root_cause
    assert rc is not None and "concurrent map writes" in rc.message
    prose = analyze(_ZAP + "the panic: it was nothing\n").root_cause
    assert prose is None


@pytest.mark.parametrize("line, words", [
    # runpod worker-vllm#199: the worker's own line, glued to the pod id of its paste
    ("0s0n9esxgd0u45[error]worker exited with exit code 136", "worker exited with exit code 136"),
    # ray-project/ray#45179: the raylet's report of a node the GCS gave up on
    ("(raylet) The node with node id: 0f21 and address: 10.0.0.51 and node name: 10.0.0.51 has been marked dead "
     "because the detector has missed too many heartbeats from it.",
     "has been marked dead because the detector has missed too many heartbeats"),
])
def test_a_process_or_node_gone_is_the_failure(line: str, words: str) -> None:
    rc = analyze("INFO 03-19 08:42:55 [api_server.py:1] started\n" + line + "\n").root_cause
    assert rc is not None and rc.kind == "log_line" and words in rc.message


def test_exit_code_0_is_no_failure() -> None:
    assert analyze("worker exited with exit code 0\n").root_cause is None


@pytest.mark.parametrize("line, phase", [
    # lightllm#633: uvicorn's access line for a request the server failed inside, at INFO
    ('INFO:     172.30.2.195:9361 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error', "serving"),
    # dynamo#1372: the frontend's own words for a request it could not serve
    ('chat_completions: dynamo_llm: http::service::openai: Internal server error: Failed to generate completions: no '
     'instances found for endpoint "instances/dynamo/Processor/chat/completions"', "serving"),
    # gpustack#2644: llama-box refusing an argument it does not know, before anything starts
    ("Unknown argument: --origin-rpc-server-main-gpu", "startup_other"),
])
def test_a_quiet_failure_is_the_last_resort_with_its_phase(line: str, phase: str) -> None:
    rc = analyze(line + "\n").root_cause
    assert rc is not None and rc.kind == "log_line" and rc.phase == phase
    assert rc.message == line.removeprefix("INFO:").strip()  # (the record's level is no part of what it says)


def test_a_503_while_the_server_loads_is_no_failure() -> None:
    """A readiness probe answered 503 is a server not ready yet (the simulator prints them at every start)."""
    log = 'INFO:     127.0.0.1:50778 - "GET /health HTTP/1.1" 503 Service Unavailable\n'
    assert analyze(log).root_cause is None


def test_rays_memory_monitor_killing_a_worker_is_the_failure_before_a_cut_stack() -> None:
    """EasyR1#185: the raylet's C++ record (its own head: time, one-letter level, pid, thread) under the log monitor's
    "(raylet) " prefix says the memory monitor killed a worker; the driver's stack after it is cut before its
    exception line. The kill is what failed."""
    log = ("(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors) "
           "killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 351e, IP: "
           "10.95.143.76) over the last time period.\n(raylet) \n(raylet) Refer to the documentation on how to address "
           "the out of memory issue: https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html.\n"
           'Traceback (most recent call last):\n  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
           "    return _run_code(code, main_globals, None,\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.line == 1
    assert rc.message.startswith("1 Workers (tasks / actors) killed due to memory pressure (OOM)")
