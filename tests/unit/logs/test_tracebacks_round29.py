"""Mechanisms added from misses of held-out 29 (projects around vLLM and SGLang, measured once untuned first), each
on lines written in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze


def test_a_ray_workers_native_stack_under_its_process_title_is_a_cut_crash() -> None:
    """verl#4895: a Ray worker's native backtrace, each frame under the worker's process title ("ray::Worker(
    PyEval_EvalCode+0xae) [0x5f450e]"), its crash report above the window: a failure whose exception is cut."""
    p = "(VisualExecutionWorker pid=1257088) "
    log = "".join(p + ln + "\n" for ln in (
        "ray::VisualExecutionWorker(PyObject_Vectorcall+0x51) [0x543141] PyObject_Vectorcall",
        "ray::VisualExecutionWorker(PyEval_EvalCode+0xae) [0x5f450e] PyEval_EvalCode",
        "ray::VisualExecutionWorker() [0x6198b7] run_eval_code_obj",
    ))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.final is not None and a.final.truncated


def test_numbered_cpp_frames_whose_head_was_cut_are_a_cut_crash() -> None:
    """cortex.cpp#1315: TensorRT-LLM's numbered C++ frames ("5  0x7f9e... ns::Impl::createModel(...) + 443"), the
    exception line and the first frames above the window: a failure whose exception is cut."""
    log = "\n".join((
        "5       0x7f9e1a0a965b tensorrt_llm::executor::Executor::Impl::createModel(RawEngine const&) + 443",
        "6       0x7f9e1a0aee60 tensorrt_llm::executor::Executor::Impl::loadModel(path const&, bool) + 1408",
        "7       0x7f9e1a0aff6a tensorrt_llm::executor::Executor::Impl::Impl(path const&, ModelType) + 1978",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.final is not None and a.final.truncated


def test_a_ray_task_error_head_cut_under_its_remote_frames_carets_is_truncated() -> None:
    """sonar#522: "RayTaskError(AssertionError): ray::RayWorker.execute_method() (pid=...)" then the caret lines of
    the remote task's frames, the window ending there: the remote exception line is cut."""
    p = "[rank0]: "
    log = "".join(p + ln + "\n" for ln in (
        "Traceback (most recent call last):",
        '  File "/e/lib/python3.11/site-packages/ray/_private/worker.py", line 863, in get_objects',
        "    raise value.as_instanceof_cause()",
        "ray.exceptions.RayTaskError(AssertionError): ray::RayWorker.execute_method() (pid=5826, ip=192.168.0.105)",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    ))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.final is not None and a.final.truncated


def test_torch_elastic_rendezvous_tcp_store_timeout_is_nccl_init() -> None:
    """cosmos-rl#681: torch-elastic's rendezvous creating its TCPStore timed out ("DistNetworkError: The client
    socket has timed out"): the process groups' start."""
    log = "\n".join((
        "Traceback (most recent call last):",
        '  File "/v/lib/python3.10/site-packages/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", line 1126,'
        " in _create_tcp_store_server",
        "    return dist.TCPStore(",
        "torch.distributed.DistNetworkError: The client socket has timed out after 300000ms while trying to connect",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "nccl_init"


def test_module_to_device_convert_is_weight_loading() -> None:
    """ipex-llm#12584: torch's ``Module.to`` closure ``convert`` (``t.to(device, ...)``) running out of XPU memory:
    the loaded weights were being moved onto the device."""
    p = "intel-gpu-vllm  | "
    log = "".join(p + ln + "\n" for ln in (
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.11/dist-packages/torch/nn/modules/module.py", line 1158, in convert',
        "    return t.to(device, dtype if t.is_floating_point() else None, non_blocking)",
        "RuntimeError: XPU out of memory. Tried to allocate 1.02 GiB (GPU 0; 15.56 GiB total capacity)",
    ))
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "weight_loading"
