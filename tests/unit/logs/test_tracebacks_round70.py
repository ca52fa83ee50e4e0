"""Mechanisms added in the twenty-sixth stop's second round, from held-outs 69 and 70's misses (measured untuned
first): a Go program's logfmt error record, the KV caches a disaggregated decode pulls, c10d's socket time-out, HTML's
escaped quotes, records whose last word is an error's kind, a notebook's stack under prose that quotes its error, and
logs cut in a hex number or a record's head.  Lines in the shapes of the real logs (the thread says which)."""

from __future__ import annotations

from workbench.logformats import parse_line
from workbench.tracebacks import analyze


def _root(log: str):  # type: ignore[no-untyped-def]
    rc = analyze(log).root_cause
    assert rc is not None, log
    return rc


def test_a_go_programs_logfmt_error_record_keeps_its_level_and_its_error_field() -> None:
    """ollama#10553: slog's record; its error="..." is the rest of what it says."""
    line = ('time=2025-06-05T17:54:37.891-05:00 level=ERROR source=sched.go:489 msg="error loading llama server" '
            'error="llama runner process has terminated: cudaMalloc failed: out of memory"')
    parsed = parse_line(line)
    assert parsed.level == "ERROR" and parsed.message.endswith("cudaMalloc failed: out of memory")
    assert "cudaMalloc failed: out of memory" in _root(
        'time=2025-06-05T17:54:37.641-05:00 level=INFO source=server.go:625 msg="waiting for server to become '
        'available" status="llm server error"\n' + line + "\n").message
    # a wrapper's info record around a program's line leaves the line's own words (logrus around a traceback's frame)
    framed = parse_line('time="2025-01-01" level=info msg="  File \\"/x.py\\", line 3, in f" component=vllm')
    assert framed.level is None and framed.message == '  File "/x.py", line 3, in f'


def test_a_decode_pulling_a_requests_kv_caches_is_serving_not_kv_cache_sizing() -> None:
    """vllm#50719 and sglang#9926: disaggregated prefill/decode moving KV caches between instances."""
    pulled = _root("(Worker_DP6_EP6 pid=9774) ERROR 08-01 12:42:13 [mooncake_connector.py:1899] pulling kv_caches for "
                   "['973ca62f1bc3666d'] failed: Timeout waiting for P side ready.\n")
    assert pulled.phase == "serving"
    signal = _root("[2025-08-31 07:32:08 TP6 EP6] Some requests fail to receive KV Cache transfer done signal after "
                   "bootstrapping. If a greater mean TTFT is acceptable, you can 'export "
                   "SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 minutes) to relax the timeout condition.\n")
    assert "fail to receive KV Cache transfer done signal" in signal.message and signal.phase == "serving"


def test_c10ds_socket_timing_out_on_a_peer_is_the_failure_with_the_rank_that_waited() -> None:
    """vllm#52907: two nodes' rendezvous, only warnings of rank 0 waiting."""
    rc = _root("[rank0]:[W903 21:08:30.547205127 socket.cpp:469] [c10d] waitForInput: poll for socket SocketImpl(fd=33, "
               "addr=[blk02]:34316, remote=[blk01]:29501) returned 0, likely a timeout\n"
               "[rank0]:[W903 21:08:30.548559132 socket.cpp:494] [c10d] waitForInput: socket SocketImpl(fd=33, "
               "addr=[blk02]:34316, remote=[blk01]:29501) timed out after 1800000ms\n")
    assert "timed out after 1800000ms" in rc.message and rc.ranks == ("rank0",)


def test_a_stack_pasted_out_of_an_html_page_is_read_with_its_quotes() -> None:
    """xinference#3377: every quote of the frames escaped as &quot;."""
    log = ("Traceback (most recent call last):\n"
           '  File &quot;/usr/local/lib/python3.10/dist-packages/xinference/core/supervisor.py&quot;, line 1040, in '
           "launch_builtin_model\n"
           "    await _launch_model()\n"
           '  File &quot;/usr/local/lib/python3.10/dist-packages/xoscar/backends/pool.py&quot;, line 389, in _run_coro\n'
           "    return await coro\n"
           "ValueError: Model &#39;qwen&#39; is not supported\n")
    rc = _root(log)
    assert rc.exception_type == "ValueError" and rc.message == "Model 'qwen' is not supported"
    assert rc.innermost_frame is not None and rc.innermost_frame.file.endswith("pool.py")


