"""What held-outs 178-181 (the newest threads of SGLang, vLLM, vllm-ascend and siblings, and the frameworks around them)
showed missing, each a general rule: gdb's and the kernel crash utility's backtraces read as native frames (the frame a
reader names, a hung process's thread dump no crash); an exception line printed above its frames; an exception line
alone that kept its indent; glibc's heap checks; CANN's named error codes; vLLM's end of the weights' step entering the
KV cache's sizing; SGLang's idle pool check as serving."""

from __future__ import annotations

import pytest

from workbench.phases import timeline
from workbench.tracebacks import analyze

GDB_ABORT = """\
#0  __pthread_kill_implementation (no_tid=0, signo=6, threadid=<optimized out>) at ./nptl/pthread_kill.c:44
#1  __pthread_kill_internal (signo=6, threadid=<optimized out>) at ./nptl/pthread_kill.c:78
#2  0x00007f8e2c242476 in raise () from /lib/x86_64-linux-gnu/libc.so.6
#3  0x00007f8e2c2287f3 in abort () from /lib/x86_64-linux-gnu/libc.so.6
#4  0x00007f8e2c289676 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#5  0x00007f8e2c2a2e70 in free () from /lib/x86_64-linux-gnu/libc.so.6
"""


def test_gdb_backtrace_of_an_abort_names_the_abort_frame() -> None:
    a = analyze(GDB_ABORT)
    rc = a.root_cause
    assert rc is not None and rc.kind == "log_line" and "in abort () from" in rc.message
    assert a.final is not None and a.final.truncated


