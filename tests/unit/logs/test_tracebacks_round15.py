"""Mechanisms added after held-out 15 was measured (issue 15, fourteenth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.tracebacks import analyze

_GPUSTACK = ("```\n"
             "2024-11-19T10:08:56+00:00 - gpustack.routes.openai - DEBUG - proxying to "
             "http://192.168.50.242:40455/v1/chat/completions\n"
             "2024-11-19T10:08:56+00:00 - gpustack.api.middlewares - ERROR - Error processing streaming response: "
             "'usage'\n"
             "```\n")


def test_an_error_record_in_a_format_the_parser_does_not_know_is_the_last_resort_failure() -> None:
    """gpustack#568: Python logging's "%(asctime)s - %(name)s - %(levelname)s - %(message)s" with an RFC 3339
    time, an ERROR record that names no error words of an engine, and nothing else in the window."""
    rc = analyze(_GPUSTACK).root_cause
    assert rc is not None and "Error processing streaming response: 'usage'" in rc.message
    # the level word must be the record's: one deep in a message, or a DEBUG record, is none
    assert analyze("2024-11-19T10:08:56+00:00 - gpustack.routes.openai - DEBUG - proxying to /v1\n").root_cause is None
    assert analyze("2024-11-19T10:08:56+00:00 - gpustack.worker - INFO - the model printed no ERROR lines "
                   "while it was being downloaded\n").root_cause is None


def test_an_error_for_the_response_streamed_to_a_request_is_serving() -> None:
    """gpustack#568: its proxy's "Error processing streaming response: 'usage'" (capitalised, as a record's
    message begins) after it proxied a chat completion."""
    rc = analyze(_GPUSTACK).root_cause
    assert rc is not None and rc.phase == "serving"
    rc = analyze("2024-11-19T10:08:56+00:00 - app.server - ERROR - Error processing request 12: bad input\n").root_cause
    assert rc is not None and rc.phase == "serving"


def test_a_log_ending_in_an_error_record_cut_after_its_header_is_a_failure() -> None:
    """vllm#16259: a request added, Ray's compiled graph torn down, then "ERROR 04-29 00:53:54" and nothing more."""
    text = ("`bash\n"
            "INFO:     10.6.11.114:46260 - \"POST /v1/completions HTTP/1.1\" 200 OK\n"
            "INFO 04-29 00:53:53 [async_llm.py:252] Added request cmpl-822524754a2e4ceaa2800429d6392d70-0.\n"
            "INFO 04-29 00:53:54 [ray_distributed_executor.py:578] RAY_CGRAPH_get_timeout is set to 300\n"
            "2025-04-29 00:53:54,412\tINFO compiled_dag_node.py:2109 -- Tearing down compiled DAG\n"
            "ERROR 04-29 00:53:54\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.line == 6 and rc.phase == "serving"
    # a record of another level cut the same way, or an error header with its message, is no such line
    assert analyze(text.replace("ERROR 04-29 00:53:54\n", "INFO 04-29 00:53:54\n")).root_cause is None
    assert analyze(text + "INFO 04-29 00:53:55 [loggers.py:122] Engine 000: Avg prompt throughput\n").root_cause is None


def test_vllms_model_registry_failing_to_inspect_an_architecture_is_start_up() -> None:
    """Qwen3-VL#723: the registry's record, then its subprocess's CalledProcessError chained by "The above exception
    was the direct cause of the following exception", cut in the second traceback."""
    p = "ERROR 02-20 09:04:16 registry.py:306] "
    text = (f"{p}Error in inspecting model architecture 'Qwen2_5_VLForConditionalGeneration'\n"
            f"{p}Traceback (most recent call last):\n"
            f'{p}  File "/env/lib/python3.10/site-packages/vllm/model_executor/models/registry.py", line 507, '
            "in _run_in_subprocess\n"
            f"{p}    returned.check_returncode()\n"
            f'{p}  File "/usr/lib/python3.10/subprocess.py", line 457, in check_returncode\n'
            f"{p}    raise CalledProcessError(self.returncode, self.args, self.stdout,\n"
            f"{p}subprocess.CalledProcessError: Command '['/env/bin/python3', '-m', "
            "'vllm.model_executor.models.registry']' returned non-zero exit status 1.\n"
            f"{p}\n"
            f"{p}The above exception was the direct cause of the following exception:\n"
            f"{p}\n"
            f"{p}Traceback (most recent call last):\n"
            f'{p}  File "/env/lib/python3.10/site-packages/vllm/model_executor/models/registry.py", line 304, '
            "in _try_inspect_model_cls\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "subprocess.CalledProcessError"
    assert rc.phase == "startup_other"


def test_a_faulthandler_dump_pasted_with_doubled_newlines_keeps_its_header_and_stacks() -> None:
    """sglang#10350: "Fatal Python error: Segmentation fault", then the threads' stacks with a blank line between
    every line (the paste doubled the newlines); the crashed thread's stack below them, as faulthandler prints it."""
    text = ("```bash\n"
            "Fatal Python error: Segmentation fault\n\n"
            "Thread 0x00007fbc4bfff640 (most recent call first):\n\n"
            '  File "/usr/lib/python3.10/threading.py", line 324 in wait\n\n'
            '  File "/usr/local/lib/python3.10/dist-packages/tqdm/_monitor.py", line 60 in run\n\n'
            "Thread 0x00007fbc5ffff640 (most recent call first):\n\n"
            '  File "/usr/lib/python3.10/threading.py", line 320 in wait\n\n'
            '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/disaggregation/common/utils.py", line 24 in get\n')
    rc = analyze(text).root_cause
    assert rc is not None and "Segmentation fault" in rc.message
    crashed = (text + "\nCurrent thread 0x00007fbc6ffff640 (most recent call first):\n\n"
               '  File "/x/sglang/srt/managers/scheduler.py", line 24 in event_loop_normal\n\n'
               '  File "/x/sglang/srt/managers/scheduler.py", line 30 in run_scheduler_process\n')
    rc = analyze(crashed).root_cause
    assert rc is not None and "Segmentation fault" in rc.message
    assert rc.innermost_frame is not None and rc.innermost_frame.function == "event_loop_normal"


def test_a_fatal_line_heads_the_crashed_threads_stack_under_any_number_of_other_threads() -> None:
    """The same dump without the doubled newlines, with four threads' stacks above the crashed one: the fatal
    line stays its header (the crash, where it happened), not a failure of its own."""
    other = ("Thread 0x00007fbc4bfff64{n} (most recent call first):\n"
             '  File "/usr/lib/python3.10/threading.py", line 324 in wait\n'
             '  File "/usr/lib/python3.10/threading.py", line 973 in _bootstrap\n\n')
    text = ("Fatal Python error: Segmentation fault\n\n" + "".join(other.format(n=n) for n in range(4))
            + "Current thread 0x00007fbc6ffff640 (most recent call first):\n"
            '  File "/x/sglang/srt/managers/scheduler.py", line 24 in event_loop_normal\n'
            '  File "/x/sglang/srt/managers/scheduler.py", line 30 in run_scheduler_process\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.message == "Fatal Python error: Segmentation fault"
    assert rc.innermost_frame is not None and rc.innermost_frame.function == "event_loop_normal"


def test_sglangs_rank_before_a_traceback_header_is_read_when_the_paste_lost_its_bracket() -> None:
    """sglang#3608: "2025-02-16 19:29:38 TP4] Scheduler hit an exception: Traceback ..." (the "[" lost), then the
    scheduler's event loop frames, cut."""
    text = ("2025-02-16 19:29:38 TP4] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/opt/tiger/sglang/python/sglang/srt/managers/scheduler.py", line 1827, in run_scheduler_process\n'
            "    scheduler.event_loop_normal()\n"
            '  File "/opt/tiger/sglang/python/sglang/srt/managers/scheduler.py", line 479, in event_loop_normal\n'
            "    self.process_batch_result(batch, result)\n"
            '  File "/opt/tiger/sglang/python/sglang/srt/managers/scheduler.py", line 1120, in process_batc\n')
    rc = analyze(text).root_cause
    assert rc is not None and list(rc.ranks) == ["TP4"] and rc.phase == "serving"
    # a date in the middle of prose, without its bracket, is no rank prefix
    rc = analyze("see the log of 2025-02-16 19:29:38 TP4] Traceback (most recent call last):\n"
                 '  File "/x/scheduler.py", line 479, in event_loop_normal\n').root_cause
    assert rc is not None and not rc.ranks


def test_tritons_model_that_failed_to_load_is_a_start_up_failure() -> None:
    """tensorrtllm_backend#710: a quoted "E0218 ... model_lifecycle.cc:654] "failed to load 'tensorrt_llm_2beam'
    version 1: Internal: unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] Assertion failed:
    16 != 40 (...)\\n1  0x7ff3... " record, its C++ frames kept as literal "\\n"."""
    text = ("> E0218 20:57:33.147956 130 model_lifecycle.cc:654] \"failed to load 'tensorrt_llm_2beam' version 1: "
            "Internal: unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] Assertion failed: "
            "16 != 40 (/workspace/tensorrt_llm/cpp/tensorrt_llm/layers/lookaheadDecodingLayer.cpp:56)\\n1       "
            "0x7ff34f6bdff8 tensorrt_llm::common::throwRuntimeError(char const*, int, std::__cxx11::basic_string<char, "
            "std::char_traits<char>, std::allocator<char> > const&) + 95\\n2       0x7ff34f9d890c "
            "tensorrt_llm::layers::LookaheadDecodingLayer<__half>::CpuAlgorithmResources::CpuAlgorithmResources("
            "tensorrt_llm::layers::DecoderDomain const&) + 4396\n")
    rc = analyze(text).root_cause
    assert rc is not None and "Assertion failed: 16 != 40" in rc.message and rc.phase == "startup_other"


_HARNESS = ("```\n"
            "[06] Stack 'nok8s-single': FAILED: [06] nok8s_deploy (nok8s-single): FAILED - Timed out waiting for "
            "http://localhost:8000/v1/models after 15s\n"
            "```\n")


def test_a_harness_status_line_that_says_failed_is_the_last_resort_failure() -> None:
    """llm-d-benchmark#1701: a deploy harness's status line, no log level, "FAILED - <reason>"."""
    rc = analyze(_HARNESS).root_cause
    assert rc is not None and "Timed out waiting for http://localhost:8000/v1/models" in rc.message
    # the word in prose, or without a reason after it, is no status
    assert analyze("The test marked FAILED yesterday passes again today\n").root_cause is None
    assert analyze("tests: 12 passed, 0 FAILED\n").root_cause is None


def test_a_readiness_probe_that_timed_out_is_start_up() -> None:
    """llm-d-benchmark#1701: the harness waited for the server's /v1/models route, which never answered."""
    rc = analyze(_HARNESS).root_cause
    assert rc is not None and rc.phase == "startup_other"