def test_an_error_record_above_a_cut_stack_says_what_failed_whatever_its_last_word() -> None:
    """xinference#2925: the record ends in "'inner_exception'", which is no record announcing a stack."""
    log = ("xinference.api.restful_api 928701 ERROR    [address=0.0.0.0:35268, pid=928795] BackendCompilerFailed."
           "__init__() missing 1 required positional argument: 'inner_exception'\n"
           "Traceback (most recent call last):\n"
           '  File "/envs/x/lib/python3.11/site-packages/xinference/api/restful_api.py", line 1002, in launch_model\n'
           "    model_uid = await (await self._get_supervisor_ref()).launch_builtin_model(\n")
    assert "missing 1 required positional argument" in _root(log).message


def test_a_last_record_whose_error_kind_follows_a_colon_announces_no_stack() -> None:
    """Mooncake#851: "...: local protection error" says what the transfer's error was; the log is whole."""
    line = ("E0917 16:23:13.213292 4058290 worker_pool.cpp:294] Worker: Process failed for slice (opcode: 1, "
            "local_nic: mlx5_7, retry_cnt: 0): local protection error\n")
    a = analyze(line * 3)
    assert a.final is not None and not a.final.truncated
    announcing = analyze("ERROR 08-01 12:42:13 [core.py:1] EngineCore hit an exception\n")
    assert announcing.final is not None and announcing.final.truncated  # the stack it announced never came


def test_a_notebooks_stack_cut_before_its_exception_takes_the_message_prose_quotes_for_its_type() -> None:
    """unsloth#1819: the prose quotes "RuntimeError: <message>", IPython's header names RuntimeError, the stack is cut;
    building vLLM's LLM(...) in the caller's line is start-up."""
    log = ("suddenly I encountered an error: RuntimeError: !handles_.at(i) INTERNAL ASSERT FAILED at "
           '"../c10/cuda/CUDACachingAllocator.cpp":393,\n'
           "Below is the full stack trace...\n"
           "---------------------------------------------------------------------------\n"
           "RuntimeError                              Traceback (most recent call last)\n"
           "File ~/envs/u/lib/python3.11/site-packages/unsloth_zoo/vllm_utils.py:993, in load_vllm(model_name, config)\n"
           "    992 else:\n"
           "--> 993     llm = LLM(**engine_args)\n"
           "    994 pass\n")
    rc = _root(log)
    assert rc.exception_type == "RuntimeError" and rc.message.startswith("!handles_.at(i) INTERNAL ASSERT FAILED")
    assert rc.phase == "startup_other"


def test_a_log_cut_in_a_hex_number_or_a_records_head_was_cut() -> None:
    """vllm#12568 (glog's stack dump "@            0x") and vllm#50719 ("(Worker_DP1_EP1 pid=9776) ERROR 08-01")."""
    frame = "[2025-02-11 21:50:49,832 E 4823 4823] logging.cc:460:     @     0x7f11ab22d520  (unknown)  (unknown)\n"
    sigsegv = "[2025-02-11 21:50:49,831 E 4823 4823] logging.cc:460: *** SIGSEGV received at time=1739339449 ***\n"
    a = analyze(sigsegv + frame + "[2025-02-11 21:50:49,832 E 4823 4823] logging.cc:460:     @            0x")
    assert a.final is not None and a.final.truncated
    record = ("(Worker_DP6_EP6 pid=9774) ERROR 08-01 12:42:13 [mooncake_connector.py:1899] pulling kv_caches for "
              "['a067ac70e68581a1'] failed: Timeout waiting for P side ready.\n")
    b = analyze(record + "(Worker_DP1_EP1 pid=9776) ERROR 08-01")
    assert b.final is not None and b.final.truncated


def test_a_code_line_that_unpacks_a_dict_keeps_its_stars_on_either_path(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """ray-llm#141: "**ServeSubmissionClient(address)..." is a frame's code, not a Markdown bold opening; the parser's
    path and the short path for frame lines read it alike."""
    log = ("Traceback (most recent call last):\n"
           '  File "/home/ray/anaconda3/lib/python3.9/site-packages/ray/serve/scripts.py", line 554, in config\n'
           "    **ServeSubmissionClient(address).get_serve_details()\n"
           '  File "/home/ray/anaconda3/lib/python3.9/site-packages/ray/dashboard/modules/serve/sdk.py", line 61, in '
           "__init__\n"
           "    self._check_connection_and_version_with_url(\n")
    from workbench.tracebacks.scan import Extractor

    assert analyze(log).tracebacks[0].frames[0].code == "**ServeSubmissionClient(address).get_serve_details()"
    monkeypatch.setattr(Extractor, "_short_path", lambda self, line, block, stream: None)  # every line parsed
    assert analyze(log).tracebacks[0].frames[0].code == "**ServeSubmissionClient(address).get_serve_details()"
    bold = analyze('Traceback (most recent call last):\n  File "/x/y.py", line 3, in f\n    g()\n**RuntimeError: boom**\n')
    assert bold.root_cause is not None and bold.root_cause.exception_type == "RuntimeError"
