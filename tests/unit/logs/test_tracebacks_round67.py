"""Mechanisms added in the twenty-fifth stop, from held-out 66's misses (measured untuned first): a start's stack cut
before its exception line says less than the error record above it, and a log can end inside an error record's first
word.  Lines in the shapes of the real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze

# vllm-ascend#2117: a worker's error record, then the engine's own stack that only waited for the workers, cut
_ASCEND = (
    "(VllmWorker rank=10 pid=5568) ERROR 07-30 10:15:05 [multiproc_executor.py:487] [ERROR] 2025-07-30-10:15:05 "
    "(PID:5568, Device:10, RankID:-1) ERR01100 OPS call acl api failed\n"
    "ERROR 07-30 10:15:09 [core.py:586] EngineCore failed to start.\n"
    "ERROR 07-30 10:15:09 [core.py:586] Traceback (most recent call last):\n"
    'ERROR 07-30 10:15:09 [core.py:586]   File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 577, in run_engine_core\n'
    "ERROR 07-30 10:15:09 [core.py:586]     engine_core = EngineCoreProc(*args, **kwargs)\n"
    'ERROR 07-30 10:15:09 [core.py:586]   File "/vllm-workspace/vllm/vllm/v1/executor/multiproc_executor.py", line 93, '
    "in _init_executor\n"
    "ERROR 07-30 10:15:09 [core.py:586]     self.workers = WorkerProc.wait_for_ready(unready_workers)\n"
)


def test_a_cut_stack_under_another_processs_error_record_is_that_record_with_its_rank() -> None:
    rc = analyze(_ASCEND).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.exception_type is None
    assert "ERR01100 OPS call acl api failed" in rc.message and rc.ranks == ("rank10",)


def test_the_first_error_of_a_cascade_above_a_cut_stack_is_the_cause() -> None:
    """mooncake#1050's shape: three error records, each the consequence of the one before, then the cut stack."""
    log = ("ERROR 08-01 10:00:01 [store.py:80] Failed to mount segment: RPC_FAIL\n"
           "ERROR 08-01 10:00:01 [store.py:81] Initialize mooncake failed.\n"
           "ERROR 08-01 10:00:02 [multiproc_executor.py:487] WorkerProc failed to start.\n"
           "ERROR 08-01 10:00:02 [multiproc_executor.py:487] Traceback (most recent call last):\n"
           'ERROR 08-01 10:00:02 [multiproc_executor.py:487]   File "/vllm/v1/executor/multiproc_executor.py", line 461, '
           "in worker_main\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "Failed to mount segment: RPC_FAIL" in rc.message


def test_a_record_that_only_announces_a_stack_cut_before_its_exception_is_what_failed() -> None:
    """dynamo#1871: RFC 3339 records whose level the parser reads from the prefix; the stack is cut in its frames. The
    record's words say what failed; the failure stays the stack's exception, its type unknown."""
    log = ("2025-07-11T04:31:36.258Z  INFO pynccl.__init__: vLLM is using nccl==2.21.5   \n"
           "2025-07-11T04:31:39.025Z ERROR serve_dynamo.dyn_worker: [VllmWorker:1] Error in Dynamo component setup: "
           "Engine process failed to start. See stack trace for the root cause.   \n"
           "Traceback (most recent call last):\n"
           '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
           "    return _run_code(code, main_globals, None,\n"
           '  File "/home/ubuntu/venv/lib/python3.10/site-packages/typer/main.py", line 341, in __call__\n'
           "    raise e\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "exception" and rc.exception_type is None
    assert "Engine process failed to start" in rc.message


def test_a_log_ending_inside_an_error_records_first_word_is_that_failure_cut() -> None:
    """LMCache#1966 and vllm#28362: the paste stops a few letters into the error record."""
    for last in ("ERROR 11-07 11:03:31 [multiproc_executor.py:585] WorkerPro",
                 "(EngineCore_DP0 pid=33719) ERROR 11-08 21:54:55 [core.py:825] Ru"):
        a = analyze("INFO 11-07 11:03:31 [core.py:1] Initializing a V1 LLM engine\n" + last)
        assert a.root_cause is not None and a.root_cause.kind == "log_line", last
        assert a.final is not None and a.final.truncated, last


def test_a_whole_error_record_at_the_end_is_not_called_cut() -> None:
    """A record whose one word ends in a full stop, and one of several words, are whole: the log was not cut there."""
    for last in ("ERROR 11-07 11:03:31 [core.py:2] Aborted.",
                 "ERROR 11-07 11:03:31 [core.py:2] Model architectures ['Foo'] are not supported for now."):
        a = analyze("INFO 11-07 11:03:31 [core.py:1] Initializing a V1 LLM engine\n" + last + "\n")
        assert a.final is None or not a.final.truncated, last


def test_a_gateways_proxy_that_could_not_reach_the_server_is_a_serving_failure() -> None:
    """aibrix#1111: a curl session through the gateway; its second answer is Envoy's."""
    log = ("root@vm:~# curl -X POST http://xxxxx:80/v1/chat/completions -d '{\"model\":\"m\"}'\n"
           '{"id":"chat-b63e","object":"chat.completion","choices":[{"index":0,"message":{"content":"Hello!"}}]}\n'
           "root@vm:~# curl -X POST http://xxxxx:80/v1/chat/completions -H \"routing-strategy: least-request\"\n"
           '{"error":{"code":503,"message":"upstream connect error or disconnect/reset before headers. reset reason: '
           'remote connection failure, transport failure reason: delayed connect error: 111. "}}\n')
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.phase == "serving"
    assert "upstream connect error or disconnect/reset before headers" in rc.message


def test_error_alone_is_a_programs_report_not_a_python_type() -> None:
    """dynamo#847: a Rust worker's error record, then its main's "Error: ..."; a module's ``Error`` class stays a type."""
    rc = analyze("2025-04-28T06:54:25.745Z ERROR dynamo_runtime::worker: Application shutdown with error: Model name "
                 "'/workspace/qwenmodel' cannot start with a slash\n"
                 "Error: Model name '/workspace/qwenmodel' cannot start with a slash\n").root_cause
    assert rc is not None and rc.kind == "log_line" and "cannot start with a slash" in rc.message
    typed = analyze("shutil.Error: [('a', 'b', 'No space left on device')]\n").root_cause
    assert typed is not None and typed.kind == "exception" and typed.exception_type == "shutil.Error"


def test_a_log_that_ends_inside_a_word_the_log_uses_whole_elsewhere_is_cut() -> None:
    """Held-out windows' shapes: the paste stops in "vllm.v1.engine.exceptions.Engin" or "allocated by PyT"; a message that
    ends in a whole word ("address already in use", a word the log never lengthens) is not cut."""
    head = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/async_llm.py", line 1, in generate\n'
            "    raise EngineDeadError()\n")
    cut = analyze(head + "vllm.v1.engine.exceptions.Engin")
    assert cut.final is not None and cut.final.truncated
    alloc = ("torch.OutOfMemoryError: CUDA out of memory. Of the allocated memory 70.57 GiB is allocated by PyTorch, "
             "and 1.02 GiB is reserved by PyTorch but unallocated.\n")
    assert analyze(head + alloc + alloc.replace("PyTorch but unallocated.", "PyT")).final.truncated
    whole = analyze("INFO 11-07 11:03:31 [api_server.py:1] args: useIpv6=False\n" + head
                    + "OSError: [Errno 98] error while attempting to bind: address already in use")
    assert whole.final is not None and not whole.final.truncated
    never_longer = analyze(head + "RuntimeError: the engine process died")
    assert never_longer.final is not None and not never_longer.final.truncated


def test_prose_telling_of_a_request_and_its_500_places_the_failure_in_serving() -> None:
    """ray#54466: the reporter's sentence, then the two lines of the actor's log."""
    rc = analyze("When requesting `http://server_host:8000/v1/embeddings`, an error code 500 is returned. The log of "
                 "actor reveals the error as follow:\n```\nif hasattr(result.outputs, \"embedding\"):\n"
                 "AttributeError: 'PoolingOutput' object has no attribute 'embedding'\n```\n").root_cause
    assert rc is not None and rc.exception_type == "AttributeError" and rc.phase == "serving"
