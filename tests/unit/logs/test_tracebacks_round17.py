"""Mechanisms added after held-out 17 was measured (issue 15, sixteenth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.tracebacks import analyze


def test_a_run_of_c10_frames_under_a_ray_prefix_is_a_failure_cut_above_the_window() -> None:
    """vllm#4108: a Ray worker's c10 frames of an NCCL watchdog's error, the error's own lines above the window."""
    p = "(RayWorkerVllm pid=7046) "
    lib = "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so"
    text = (f"{p}frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x118 "
            "(0x7f5144530128 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10_cuda.so)\n"
            f"{p}frame #3: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x80 "
            f"(0x7f4da9f2f250 in {lib})\n"
            f"{p}frame #4: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 (0x7f4da9f33078 in {lib})\n"
            f"{p}frame #5: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x250 (0x7f4da9f49910 in {lib})\n")
    a = analyze(text)
    assert a.root_cause is not None and a.root_cause.exception_type is None and a.root_cause.line == 1
    assert a.final is not None and a.final.truncated and a.final.exception_type is None
    # two frames are no backtrace, nor is a sentence about a frame
    assert analyze("".join(text.splitlines(keepends=True)[:2])).final is None
    assert analyze(f"{p}frame #2: dropped (the video stream lagged)\n" * 3).root_cause is None


def test_a_run_of_ucx_frames_under_a_ray_prefix_is_a_failure_cut_above_the_window() -> None:
    """vllm#17242: a TP 16 Ray worker's native backtrace in UCX's "N 0x... f()  file:line" form."""
    p = "(RayWorkerWrapper pid=376235, ip=10.10.10.61) "
    text = (f"{p}14 0x0000000000004493 ???()  /usr/lib/x86_64-linux-gnu/libffi.so.8:0\n"
            f"{p}15 0x000000000000a3e9 ???()  /usr/lib/python3.10/lib-dynload/_ctypes.cpython-310-x86_64-linux-gnu.so:0\n"
            f"{p}17 0x0000000000150a7b _PyObject_MakeTpCall()  ???:0\n"
            f"{p}18 0x0000000000149096 _PyEval_EvalFrameDefault()  ???:0\n")
    a = analyze(text)
    assert a.root_cause is not None and a.root_cause.exception_type is None and a.root_cause.line == 1
    assert a.final is not None and a.final.truncated


def test_vllms_crash_handler_frames_in_engine_core_records_are_a_failure_cut_above_the_window() -> None:
    """tt-inference-server#4658: vLLM's EngineCore ERROR records holding only "--- VLLM::EngineCore(sym+0x..)
    [0x...]" frames; the first frame is the failure and the window is cut."""
    p = "(EngineCore_DP0 pid=280) ERROR 07-15 10:48:46 core.py:1033]  --- VLLM::EngineCore("
    text = (f"{p}_PyFunction_Vectorcall+0x7c) [0x55fb937cf53c]\n{p}_PyEval_EvalFrameDefault+0x8cf) [0x55fb937b7a7f]\n"
            f"{p}_PyFunction_Vectorcall+0x7c) [0x55fb937cf53c]\n{p}PyEval_EvalCode+0x86) [0x55fb938aa816]\n")
    a = analyze(text)
    assert a.root_cause is not None and a.root_cause.line == 1 and "_PyFunction_Vectorcall" in a.root_cause.message
    assert a.final is not None and a.final.truncated


def test_tritons_unavailable_model_status_is_a_start_up_failure() -> None:
    """tensorrtllm_backend#662: Triton's status for a model whose backend library would not load, on its own
    (as the model table's last column holds it too)."""
    status = ("UNAVAILABLE: Not found: unable to load shared library: /opt/tritonserver/backends/tensorrtllm/"
              "libtriton_tensorrtllm.so: undefined symbol: _ZNK12tensorrt_llm8executor8Response11getErrorMsgB5cxx11Ev")
    for text in (status, f"| tensorrt_llm | 1       | {status} |"):
        rc = analyze(text + "\n").root_cause
        assert rc is not None and "undefined symbol" in rc.message and rc.phase == "startup_other"
    # the status of a model that loaded, and prose about an unavailable service, are no failure
    assert analyze("| tensorrt_llm | 1       | READY  |\n").root_cause is None
    assert analyze("the endpoint was UNAVAILABLE: retrying in 5 s\n").root_cause is None


