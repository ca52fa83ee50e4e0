"""Mechanisms added in the twenty-second stop, from misses of held-outs 62-63 (each measured once untuned first), on
lines written in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze


def test_a_gguf_file_being_loaded_is_weight_loading() -> None:
    """ktransformers#362, #757, #1061: the server's constructor loading a GGUF checkpoint (optimize_and_load_gguf)."""
    log = ("Traceback (most recent call last):\n"
           '  File "/opt/ktransformers/server/backend/interfaces/ktransformers.py", line 47, in __init__\n'
           "    optimize_and_load_gguf(self.model, optimize_rule_path, gguf_path, config)\n"
           '  File "/opt/ktransformers/optimize/optimize.py", line 128, in optimize_and_load_gguf\n'
           "    inject(module, optimize_config, model_config, gguf_loader)\n"
           "NotImplementedError: ggml_type 30 not implemented\n")
    assert analyze(log).root_cause.phase == "weight_loading"


def test_a_log_that_ends_inside_a_faulthandler_dump_was_cut() -> None:
    """ktransformers#1001: the window ends on a frame of the dump short of the thread's outermost one (the main
    thread's <module>, a thread's _bootstrap): the dump, and what the process did next, went on after it."""
    head = ("Fatal Python error: Segmentation fault\n\nThread 0x00007f23dd0a0480 (most recent call first):\n"
            '  File "/ws/ktransformers/operators/cpuinfer.py", line 745 in sync\n'
            '  File "/ws/ktransformers/operators/experts.py", line 228 in forward\n')
    assert analyze(head).final.truncated
    assert not analyze(head + '  File "/ws/ktransformers/local_chat.py", line 180 in <module>\n').final.truncated
    assert not analyze(head + '  File "/usr/lib/python3.10/threading.py", line 973 in _bootstrap\n').final.truncated


def test_rust_tracing_records_give_their_level_and_feed_the_timeline() -> None:
    """mistral.rs#1428, #650: tracing-subscriber's records ("2025-06-05T01:31:26.837710Z  INFO target: ...") were plain
    text (an ERROR one was even read as a journal line from host "ERROR"): a panic after "Beginning dummy run." is the
    warm-up's, and an ERROR record is a failure."""
    head = ("2025-06-05T01:31:26.837498Z  INFO mistralrs_server_core::mistralrs_for_server_builder: Model loaded.\n"
            "2025-06-05T01:31:26.837710Z  INFO mistralrs_core: Beginning dummy run.\n")
    panic = ("thread '<unnamed>' panicked at /root/.cargo/registry/src/cudarc-0.13.9/src/driver/safe/core.rs:257:76:\n"
             'called `Result::unwrap()` on an `Err` value: DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory '
             'access was encountered")\n')
    assert analyze(head + panic).root_cause.phase == "warmup"
    error = "2024-07-29T20:08:08.867914Z ERROR mistralrs_core::engine: step - Model failed with error: boom\n"
    rc = analyze(error).root_cause
    assert rc is not None and rc.kind == "log_line" and "Model failed with error" in rc.message


def test_an_http_servers_record_of_a_5xx_response_is_no_failure() -> None:
    """dynamo#3644: tower_http logs every 5xx response at ERROR; a readiness probe answered 503 while the model loads."""
    log = ("2025-10-15T08:41:33.147093Z ERROR http-request: tower_http::trace::on_failure: response failed "
           "classification=Status code: 503 Service Unavailable latency=0 ms method=GET uri=/live version=HTTP/1.1\n")
    assert analyze(log).root_cause is None


def test_an_http_servers_record_of_a_500_response_is_still_a_failure() -> None:
    """A 500 is a request that failed inside the server, unlike a 503 (not ready): the record stays the failure."""
    log = ("2025-10-15T08:41:33.147093Z ERROR http-request: tower_http::trace::on_failure: response failed "
           "classification=Status code: 500 Internal Server Error latency=3 ms method=POST uri=/v1/chat/completions "
           "version=HTTP/1.1\n")
    rc = analyze(log).root_cause
    assert rc is not None and "500 Internal Server Error" in rc.message
