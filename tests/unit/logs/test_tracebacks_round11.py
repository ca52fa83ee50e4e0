"""Mechanisms added after held-out 11 was measured (issue 15, tenth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

import io
from contextlib import AbstractContextManager

from workbench.phases import timeline
from workbench.tracebacks import analyze, analyze_stream


def test_vllms_kv_cache_sizing_lines_place_a_failure_after_them() -> None:
    """intel-arc-pro-b70-inference-cookbook#4: the KV cache reserved by kv_cache_memory_bytes and
    kv_cache_utils' padding warning, then 'EngineCore failed to start.' with its stack cut."""
    p = "(EngineCore pid=316) "
    text = (p + "INFO 08-21 18:37:40 [monitor.py:81] Initial profiling/warmup run took 0.00 s\n"
            + p + "INFO 08-21 18:37:44 [gpu_worker.py:492] Initial free memory 31.16 GiB, reserved 4.25 GiB memory "
            "for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling.\n"
            + p + "WARNING 08-21 18:37:44 [kv_cache_utils.py:1227] Add 3 padding layers, may waste at most 6.25% "
            "KV cache memory\n"
            + p + "ERROR 08-21 18:37:44 [core.py:1344] EngineCore failed to start.\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "kv_cache_alloc"


def test_vllm_v1s_compile_total_is_inside_the_kv_cache_sizing() -> None:
    """vllm#17979: torch.compile runs in the profiling run that sizes the KV cache; the traceback after
    'torch.compile takes 17.00 s in total' is cut before any frame names the step."""
    text = ("INFO 05-07 02:13:52 [gpu_model_runner.py:1347] Model loading took 0.2533 GiB and 0.907387 seconds\n"
            "INFO 05-07 02:14:18 [monitor.py:33] torch.compile takes 17.00 s in total\n"
            "ERROR 05-07 02:14:18 [core.py:396] EngineCore failed to start.\n"
            "ERROR 05-07 02:14:18 [core.py:396] Traceback (most recent call last):\n"
            'ERROR 05-07 02:14:18 [core.py:396]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/'
            'core.py", line 329, in __init__\n'
            "ERROR 05-07 02:14:18 [core.py:396]     super().__init__(vllm_config, executor_class, log_stats,\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "kv_cache_alloc"
    # the lines only move the timeline forwards: capture after them is capture
    rows = timeline("INFO 05-07 02:14:18 [monitor.py:33] torch.compile takes 17.00 s in total\n"
                    "INFO 05-07 02:14:20 [gpu_model_runner.py:1600] Capturing CUDA graph shapes:  10%\n"
                    "WARNING 05-07 02:14:21 [kv_cache_utils.py:1227] Add 3 padding layers, may waste at most "
                    "6.25% KV cache memory\n")
    assert [r["phase"] for r in rows] == ["kv_cache_alloc", "cuda_graph_capture"]


def test_words_of_a_model_server_that_would_not_come_up_are_start_up() -> None:
    """xinference#3135 ('Failed to launch model') and LlamaFactory#7182 (vLLM's 'Model architectures [...]
    failed to be inspected', quoted in a sentence): no frame says where, the words say start-up."""
    rc = analyze("    raise RuntimeError(\n"
                 "RuntimeError: Failed to launch model, detail: [address=0.0.0.0:35197, pid=418773] "
                 "'reasoning_content'\n").root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "startup_other"
    rc = analyze("Error msg: `ValueError: Model architectures ['Qwen2_5_VLForConditionalGeneration'] failed to be "
                 "inspected. Please check the logs for more details.`\n").root_cause
    assert rc is not None and rc.exception_type == "ValueError" and rc.phase == "startup_other"


def test_a_request_a_replica_could_not_serve_is_a_serving_failure() -> None:
    """llm-on-ray#197: Ray Serve's replica logs 'Request failed:' and the task's head; the frames are cut."""
    p = "(ServeReplica:llama-2-7b-chat-hf:PredictorDeployment pid=2799681) "
    text = (p + "2024-04-19 02:06:37,419 - llm_on_ray.inference.predictor_deployment - INFO - Handling dynamic "
            "batch (size=1) ...\n"
            + p + "ERROR 2024-04-19 02:06:37,427 llama-2-7b-chat-hf_PredictorDeployment c5fp5i4e 3e35b1cb "
            "/llama-2-7b-chat-hf/llama-2-7b-chat-hf replica.py:352 - Request failed:\n"
            + p + "ray::ServeReplica:llama-2-7b-chat-hf:PredictorDeployment.handle_request_with_rejection() "
            "(pid=2799681, ip=10.0.11.2)\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and "Request failed" in rc.message
    assert rc.phase == "serving" and rc.ranks == ()
    # the words alone, below an error level, are no failure
    assert analyze("INFO 04-19 02:06:37 retrying: Request failed once, trying again\n").root_cause is None


def test_mpirun_naming_a_rank_a_signal_ended_is_a_failure() -> None:
    """TensorRT-LLM#1700: mpirun's box around 'process rank 6 ... exited on signal 9 (Killed).'"""
    text = ("--------------------------------------------------------------------------\n"
            "Primary job  terminated normally, but 1 process returned\n"
            "a non-zero exit code. Per user-direction, the job has been aborted.\n"
            "--------------------------------------------------------------------------\n"
            "mpirun noticed that process rank 6 with PID 0 on node xxxxxxxx exited on signal 9 (Killed).\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.kind == "log_line" and "exited on signal 9" in rc.message


def test_a_constructor_in_a_native_backtrace_is_start_up() -> None:
    """TensorRT-LLM#2393: 'terminate called ... TllmException' whose frames build the batch manager
    (TrtGptModelInflightBatching's constructor), no log line before it telling the phase."""
    text = ("terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
            "  what():  Internal Error: Failed to create an execution context. (/src/tensorrt_llm/cpp/tensorrt_llm/"
            "runtime/tllmRuntime.cpp:178)\n"
            "1       0x7e76489a82a2 /workspaces/llgtrt/cpp/build/tensorrt_llm/plugins/libtensorrt_llm.so(+0x7682a2) "
            "[0x7e76489a82a2]\n"
            "2       0x7e764aba3e91 tensorrt_llm::batch_manager::TrtGptModelInflightBatching::createRuntimeContexts() + 81\n"
            "3       0x7e764abb0f90 tensorrt_llm::batch_manager::TrtGptModelInflightBatching::TrtGptModelInflightBatching("
            "std::shared_ptr<nvinfer1::ILogger>, tensorrt_llm::runtime::ModelConfig const&, tensorrt_llm::bat\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "tensorrt_llm::common::TllmException"
    assert rc.phase == "startup_other"
    # a serving frame still says serving, constructor or not
    served = text.replace("createRuntimeContexts()", "forwardAsync()")
    rc = analyze(served).root_cause
    assert rc is not None and rc.phase == "serving"


def test_open_mpis_backtrace_frames_without_their_header_are_a_crash() -> None:
    """TensorRT-LLM#2518 and #912: the frames Open MPI's signal handler prints, pasted without its
    '*** Process received signal ***' header."""
    text = ("[40a8c9673b05:1447852] [ 9] /lib/x86_64-linux-gnu/libmpi.so.40(ompi_request_default_wait+0x24b)"
            "[0x7fc1ff3192db]\n"
            "[40a8c9673b05:1447852] [13] /lib/x86_64-linux-gnu/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1ff32d881]\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.exception_type is None
    assert rc.line == 1
    # a bracketed host and a bracketed level are no frame
    assert analyze("[node1:1234] [INFO] started (pid 1234)[0x1]\n").root_cause is None


def test_a_model_xinference_launches_is_start_up() -> None:
    """xinference#1112: its model actor's load (xinference/core/model.py) calls the engine's own load, whose
    frame line the window cut before the function's name."""
    text = ("Traceback (most recent call last):\n"
            '  File "xoscar/core.pyx", line 524, in xoscar.core._BaseActor.__on_receive__\n'
            "    result = func(*args, **kwargs)\n"
            '  File "/opt/conda/lib/python3.10/site-packages/xinference/core/model.py", line 239, in load\n'
            "    self._model.load()\n"
            '  File "/opt/conda/lib/python3.10/site-packages/xinference/model/llm/vllm/core.py", line 139, in\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "startup_other"


def test_tensorrt_llms_version_line_says_the_program_is_starting() -> None:
    """TensorRT-LLM#2476: trtllm-bench's start, an MPI error, then a traceback cut before its frames."""
    text = ("[TensorRT-LLM] TensorRT-LLM version: 0.15.0.dev2024111200\n"
            "[11/21/2024-10:26:10] [TRT-LLM] [I] Initializing Executor.\n"
            "[worker:15806] PRTE ERROR: Bad parameter in file base/odls_base_default_fns.c at line 962\n"
            "Traceback (most recent call last):\n"
            '  File "/home/lilin/anaconda3/envs/tensorrt_llm/bin/trtllm-bench",\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "startup_other"
    # it only tells a timeline that knows nothing yet: a rank importing TensorRT-LLM later moves nothing back
    rows = timeline("INFO 05-07 02:14:20 [gpu_model_runner.py:1600] Capturing CUDA graph shapes:  10%\n"
                    "[TensorRT-LLM] TensorRT-LLM version: 0.15.0\n")
    assert [r["phase"] for r in rows] == ["cuda_graph_capture"]


def test_the_native_frames_of_a_crash_report_say_its_phase() -> None:
    """TensorRT-LLM#912: Open MPI's frames of a crash in GptSession::generateBatched (mangled); the frames of
    another process in the same report do not count."""
    text = ("[dev-aigc-20:31439] [16] /usr/local/tensorrt/lib/libnvinfer.so.9(+0x10a5320)[0x7f70c7a8e320]\n"
            "[dev-aigc-20:31439] [17] /usr/local/lib/python3.10/dist-packages/tensorrt_llm/bindings.cpython-310-x86_64-"
            "linux-gnu.so(_ZN12tensorrt_llm7runtime10GptSession18executeContextStepERKSt6vectorINS0_15GenerationInput"
            "ESaIS3_EERKS2_IiSaIiEEPKNS_13batch_manager16kv_cache_manager14KVCacheManagerE+0x3b7)[0x7f70c0160747]\n"
            "[dev-aigc-20:31439] [18] /usr/local/lib/python3.10/dist-packages/tensorrt_llm/bindings.cpython-310-x86_64-"
            "linux-gnu.so(_ZN12tensorrt_llm7runtime10GptSession15generateBatchedERSt6vectorINS0_16GenerationOutput"
            "ESaIS3_EERKS2_INS0_15GenerationInputESaIS7_EERKNS0_14SamplingConfigERKSt8functionIFvibEE+0xad4)"
            "[0x7f70c0161744]\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "serving"
    other = text.replace("[dev-aigc-20:31439] [1", "[dev-aigc-20:31440] [1").replace(
        "[dev-aigc-20:31440] [16]", "[dev-aigc-20:31439] [16]")
    rc = analyze(other).root_cause
    assert rc is not None and rc.phase == "unknown"


def test_a_log_cut_right_after_a_record_announcing_a_stack_ends_inside_it() -> None:
    """intel-arc-pro-b70-inference-cookbook#4 and llm-on-ray#197: the only failure is the record that
    logger.exception prints above a stack ('EngineCore failed to start.', 'Request failed:'), and the log
    ends in the stack's first line: the final error is the cut stack."""
    p = "(EngineCore pid=316) "
    a = analyze(p + "WARNING 08-21 18:37:44 [kv_cache_utils.py:1227] Add 3 padding layers, may waste at most 6.25% "
                "KV cache memory\n" + p + "ERROR 08-21 18:37:44 [core.py:1344] EngineCore failed to start.\n(Eng")
    assert a.root_cause is not None and a.final is not None
    assert a.final.truncated and a.final.exception_type is None and a.final.phase == a.root_cause.phase
    r = "(ServeReplica:llama-2-7b-chat-hf:PredictorDeployment pid=2799681) "
    a = analyze(r + "ERROR 2024-04-19 02:06:37,427 llama-2-7b-chat-hf_PredictorDeployment c5fp5i4e 3e35b1cb "
                "/llama-2-7b-chat-hf/llama-2-7b-chat-hf replica.py:352 - Request failed:\n"
                + r + "ray::ServeReplica:llama-2-7b-chat-hf:PredictorDeployment.handle_request_with_rejection() "
                "(pid=2799681, ip=10.0.11.2)\n"
                + r + '  File "/home/ykp/miniconda3/envs/llmonray_master_ipex/lib/python3.9/site-packages/ray/ser')
    assert a.final is not None and a.final.truncated and a.final.phase == "serving"
    # a record that announces nothing, or one the log goes on well after, is no cut stack
    assert not analyze(p + "ERROR 08-21 18:37:44 [core.py:1344] CUDA out of memory\n").final.truncated
    assert not analyze(p + "ERROR 08-21 18:37:44 [core.py:1344] EngineCore failed to start.\n"
                       + "".join(p + f"INFO 08-21 18:37:4{i} [api_server.py:1] shutting down\n" for i in range(6))
                       ).final.truncated


def open_stream(text: str) -> AbstractContextManager[io.BytesIO]:
    return io.BytesIO(text.encode())


def test_a_log_that_ends_at_multiprocessings_process_header_ends_in_that_process_failing() -> None:
    """lmdeploy#4407: Ray start-up lines, Gloo's group connected, then 'Process mp_engine_proc' (the header
    multiprocessing prints above the traceback of a process whose target raised), cut before its colon."""
    text = ("2026-03-13 10:15:06,604 INFO worker.py:2013 -- Connected to Ray cluster.\n"
            "(RayWorkerWrapper pid=297851) [Gloo] Rank 0 is connected to 31 peer ranks. Expected number of "
            "connected peer ranks is : 31\n"
            "Process mp_engine_proc\n")
    a = analyze(text)
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.root_cause.message == "Process mp_engine_proc" and a.root_cause.line == 3
    assert a.root_cause.phase == "startup_other"  # the process group is up: start-up past its init
    assert a.final is not None and a.final.truncated
    with open_stream(text) as stream:
        assert analyze_stream(stream).root_cause == a.root_cause
    # the header with its colon, and blank lines after it, read the same; in the middle of a log it says nothing
    assert analyze(text.replace("proc\n", "proc:\n\n\n")).root_cause is not None
    assert analyze(text + "2026-03-13 10:15:07,000 INFO worker.py:1 -- shutting down\n").root_cause is None


def test_a_cut_traceback_says_what_failed_in_the_error_report_just_before_it() -> None:
    """TensorRT-LLM#2476: mpirun's 'PRTE ERROR: Bad parameter ...', two info records, then trtllm-bench's
    traceback cut in its first frame: the launcher's error is what is known of the failure."""
    text = ("[11/21/2024-10:26:10] [TRT-LLM] [I] Initializing Executor.\n"
            "--------------------------------------------------------------------------\n"
            "[worker:15806] PRTE ERROR: Bad parameter in file base/odls_base_default_fns.c at line 962\n"
            "[11/21/2024-10:26:11] [TRT-LLM] [I] Benchmark Shutdown called!\n"
            "[11/21/2024-10:26:11] [TRT-LLM] [I] Executor shutdown.\n"
            "Traceback (most recent call last):\n"
            '  File "/home/lilin/anaconda3/envs/tensorrt_llm/bin/trtllm-bench",\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and "PRTE ERROR: Bad parameter" in rc.message
    # with no error report before it, a cut traceback still says nothing of what failed
    rc = analyze(text.replace("PRTE ERROR: Bad parameter", "PRTE INFO: parameter")).root_cause
    assert rc is not None and rc.message == ""


def test_an_illegal_memory_access_reported_before_an_exception_is_its_cause() -> None:
    """TensorRT-LLM#2393: three '[TensorRT-LLM][ERROR] ... Error Code 1: Cuda Runtime (an illegal memory
    access was encountered)' lines, then 'terminate called' with what() 'Failed to create an execution
    context' (the call that failed in the poisoned context) under the constructor's native frames."""
    err = ("[TensorRT-LLM][ERROR] ICudaEngine::createExecutionContextWithoutDeviceMemory: Error Code 1: Cuda Runtime "
           "(an illegal memory access was encountered)\n")
    text = ("[45b53cc4f4d9:101829] PMIX ERROR: UNREACHABLE in file server/pmix_server.c at line 2198\n" + err * 3
            + "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
            "  what():  Internal Error: Failed to create an execution context. "
            "(/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:178)\n"
            "1       0x7e76489a82a2 /workspaces/llgtrt/cpp/build/tensorrt_llm/plugins/libtensorrt_llm.so(+0x7682a2) "
            "[0x7e76489a82a2]\n"
            "2       0x7e764aba3e91 tensorrt_llm::batch_manager::TrtGptModelInflightBatching::createRuntimeContexts() "
            "+ 81\n"
            "3       0x7e764abb0f90 tensorrt_llm::batch_manager::TrtGptModelInflightBatching::"
            "TrtGptModelInflightBatching(std::shared_ptr<nvinfer1::ILogger>) + 2064\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.kind == "log_line" and "illegal memory access" in rc.message
    assert rc.line == 2 and rc.phase == "startup_other"  # the exception's phase, the error line saying none
    # an error that does not poison the context leaves the exception the root cause
    rc = analyze(text.replace("an illegal memory access was encountered", "out of range")).root_cause
    assert rc is not None and rc.kind == "exception" and "execution context" in rc.message


def test_a_container_kubernetes_saw_crash_is_a_dead_process() -> None:
    """llm-d-benchmark#668: the stand-up script waits for the vLLM pod, then reports its container crashed."""
    text = ('16:52:53 - "vllm-standalone-llama-3-1b-845945945-dljsw" pod running\n'
            "16:52:53 - Waiting for pods to be Ready (timeout=900s)\n"
            "16:53:24 - ❌ Crashed container in pod: vllm-standalone-llama-3-1b-845945945-dljsw\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.kind == "log_line" and "Crashed container in pod" in rc.message and rc.line == 3
    rc = analyze("vllm-0   0/1   CrashLoopBackOff   5 (2m ago)   9m\n").root_cause
    assert rc is not None and "CrashLoopBackOff" in rc.message


def test_triton_loading_a_model_is_start_up() -> None:
    """QAnything#60: Triton's FasterTransformer backend reports the instance group it builds, then a C++
    assertion aborts the server; no frame says where."""
    text = ("I0123 10:46:27.965026 91 libfastertransformer.cc:387] Instance group type: KIND_CPU count: 1\n"
            "I0123 10:46:27.965873 91 libfastertransformer.cc:417] Sequence Batching: disabled\n"
            "I0123 10:46:27.966620 91 libfastertransformer.cc:427] Dynamic Batching: enabled\n"
            "terminate called after throwing an instance of 'std::runtime_error'\n"
            "  what():  [FT][ERROR]  Assertion fail: /home/local/llama_inference/llm_serve/fastertransformer_backend/"
            "build/_deps/repo-ft-src/src/fastertransformer/utils/cuda_utils.h:118\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "std::runtime_error" and rc.phase == "startup_other"
    rows = timeline("I0123 10:46:27.940000 91 libfastertransformer.cc:1 TRITONBACKEND_ModelInstanceInitialize: "
                    "fastertransformer_0 (device 0)\n")
    assert [r["phase"] for r in rows] == ["startup_other"]
