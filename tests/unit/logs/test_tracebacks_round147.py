"""What held-outs 147-150 (offline batch pipelines, deployment platforms, on-device runtimes, routers and gateways)
showed missing, each a general rule: the line formats of Android's logcat, nginx's error log and ExecuTorch's dateless
glog-style records; libc++'s older abort wording and Android's fatal-signal report; Dask's nanny restarting a worker
past its memory budget; the kubelet's failed probes."""

from __future__ import annotations

import pytest

from workbench.logformats import parse_line
from workbench.tracebacks import analyze


@pytest.mark.parametrize(("line", "fmt", "level", "message"), [
    ("2024-10-07 21:09:34.399 19864-19889 libc++abi               com.test.llama                        E  "
     "terminating with uncaught exception of type std::runtime_error: Failed to create the dialog.",
     "pylogging", "ERROR", "terminating with uncaught exception of type std::runtime_error: Failed to create the dialog."),
    ("10-07 21:09:34.399 19864 19889 F libc    : Fatal signal 6 (SIGABRT), code -1 (SI_QUEUE) in tid 19889",
     "pylogging", "CRITICAL", "Fatal signal 6 (SIGABRT), code -1 (SI_QUEUE) in tid 19889"),
    ("2024/04/16 13:58:38 [error] 1279#0: *20351 [kong] init.lua:405 [ai-proxy] path must be a string",
     "pylogging", "ERROR", "[kong] init.lua:405 [ai-proxy] path must be a string"),
    ("2024/04/16 13:58:38 [notice] 1#0: start worker processes", "pylogging", "INFO", "start worker processes"),
    ("E 00:00:00.707478 executorch:executor_runner.cpp:70] Failed to parse model file ../llama2.pte",
     "glog", "ERROR", "Failed to parse model file ../llama2.pte"),
])
def test_line_formats(line: str, fmt: str, level: str, message: str) -> None:
    parsed = parse_line(line)
    assert (parsed.format, parsed.level, parsed.message) == (fmt, level, message)


def test_libcxx_s_abort_under_logcat_s_tag_is_a_native_exception() -> None:
    log = ("2024-10-07 21:09:34.399 19864-19889 libc++abi               com.test.llama                        E  "
           "terminating with uncaught exception of type std::runtime_error: Failed to create the dialog.\n"
           "2024-10-07 21:09:34.399 19864-19889 libc                    com.test.llama                        A  "
           "Fatal signal 6 (SIGABRT), code -1 (SI_QUEUE) in tid 19889 (Thread-3), pid 19864 (com.test.llama)\n")
    analysis = analyze(log)
    assert [c.exception_type for c in analysis.cpp_exceptions] == ["std::runtime_error"]
    assert analysis.root_cause is not None and analysis.root_cause.exception_type == "std::runtime_error"


@pytest.mark.parametrize(("log", "kind", "said"), [
    ("Fatal signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0 in tid 5283 (mediapipe/5278), pid 5243\n",
     "fatal_signal", "Fatal signal 11 (SIGSEGV)"),
    ("2025-02-07 09:12:47,532 - distributed.nanny.memory - WARNING - Worker tcp://127.0.0.1:34349 (pid=342998) "
     "exceeded 95% memory budget. Restarting...\n", "oom_kill", "exceeded 95% memory budget"),
    ('Startup probe failed: Get "http://10.244.0.208:8000/health": dial tcp 10.244.0.208:8000: connect: connection '
     "refused\n", "error_line", "Startup probe failed"),
    # (held-out 154) an AMD GPU's page fault the driver will not retry
    ("[Tue Sep 10 09:37:08 2024] amdgpu 0000:25:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:144 vmid:3 "
     "pasid:32769, for process pt_main_thread pid 2919831 thread pt_main_thread pid 2919831)\n", "xid",
     "no-retry page fault"),
])
def test_reports_of_a_process_ended_or_refused(log: str, kind: str, said: str) -> None:
    analysis = analyze(log)
    assert [e.kind for e in analysis.events] == [kind]
    assert analysis.root_cause is not None and said in analysis.root_cause.message