_LMDEPLOY = ("2024-04-24 19:19:00,509 - lmdeploy - INFO - Checking environment for PyTorch Engine.\n"
             "2024-04-24 19:19:03,669 - lmdeploy - ERROR - RuntimeError: Triton Error [CUDA]: device kernel image is "
             "invalid\n"
             "2024-04-24 19:19:03,669 - lmdeploy - ERROR - <Triton> test failed!\n"
             "Please ensure it has been installed correctly.\n")


def test_an_exception_line_logged_as_a_python_logging_record_is_a_bare_exception() -> None:
    """lmdeploy#1083: lmdeploy logs the exception its environment check caught as one ERROR record under Python
    logging's default head; the record after it is not its message."""
    rc = analyze(_LMDEPLOY).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    assert rc.message == "Triton Error [CUDA]: device kernel image is invalid"
    # the same line at INFO is one too (a launcher's logger relays its child's stderr at INFO: the thirty-ninth stop's
    # shapes bench); a record whose text only names an exception, or is no exception line, is none
    rc = analyze(_LMDEPLOY.replace("ERROR - RuntimeError", "INFO - RuntimeError")).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    named = "2024-04-24 19:19:03,669 - lmdeploy - INFO - Retrying after RuntimeError: Triton Error [CUDA]: x\n"
    rc = analyze(named).root_cause
    assert rc is None or rc.exception_type is None
    assert analyze("2024-04-24 19:19:03,669 - lmdeploy - ERROR - Note: retrying the check\n").root_cause.exception_type is None


def test_lmdeploy_choosing_and_checking_its_pytorch_engine_is_start_up() -> None:
    """lmdeploy#1083 ("Checking environment for PyTorch Engine.") and lmdeploy#2026 ("Try to run with pytorch engine
    because ... is not explicitly supported by lmdeploy."): the engine is not built yet."""
    rc = analyze(_LMDEPLOY).root_cause
    assert rc is not None and rc.phase == "startup_other"
    text = ("2024-07-15 16:44:07,336 - lmdeploy - WARNING - Try to run with pytorch engine because /data/glm4v_model "
            "is notexplicitly supported by lmdeploy.\n/usr/bin/ld: cannot find -lcuda\n"
            "collect2: error: ld returned 1 exit status\n")
    rc = analyze(text).root_cause
    assert rc is not None and "cannot find -lcuda" in rc.message and rc.phase == "startup_other"


def test_a_window_that_ends_inside_the_logged_exceptions_own_record_is_cut() -> None:
    """lmdeploy#2026: the CalledProcessError record is the window's last line, cut inside the gcc command's list."""
    line = ("2024-07-15 16:44:08,558 - lmdeploy - ERROR - CalledProcessError: Command '['/usr/bin/gcc', "
            "'/tmp/tmpz6ods113/main.c', '-O3', '-shared', '-fPIC', '-lcuda', '-L/lib64', \n")
    a = analyze(line)
    assert a.final is not None and a.final.exception_type == "CalledProcessError" and a.final.truncated
    assert a.final.last_complete is None
    # the whole record is not cut, nor is a cut record that a later line follows
    whole = line.replace("'-L/lib64', \n", "'-L/lib64']' returned non-zero exit status 1.\n")
    assert not analyze(whole).final.truncated
    assert not analyze(line + "2024-07-15 16:44:09,001 - lmdeploy - INFO - exiting\n").final.truncated