def test_gdb_backtrace_from_frame_zero_is_a_crash_and_its_functions_give_the_phase() -> None:
    log = ("#0  0x00007ffff7a5c4f0 in ?? () from /usr/lib/libnccl.so.2\n"
           "#1  0x00007ffff7a5c4f0 in ncclCommInitRank () from /usr/lib/libnccl.so.2\n"
           "#2  0x00007ffff7a5d000 in c10d::ProcessGroupNCCL::getNCCLComm(std::string const&) () from /usr/lib/libtorch_cuda.so\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.message.startswith("#0  0x00007ffff7a5c4f0 in ?? ()") and rc.phase == "nccl_init"


@pytest.mark.parametrize("log", [
    # a hung process's threads, each stopped waiting ("thread apply all bt")
    ("#0  __futex_abstimed_wait_common64 (private=<optimized out>, cancel=true) at ./nptl/futex-internal.c:57\n"
     "#1  __futex_abstimed_wait_common (cancel=true, private=<optimized out>) at ./nptl/futex-internal.c:87\n"
     "#2  0x00007f8a5a4a6bdf in do_futex_wait (sem=sem@entry=0x557fda93c1b0) at ./nptl/sem_waitcommon.c:111\n"),
    # the middle of a dump, no crash frame in it
    ("#9  0x0000557ebff8d9fc in _PyFunction_Vectorcall ()\n#10 0x0000557ebff785d7 in _PyEval_EvalFrameDefault ()\n"
     "#11 0x0000557ebff8d9fc in _PyFunction_Vectorcall ()\n#12 0x00007f8a5a49eac3 in start_thread (arg=<optimized out>) "
     "at ./nptl/pthread_create.c:442\n"),
])
def test_gdb_thread_dump_of_a_live_process_is_no_failure(log: str) -> None:
    assert analyze(log).root_cause is None


def test_kernel_crash_utility_backtrace_names_the_panic() -> None:
    log = ("PID: 960054   TASK: ffff8cd109059b80  CPU: 106  COMMAND: \"python\"\n"
           " #0 [ffffa5d59a524d58] machine_kexec at ffffffff8d061ab0\n"
           " #1 [ffffa5d59a524da0] __crash_kexec at ffffffff8d1ad06a\n"
           " #2 [ffffa5d59a524e60] panic at ffffffff8da96bd8\n"
           " #3 [ffffa5d59a524ed8] watchdog_timer_fn.cold at ffffffff8daa113f\n")
    rc = analyze(log).root_cause
    assert rc is not None and "panic at ffffffff8da96bd8" in rc.message


@pytest.mark.parametrize(("log", "exc", "message"), [
    ("AssertionError\n  File \"vllm/model_executor/layers/mamba/mamba_mixer2.py\", line 963, in conv_ssm_forward\n"
     "    assert block_idx_last_scheduled_token_prev_step_d is not None\n", "AssertionError", ""),
    ("ValueError: too many values\n  File \"x/y.py\", line 3, in f\n    a, b = g()\n", "ValueError", "too many values"),
])
def test_exception_printed_above_its_frames_is_their_exception(log: str, exc: str, message: str) -> None:
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "exception" and rc.exception_type == exc and rc.message == message


def test_frames_under_a_sentence_stay_a_cut_traceback() -> None:
    rc = analyze("It fails like this\n  File \"x/y.py\", line 3, in f\n    a, b = g()\n").root_cause
    assert rc is not None and rc.exception_type is None


def test_exception_line_alone_keeps_its_indent() -> None:
    rc = analyze("   ValueError: too many values to unpack (expected 2)\n").root_cause
    assert rc is not None and rc.exception_type == "ValueError" and rc.message == "too many values to unpack (expected 2)"


@pytest.mark.parametrize("said", ["corrupted size vs. prev_size", "corrupted double-linked list",
                                  "munmap_chunk(): invalid pointer", "malloc_consolidate(): invalid chunk size"])
def test_glibc_heap_check_is_the_cause_of_the_abort(said: str) -> None:
    rc = analyze(f"python -c \"from mooncake.store import MooncakeDistributedStore\"\n{said}\nAborted (core dumped)\n").root_cause
    assert rc is not None and rc.message.startswith(said)


def test_cann_named_error_code_is_a_failure() -> None:
    log = ("[PID: 749] 2025-12-29-03:16:15.787.356 Get_Socket_Timeout(EI0006): Getting socket times out. Reason: 1. The "
           "remote does not initiate a connect request.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "Getting socket times out" in rc.message


def test_sglang_idle_pool_check_is_serving_and_not_its_start_up_line() -> None:
    log = ("ValueError: token_to_kv_pool_allocator memory leak detected! self.max_total_num_tokens=270331, "
           "available_size=644, evictable_size=269628, protected_size=0\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "serving"
    start = "[2025-06-06 01:56:27 TP0] max_total_num_tokens=270331, chunked_prefill_size=8192, max_prefill_tokens=16384\n"
    assert [r["phase"] for r in timeline(start, year=2026)][-1] == "startup_other"


def test_a_process_prefix_one_space_in_is_still_the_prefix() -> None:
    rc = analyze(" (SGLangEngine pid=12589) torch.AcceleratorError: CUDA error: device-side assert triggered\n").root_cause
    assert rc is not None and rc.kind == "exception" and rc.exception_type == "torch.AcceleratorError"


@pytest.mark.parametrize(("line", "exc", "said"), [
    ("FAILED evals/gsm8k/test_gsm8k_correctness.py::test_gsm8k_correctness[DeepSeek-R1-TP] - AssertionError: GSM8K "
     "metric too low: 0.0000 < 0.9500 - 0.0800 = 0.8700", "AssertionError", "GSM8K metric too low: 0.0000 < 0.9500"),
    ("ERROR tests/entrypoints/test_chat.py::test_tool_call - RuntimeError: Server exited unexpectedly.", "RuntimeError",
     "Server exited unexpectedly."),
    # (a test outside a tests/ directory errors the same way)
    ("ERROR evals/gsm8k/test_gsm8k.py::test_setup - RuntimeError: Server exited unexpectedly.", "RuntimeError",
     "Server exited unexpectedly."),
])
def test_pytest_summary_of_a_failed_test_is_its_exception(line: str, exc: str, said: str) -> None:
    rc = analyze(line + "\n").root_cause
    assert rc is not None and rc.kind == "exception" and rc.exception_type == exc and rc.message.startswith(said)


def test_a_test_passing_is_no_failure() -> None:
    assert analyze("PASSED tests/x.py::test_y - took 3 s\n").root_cause is None


def test_cuda_gdb_stopping_on_a_kernel_fault_is_the_failure() -> None:
    log = ("CUDA Exception: Warp Illegal Address\n\n"
           "Thread 71 \"pt_autograd_0\" received signal CUDA_EXCEPTION_14, Warp Illegal Address.\n"
           "[Switching focus to CUDA kernel 0, grid 10597, block (1,0,0), thread (64,0,0), device 0, sm 125, warp 0, lane 0]\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.message.startswith("CUDA Exception: Warp Illegal Address")


_VLLM_NO_KERNEL = "ERROR 04-08 19:59:10 engine.py:400] CUDA error: no kernel image is available for execution on the device\n"
_TM_OOM = "RuntimeError: CUDA runtime error: out of memory\n"

# (log, the step its words, frames or timeline name)
STEPS = [
    # vLLM's end of the weights' step enters the KV cache's sizing (v0's and v1's words)
    ("INFO 04-08 19:59:10 model_runner.py:1115] Loading model weights took 14.9595 GB\n" + _VLLM_NO_KERNEL,
     "kv_cache_alloc"),
    ("INFO 05-07 02:13:52 [gpu_model_runner.py:1347] Model loading took 0.25 GiB and 0.9 seconds\n" + _VLLM_NO_KERNEL,
     "kv_cache_alloc"),
    # the engine's check of the GPU's architecture
    ("ValueError: Unsupported compute capability: 12.0\n", "startup_other"),
    ("RuntimeError: FlashMLA requires compute capability >= 9.0\n", "startup_other"),
    # a layer built with the model
    ('Traceback (most recent call last):\n'
     '  File "/x/site-packages/vllm/attention/layer.py", line 234, in __init__\n'
     '    self.attn_backend = get_attn_backend(\n'
     '  File "/x/site-packages/vllm/v1/attention/selector.py", line 83, in get_attn_backend\n'
     '    return _cached_get_attn_backend(\n'
     'ValueError: Invalid kv_cache_dtype: fp8_e6m2\n', "weight_loading"),
    # a grammar backend stepping a request; architectures without an implementation; a quantisation config's scheme
    ("(EngineCore_0 pid=1) ERROR 08-08 02:53:13 [backend_xgrammar.py:160] Failed to advance FSM for request resp_2021 "
     "for tokens 410. Please file an issue.\n", "serving"),
    ("ValueError: GGUF model with architecture olmo2 is not supported yet\n", "startup_other"),
    ("ValueError: LiteWhisperForConditionalGeneration has no vLLM implementation and the Transformers implementation is "
     "not compatible with vLLM.\n", "startup_other"),
    ("NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement the "
     "`SupportsPP` interface.\n", "startup_other"),
    ('Traceback (most recent call last):\n  File "/x/vllm/model_executor/layers/quantization/compressed_tensors/'
     'compressed_tensors.py", line 414, in _get_scheme_from_parts\n    raise NotImplementedError(\n'
     'NotImplementedError: No compressed-tensors compatible scheme was found.\n', "weight_loading"),
    # TensorRT building an engine; the kubelet unable to prepare a pod's devices
    ("[05/13/2024-07:00:20] [TRT] [I] Global timing cache in use. Profiling results in this builder pass will be "
     "stored.\n[05/13/2024-07:01:41] [TRT] [I] Detected 14 inputs and 1 output network tensors.\n"
     "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n", "startup_other"),
    ('Dec 01 10:00:00 node kubelet[123]: E1201 10:00:00.000000 123 pod_workers.go:1301] "Error syncing pod, '
     'skipping" err="failed to prepare dynamic resources: NodePrepareResources failed for claim default/gpu"\n',
     "startup_other"),
    # the runtime's capture calls; devices named by UUID where indices are read
    ("terminate called after throwing an instance of 'std::runtime_error'\n  what():  cudaStreamEndCapture(stream, "
     "&handle_) failed: operation failed due to a previous error during capture\n", "cuda_graph_capture"),
    ("ValueError: invalid literal for int() with base 10: 'MIG-2e782cfd-36f2-55ff-a7d5-c6734444be2b'\n", "startup_other"),
    # trtllm-build's main; MindIE failing to init its engine
    ('Traceback (most recent call last):\n  File "/usr/local/bin/trtllm-build", line 8, in <module>\n    sys.exit(main())\n'
     '  File "/usr/local/lib/python3.10/dist-packages/tensorrt_llm/commands/build.py", line 468, in main\n'
     "    rotary_type = rotary_scaling['type']\nKeyError: 'type'\n", "startup_other"),
    ("[2025-06-12 08:08:24.544+00:00] [12646] [12648] [server] [ERROR] [endpoint.cpp:45] : [MIE04E02011C] [endpoint] "
     "Failed to init engine! Please check in the env MINDIE_LOG_PATH\n", "startup_other"),
    # the constructors that allocate the KV cache (HiCache's radix cache, TurboMind's model instance)
    ('Traceback (most recent call last):\n'
     '  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/hiradix_cache.py", line 26, in __init__\n'
     '    self.token_to_kv_pool_host = MLATokenToKVPoolHost(token_to_kv_pool)\n' + _TM_OOM, "kv_cache_alloc"),
    ('Traceback (most recent call last):\n'
     '  File "/x/site-packages/lmdeploy/turbomind/turbomind.py", line 444, in _create_model_instance\n'
     '    model_inst = self.tm_model.model_comm.create_model_instance(\n' + _TM_OOM, "kv_cache_alloc"),
    # a request's output parsed as it streams; weights pushed into a running engine
    ("[2025-06-23 07:22:00] Error in parse_streaming_increment: Expecting value: line 1 column 1 (char 0)\n", "serving"),
    ("openai_harmony.HarmonyError: unexpected tokens remaining in message header: Some(\"to=functions.web\")\n",
     "serving"),
    ("AttributeError: 'NGRAMWorker' object has no attribute 'update_weights_from_tensor'\n", "serving"),
]


@pytest.mark.parametrize(("log", "phase"), STEPS)
def test_the_step_the_words_frames_or_timeline_name(log: str, phase: str) -> None:
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == phase
