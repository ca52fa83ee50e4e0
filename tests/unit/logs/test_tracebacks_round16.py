"""Mechanisms added after held-out 16 was measured (issue 15, fifteenth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.tracebacks import analyze

# xinference#2634: an OCR-like paste of a vLLM v0 traceback, frames and code with no indentation, words split
# apart, and one frame whose opening quote is doubled
_GARBLED = ('File "/usr/local/lib/python3.10/dist-packages/vllm/engine/llm_engine.py", line 586, in _init_tokenizer\n'
            "return init tokenizer from configs(\n"
            'File ""/usr/local/lib/python3.10/dist-packages/vllm/transformers_utils/tokenizer_group/tokenizer_group.py",'
            " line 30, in from_config\n"
            "return cls(**init_kwargs\n")


def test_a_frame_whose_opening_quote_a_paste_doubled_keeps_its_file_and_function() -> None:
    rc = analyze(_GARBLED).root_cause
    assert rc is not None and rc.innermost_frame is not None
    assert rc.innermost_frame.function == "from_config"
    assert rc.innermost_frame.file.endswith("tokenizer_group/tokenizer_group.py")
    # a frame of an empty file name keeps its quotes: the doubled quote is skipped only before a path
    rc = analyze('Traceback (most recent call last):\n  File "", line 1, in <module>\nValueError: x\n').root_cause
    assert rc is not None and rc.innermost_frame is not None and rc.innermost_frame.function == "<module>"


def test_vllm_v0_building_its_tokenizer_group_is_start_up() -> None:
    """xinference#2634: the same window's frames, LLMEngine._init_tokenizer → the tokenizer group's from_config,
    and no other frame of the engine that would name its step."""
    rc = analyze(_GARBLED).root_cause
    assert rc is not None and rc.phase == "startup_other"
    clean = _GARBLED.replace('File ""', 'File "')
    rc = analyze(clean).root_cause
    assert rc is not None and rc.phase == "startup_other"


def test_an_http_error_for_a_request_to_a_generation_route_is_serving() -> None:
    """slime#683: its rollout manager's retries against SGLang's router, the last one an httpx error for the
    router's /generate route."""
    p = "(RolloutManager pid=519445) "
    text = (f"{p}2025-11-08 10:07:09 ERROR sglang_router_rs::response: src/middleware.rs:256: request failed with "
            "server error\n"
            f"{p}Error: Server error '503 Service Unavailable' for url 'http://10.78.210.151:4674/generate'\n"
            f"{p}For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/503, "
            "retrying... (attempt 60/60, url=http://10.78.210.151:4674/generate, response=No available workers "
            "(all circuits open or unhealthy))\n")
    rc = analyze(text).root_cause
    assert rc is not None and "503 Service Unavailable" in rc.message and rc.phase == "serving"
    # the same error for a route that is no request's (a readiness probe's) is not
    rc = analyze(text.replace("/generate", "/health")).root_cause
    assert rc is not None and rc.phase != "serving"