def test_a_lone_what_with_no_rank_prefix_takes_the_rank_of_its_process_group_tag() -> None:
    """sglang#8296: c10d's watchdog error as a lone "what():" line (no "terminate called" before it, no "[rankN]:"
    prefix), its rank only in the "[PG ID 2 PG GUID 3 Rank 1]" tag."""
    text = ("  what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with exception: CUDA error: "
            "an illegal memory access was encountered\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n")
    rc = analyze(text).root_cause
    assert rc is not None and "illegal memory access" in rc.message and rc.ranks == ("rank1",)
    # a prefix's rank still wins over the tag
    rc = analyze("[rank3]: " + text.replace("\nFor", "\n[rank3]: For")).root_cause
    assert rc is not None and rc.ranks == ("rank3",)


def test_the_coded_line_of_a_cann_error_block_is_its_failure_not_the_advice_before_it() -> None:
    """vllm-omni#705: a Stage-0 worker's CANN error block at ERROR level, led by the advice about
    ASCEND_LAUNCH_BLOCKING and PTA's "ERR00100 PTA call acl api failed", its fourth line the error code's."""
    p = "[Stage-0] ERROR 01-16 10:20:16 [gpu_worker.py:226] "
    text = (f"{p}Note: ASCEND_LAUNCH_BLOCKING=1 will force ops to run in synchronous mode, resulting in performance "
            "degradation. Please unset ASCEND_LAUNCH_BLOCKING in time after debugging.\n"
            f"{p}[ERROR] 2026-01-16-10:20:16 (PID:5393, Device:0, RankID:0) ERR00100 PTA call acl api failed.\n"
            f"{p}[PID: 5393] 2026-01-16-10:20:15.729.456 Memory_Allocation_Failure(EL0004): Failed to allocate memory.\n"
            f"{p}        Possible Cause: Available memory is insufficient.\n")
    rc = analyze(text).root_cause
    assert rc is not None and "Memory_Allocation_Failure(EL0004): Failed to allocate memory" in rc.message
    # the bare code form too; a coded line far below the first error line is another block's
    rc = analyze(text.replace("Memory_Allocation_Failure(EL0004)", "EL0004")).root_cause
    assert rc is not None and "EL0004: Failed to allocate memory" in rc.message
    lines = text.splitlines(keepends=True)
    far = lines[0] + f"{p}ok\n" * 5 + lines[2]
    rc = analyze(far).root_cause
    assert rc is not None and "Note: ASCEND_LAUNCH_BLOCKING" in rc.message


def test_a_lazy_import_traceback_with_no_engine_frames_is_start_up() -> None:
    """lmdeploy#4040: transformers' lazy module importing on first use, after a pynvml FutureWarning, the
    exception line cut off."""
    f = '  File "/home/u/.local/lib/python3.12/site-packages/transformers/utils/import_utils.py", '
    text = ("Traceback (most recent call last):\n"
            f"{f}line 2302, in __getattr__\n    module = self._get_module(self._class_to_module[name])\n"
            f"{f}line 2330, in _get_module\n    return importlib.import_module(\".\" + module_name, self.__name__)\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "startup_other"
    # the same import under a serving loop's frame is serving
    serving = text.replace("Traceback (most recent call last):\n", "Traceback (most recent call last):\n"
                           '  File "/sglang/srt/managers/scheduler.py", line 900, in event_loop_normal\n'
                           "    self.process_input_requests(recv_reqs)\n")
    rc = analyze(serving).root_cause
    assert rc is not None and rc.phase == "serving"


def test_sglang_diffusion_loading_a_pipeline_component_is_weight_loading() -> None:
    """gpustack#3848: SGLang's multimodal_gen loading a Flux transformer, then its rank 0 scheduler dead (-9)."""
    text = ("[12-11 17:47:40] Loading FluxTransformer2DModel, default_dtype: torch.bfloat16\n"
            "[12-11 17:47:40] Using FlashAttention (FA3 for hopper, FA4 for blackwell) backend\n"
            "[12-11 17:52:52] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
            "[12-11 17:52:54] Exit code: -9\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "weight_loading"
    rc = analyze(text.replace("Loading FluxTransformer2DModel, default_dtype: torch.bfloat16",
                              "Loading model from 3 safetensors files")).root_cause
    assert rc is not None and rc.phase == "weight_loading"
