"""Mechanisms added from misses of held-out 27 (projects other than vLLM and SGLang, measured once untuned first), each
on lines written in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze


def test_a_proxys_chat_completion_route_and_router_acompletion_are_serving() -> None:
    """LiteLLM#7291 and agent-lightning#508: LiteLLM's proxy route ``chat_completion`` calling its router's
    ``acompletion``, cut before the exception line: a request to the served model was being handled."""
    log = "\n".join((
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/site-packages/litellm/proxy/proxy_server.py", line 3392, in chat_completion',
        "    responses = await llm_responses",
        '  File "/usr/lib/python3.11/site-packages/litellm/router.py", line 848, in acompletion',
        "    raise e",
        '  File "/usr/lib/python3.11/site-packages/litellm/router.py", line 2800, in async_function_with_fallbacks',
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_the_code_line_above_a_cut_stacks_first_frame_is_its_callers_call() -> None:
    """EasyR1#31: the window begins on a code line ("output = self.rollout.generate_sequences(...)") whose File line
    was cut, then the frames under it: that call was the outer frame's, and names a rollout serving requests."""
    p = "(Runner pid=82786) "
    log = "".join(p + ln + "\n" for ln in (
        "    output = self.rollout.generate_sequences(prompts=prompts)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        '  File "/e/lib/python3.12/site-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)",
    ))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_a_cufile_error_line_is_the_cause_of_a_cut_worker_start_failure() -> None:
    """fastsafetensors#28: the GPUDirect Storage loader's "cuFileBufRegister returned an error = 5016", with no level,
    under vLLM's "Loading safetensors using Fastsafetensor loader" bar, then the worker's cut "failed to start" stack."""
    w = "(Worker_TP2 pid=22064) ERROR 10-09 11:29:01 [multiproc_executor.py:597] "
    log = "\n".join((
        "Loading safetensors using Fastsafetensor loader:   0% Completed | 0/16 [00:00<?, ?it/s]",
        "gds_device_buffer.cufile_register: cuFileBufRegister returned an error = 5016",
        w + "WorkerProc failed to start.",
        w + "Traceback (most recent call last):",
    )) + "\n"
    a = analyze(log)
    rc = a.root_cause
    assert rc is not None and rc.kind == "log_line" and "cuFileBufRegister returned an error" in rc.message
    assert rc.phase == "weight_loading"


def test_an_llvm_fatal_error_is_what_the_engine_process_died_of() -> None:
    """Mooncake#436: a Triton kernel's compile hits "LLVM ERROR: ..." (LLVM aborts the process) while requests are
    served, then the client's "Engine process (pid N) died" error: the LLVM error is the cause."""
    log = "\n".join((
        "INFO 05-31 09:09:41 [engine.py:310] Added request cmpl-035fe3060f0a4520825d69c4b3c23457-0.",
        "LLVM ERROR: Failed to compute parent layout for slice layout.",
        "ERROR 05-31 09:09:48 [client.py:305] RuntimeError('Engine process (pid 65",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "Failed to compute parent layout" in rc.message


def test_tritonservers_creating_server_error_is_a_start_up_failure() -> None:
    """triton-inference-server#8578 (vLLM backend): the server unloads its models and exits with "error: creating
    server: Internal - failed to load all models", no level and no traceback."""
    log = "\n".join((
        'I1216 02:12:50.904992 179 server.cc:343] "All models are stopped, unloading models"',
        'I1216 02:12:50.904999 179 server.cc:352] "Timeout 30: Found 0 live models and 0 in-flight requests"',
        "error: creating server: Internal - failed to load all models",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "failed to load all models" in rc.message
    assert rc.phase == "startup_other"