def test_a_record_with_no_level_naming_the_exception_it_failed_with_is_a_failure() -> None:
    """sglang#10560: SGLang's decode side logs a KV transfer's failure with no level word, the exception's
    arguments between its name and its message, then goes on answering health checks."""
    text = ("[2025-09-17 16:23:13 TP1] Decode transfer failed for request rank=1 decode_req.req.rid='3ce84ffb8276' "
            "decode_req.req.bootstrap_room=1655955501905217457 with exception KVTransferError(bootstrap_room="
            "1655955501905217457): Failed due to an unknown reason from another rank\n"
            "[2025-09-17 16:23:13] INFO:     10.10.11.1:41698 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
            "[2025-09-17 16:23:16] INFO:     10.10.11.1:41712 - \"GET /health HTTP/1.1\" 200 OK\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "KVTransferError"
    assert "Failed due to an unknown reason from another rank" in rc.message and rc.phase == "serving"
    # words about an exception that name no exception class are no failure
    assert analyze("[2025-09-17 16:23:13 TP1] Retrying the request with exception handling enabled: "
                   "attempt 2 of 3\n").root_cause is None


def test_a_native_librarys_own_error_line_is_the_failure_before_an_engine_record_cut_after_its_header() -> None:
    """pytorch#137695: hipBLASLt's "rocblaslt error: Could not load ..." on every rank of a TP 8 vLLM, then vLLM's
    "ERROR 10-10 14" record cut after its first characters."""
    lib = ("rocblaslt error: Could not load /home/hotaisle/miniforge3/envs/vllm/lib/python3.11/site-packages/torch/"
           "lib/hipblaslt/library/TensileLibrary_lazy_gfx942.dat\n")
    rc = analyze(f"{lib}\n{lib}\n{lib}ERROR 10-10 14\n").root_cause
    assert rc is not None and "rocblaslt error: Could not load" in rc.message and rc.line == 1
    # a sentence's "the error: ..." is no library's line
    assert analyze("the error: It only happens on the second node\n").root_cause is None


def test_a_native_backtrace_whose_report_was_cut_above_the_window_is_a_failure() -> None:
    """vllm#7057: Ray workers of a two-host vLLM printing only glibc backtrace_symbols frames (libstdc++'s, torch's
    NCCL watchdog) between blank prefixed lines; the report that headed them is above the window."""
    p1, p2 = "(RayWorkerWrapper pid=4151, ip=192.168.200.191) ", "(RayWorkerWrapper pid=4240, ip=192.168.200.191) "
    text = (f"{p1}/usr/lib/x86_64-linux-gnu/libstdc++.so.6(+0xd6df4) [0x7f9572b73df4]\n"
            f"{p1}\n{p1}\n{p2}\n{p2}\n"
            f"{p2}/usr/lib/x86_64-linux-gnu/libstdc++.so.6(+0xaa37c) [0x7f177f31437c]\n"
            f"{p2}/usr/lib/x86_64-linux-gnu/libstdc++.so.6(+0xaa3e7) [0x7f177f3143e7]\n"
            f"{p2}/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so(+0xe321ca) [0x7ef097a461ca] "
            "c10d::ProcessGroupNCCL::ncclCommWatchdog()\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and rc.line == 1
    # one or two such lines (a path quoted in a message) are no backtrace
    assert analyze(f"{p1}loaded /usr/lib/libfoo.so.1(+0x10) [0x7f00] fine\n").root_cause is None
    assert analyze(f"{p1}/usr/lib/libfoo.so.1(+0x10) [0x7f00]\n{p1}/usr/lib/libfoo.so.1(+0x20) [0x7f10]\n").root_cause is None

_ABORTED = ('{"text":"","meta_info":{"id":"c564d0c547f945aa987620f1255b838d","finish_reason":{"type":"abort","message":'
            '"Decode transfer failed for request rank=0 decode_req.req.rid=\'c564d0c547f945aa987620f1255b838d\' '
            "decode_req.req.bootstrap_room=2170015846053279415 with exception KVTransferError(bootstrap_room="
            '2170015846053279415): Failed to get kvcache from prefill instance, it might be dead","status_code":500,'
            '"err_type":null},"prompt_tokens":8,"completion_tokens":0,"cached_tokens":0,"e2e_latency":0.0797}}'
            "root@hd19nh7b2md0c7iunpfng-77c96f889b-7hls2:/# tail -f prefiller.log \n"
            "E0619 02:47:42.441629  1555 tcp_transport.cpp:136]\n")


def test_a_servers_json_answer_to_a_request_it_aborted_says_the_failure() -> None:
    """sglang#7338: SGLang's prefill answer to a request, aborted for a KV transfer, glued to a shell prompt, then a
    glog error record cut after its header (the last resort that took it before)."""
    rc = analyze(_ABORTED).root_cause
    assert rc is not None and "Failed to get kvcache from prefill instance" in rc.message and rc.line == 1
    # a request that finished for another reason says no failure
    assert analyze('{"text":"Hello","meta_info":{"finish_reason":{"type":"length","length":16}}}\n').root_cause is None


def test_a_step_that_failed_for_one_request_is_serving() -> None:
    """sglang#7338 (the aborted answer's "Decode transfer failed for request rank=0 ..."), vllm-ascend#4866 (vLLM's
    "Mooncake transfer failed for request cmpl-...")."""
    rc = analyze(_ABORTED).root_cause
    assert rc is not None and rc.phase == "serving"
    rc = analyze("[2025-06-19 02:47:42] Decode transfer failed for request rank=0 with exception "
                 "KVTransferError(bootstrap_room=1): Failed to get kvcache from prefill instance\n").root_cause
    assert rc is not None and rc.phase == "serving"
