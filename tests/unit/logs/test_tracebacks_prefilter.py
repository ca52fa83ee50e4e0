"""The scanner's cheap pre-filters answer exactly what the full patterns answer, on every real line we hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.logformats import parse_line
from workbench.tracebacks.patterns import _EVENT_NEEDLES, _EVENTS, event_matches, level_word

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
_LINES = sorted({
    msg
    for path in FIXTURES.rglob("*.log")
    for raw in path.read_text(errors="replace").split("\n")
    for msg in (raw, parse_line(raw).message)
})
# what level_word replaced, with glog's and c10's severity tag ("[E ProcessGroupNCCL.cpp:916]"), which it reads as "[E]"
_OLD_LEVEL = re.compile(r"\bERROR\b|\bCRITICAL\b|\bWARNING\b|\[E\]|"
                        r"\[E(?=(?:\d{4} [\d:.]+)? ?[\w.-]+\.(?:cpp|cc|cu|h|hpp):\d+\]|:onnxruntime:)")


def test_the_corpus_has_lines_of_every_event_kind() -> None:
    kinds = {k for line in _LINES for k, p in _EVENTS if p.search(line)}
    assert kinds >= {"fatal_signal", "device_assert", "error_line", "nccl_warn", "process_died", "compile_error"}


def test_event_matches_equal_every_pattern_in_order() -> None:
    for line in _LINES:
        full = [(k, m.span()) for k, p in _EVENTS for m in [p.search(line)] if m is not None]
        assert [(k, m.span()) for k, m in event_matches(line)] == full, line


@pytest.mark.parametrize("line", [
    "NVRM: Xid (PCI:0000:17:00): 79, GPU has fallen off the bus.",
    "Memory cgroup out of memory: Killed process 4242 (python3)",
    "foo.cu:12: void f(): block: [0,0,0], thread: [1,0,0] Assertion `x` failed.",
    "Killed",
    "[rank0]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout: WorkNCCL(...) ran for 600000 milliseconds before timing out.",
])
def test_each_pattern_match_contains_one_of_its_needles(line: str) -> None:
    for kind, pattern in _EVENTS:
        if pattern.search(line):
            assert any(n in line for n in _EVENT_NEEDLES[kind]), (kind, line)
    assert list(event_matches(line))


@pytest.mark.parametrize("end", [48, None])
def test_level_word_equals_the_word_boundary_regex(end: int | None) -> None:
    extra = ["xERROR", "ERROR_x", "_ERROR x", "[E] x", "WARNING.", "WARNINGS ERROR", "a CRITICAL", "ERRORERROR ERROR",
             "[E ProcessGroupNCCL.cpp:916] x", "[E1001 16:06:04.537131842 ProcessGroupNCCL.cpp:607] x", "[Errno 2] x",
             "[E:onnxruntime:, inference_session.cc:2280 operator()] x", "[W:onnxruntime:, x.cc:1 f()] y"]
    for line in [*_LINES, *extra]:
        m = _OLD_LEVEL.search(line, 0, end) if end is not None else _OLD_LEVEL.search(line)
        assert level_word(line, end) == ({"[E": "[E]"}.get(m.group(0), m.group(0)) if m else None), line


def test_needs_clean_is_the_marks_test() -> None:
    from workbench.logformats import _CLEAN_MARKS, _needs_clean

    extra = [f"x {m} y" for m in _CLEAN_MARKS] + ["36m(VllmWorker pid=1) x", " [36m(Actor pid=1) [0m x", "^ caret",
                                                 "File here", "**_ERROR x ValueError: y_**", "* bullet", "_x_"]
    for line in [*_LINES, *extra]:
        want = any(m in line for m in _CLEAN_MARKS) or (
            (line[:1].isdigit() or line[:1] == "[" or line[:2] == " [") and "m(" in line[:12]) or (
            # a CloudWatch CSV export row's stamp (seconds or milliseconds, then a comma): clean_line reads it
            line[:1].isdigit() and (line[10:11] == "," or line[13:14] == ",")) or (
            # a line in Markdown emphasis ("**_ERROR ... ValueError: ..._**"): clean_line reads it
            line[:1] in ("*", "_") and line[-1:] in ("*", "_"))
        assert _needs_clean(line) == want, line


def test_a_line_skipped_as_dull_holds_no_event_needle() -> None:
    from workbench.tracebacks.patterns import _INTERESTING, _NEEDLES

    for needle in _NEEDLES:
        assert _INTERESTING.search(needle) is not None, needle


def test_the_short_path_reads_every_real_log_as_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frame lines that skip the parser (indented, or repeating their writer's prefix) give the
    same analysis as when every line takes the general path."""
    from workbench.tracebacks import analyze
    from workbench.tracebacks.scan import Extractor

    logs = [p for p in sorted(FIXTURES.rglob("*.log")) if "heldout4" not in p.parts]
    fast = [repr(analyze(p.read_bytes())) for p in logs]
    monkeypatch.setattr(Extractor, "_short_path", lambda self, line, block, stream: None)
    slow = [repr(analyze(p.read_bytes())) for p in logs]
    assert len(logs) > 200
    for path, a, b in zip(logs, fast, slow, strict=True):
        assert a == b, path.name


def test_an_indented_process_prefix_is_read_by_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line under a cut frame that starts, indented, with another writer's process prefix ("(Worker_TP0 pid=7) ERROR
    ...") is that writer's record, not the frame's code: the short path leaves it to the general path."""
    from workbench.tracebacks import analyze
    from workbench.tracebacks.scan import Extractor

    head = "        (EngineCore_DP0 pid=6) (Worker_TP0 pid=7) ERROR 02-01 09:32:13 [multiproc_executor.py:852] "
    log = ('        fer/fused_moe/core.py", line 1635, in trtllm_fp8_block_scale_moe_op\n'
           f"{head}    result = moe_op.trtllm_fp8_block_scale_moe(\n"
           f'{head}  File "python/tvm_ffi/cython/function.pxi", line 923, in tvm_ffi.core.Function.__call__\n'
           f"{head}RuntimeError: Check failed: routing_logits.dtype() == dl_bfloat16\n")
    fast = repr(analyze(log))
    monkeypatch.setattr(Extractor, "_short_path", lambda self, line, block, stream: None)
    assert fast == repr(analyze(log))


def test_any_part_of_matches_every_text_that_holds_a_word() -> None:
    """The quick pre-search (a rare-lettered end of each word) never misses a line the words match."""
    from workbench.logformats import any_of, any_part_of
    from workbench.tracebacks.patterns import _NEEDLES, _interesting_words

    for words in (_NEEDLES, _interesting_words(strong=False), ("error", "oom", "ab", "Traceback")):
        full, part = any_of(words), any_part_of(words)
        for line in [*_LINES, *words]:
            if full.search(line) is not None:
                assert part.search(line) is not None, (line, words)
    assert any_part_of(["error"]).pattern == "rror"  # from its rarest letter on, three at least
    assert any_part_of(["Traceback"]).pattern == "Traceback"  # T is rarer than any letter after it


def test_the_chunk_search_hint_reads_every_real_log_as_the_dull_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line the reader's quiet-stretch search found a word in skips the dull test: same analysis,
    whole text and stream, as when every line is tested again."""
    import io

    from workbench.tracebacks import analyze, analyze_stream, to_json
    from workbench.tracebacks.scan import Extractor

    logs = sorted(FIXTURES.rglob("*.log"))
    def both(p: Path) -> str:
        return repr((to_json(analyze(p.read_bytes())), to_json(analyze_stream(io.BytesIO(p.read_bytes())))))
    hinted = [both(p) for p in logs]
    line = Extractor._line
    monkeypatch.setattr(Extractor, "_line", lambda self, text, interesting=False: line(self, text))
    plain = [both(p) for p in logs]
    assert len(logs) >= 250
    for path, a, b in zip(logs, hinted, plain, strict=True):
        assert a == b, path.name


def test_phase_rules_picked_by_their_needles_equal_every_rule_in_order() -> None:
    from workbench.phases import _COMPILED, _RULE_NEEDLES, _RULES, phase_of_message

    extra = ["Capture draft extend cuda graph begin", "Capture piecewise CUDA graph end", "Loading pt checkpoint shards",
             "Loading drafter model", "Loading model weights took 1 GB", "Initializing a V1 LLM engine", "\"GET /v1/models",
             "world_size=2 rank=1 local_rank=1", "Starting vLLM API server on", "Warmup failed", "x Req(rid=1)"]
    assert len(_RULE_NEEDLES) == len(_RULES)
    for line in [*_LINES, *extra]:
        full = next(((ph, order, kind) for pat, (_p, ph, order, kind) in zip(_COMPILED, _RULES, strict=True)
                     if pat.search(line)), None)
        assert phase_of_message(line) == full, line
    for line in extra:
        assert phase_of_message(line) is not None, line


def test_the_readers_byte_search_finds_what_the_line_search_finds() -> None:
    # the reader skips to the next line that matters with an RE2 search over UTF-8 bytes
    # (INTERESTING_BYTES/STRONG_BYTES); the scanner's own test per line is the re pattern
    from workbench.tracebacks.patterns import _INTERESTING, _STRONG, INTERESTING_BYTES, STRONG_BYTES

    lines = [*_LINES, "a \ufffd[0m line", "╭─ Traceback ─╮", "│ x │", "plain text with no word at all"]
    for strs, raw in ((_INTERESTING, INTERESTING_BYTES), (_STRONG, STRONG_BYTES)):
        for line in lines:
            assert (raw.search(line.encode("utf-8", "surrogatepass")) is None) == (strs.search(line) is None), line


# One real line of each phrase an engine prints at no level (phrases.LOST_TYPE_PHRASES, ANY_LEVEL_PHRASES): a row
# added to the table without a line here fails the first test.
_PHRASE_LINES = {
    "ImagePull": "  Warning  Failed     12s   kubelet  Error: ImagePullBackOff",
    "ailed to pull": 'Failed to pull image "docker.io/bitnami/etcd:3.5.18-debian-12-r5": ',
    "placement group of specs for ": "Waiting for creating a placement group of specs for 150 seconds. specs=[{'GPU': 1.0}]. "
                                     "Check `ray status` to see if you have enough resources.",
    "Failed": "7m30s       Warning   FailedPreStopHook           pod/deepeek-playground-0             PreStopHook failed",
    "probe failed: ": 'Startup probe failed: Get "http://10.244.0.208:8000/health": dial tcp 10.244.0.208:8000: connect: '
                      "connection refused",
    "Failed to initialize NVML": "[task 2025-07-01T05:06:30.005+00:00] [train] [nvidia-smi(stdout)] Failed to initialize "
                                 "NVML: Driver/library version mismatch",
    "unresolvable CDI device": "  Warning  Failed     10s (x2 over 10s)  kubelet            Error: failed to create "
                               "containerd task: failed to create shim task: OCI runtime create failed: could not apply "
                               "required modification to OCI specification: error modifying OCI spec: failed to inject "
                               "CDI devices: unresolvable CDI devices nvidia.com/gpu=GPU-8a4e1c3b",
    "failed to initialize CUDA: ": "ggml_cuda_init: failed to initialize CUDA: unknown error",
    "cudaMalloc failed: ": "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 3257.82 MiB on device 0: "
                           "cudaMalloc failed: out of memory",
    "Failed, NCCL error ": "Failed, NCCL error /src/cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp:183 "
                           "'unknown result code'",
    "Check failed: ": "[TM][FATAL] models/llama/LlamaBatch.cc:1098 Check failed: (n) == (0)",
    "can be stored in KV cache": "ValueError: The model's max seq len (32768) is larger than the maximum number of "
                                 "tokens that can be stored in KV cache (2768).",
    "No available memory for the cache blocks": "No available memory for the cache blocks. Try increasing "
                                                "`gpu_memory_utilization` when initializing the engine.",
    "Capture cuda graph failed: ": "Exception: Capture cuda graph failed: CUDA error: out of memory",
    "graph by --disable-cuda-graph": "4. disable cuda graph by --disable-cuda-graph. (Not recommonded. Huge perf loss)",
    "Piecewise CUDA Graph failed with error: ": "Piecewise CUDA Graph failed with error: CUDA out of memory.",
    "CUDA graph capture failed: ": "CUDA graph capture failed: 'Qwen3Model' object has no attribute '_warmup'",
    "error while loading shared libraries: ": "/usr/local/bin/executorWorker: error while loading shared libraries: "
                                              "libnvinfer.so.10: cannot open shared object file",
    ": non-zero status: ": "/dvs/nvshmem/src/modules/transport/ibrc/ibrc.cpp:418: non-zero status: 22 "
                           "ibv_modify_qp failed",
    "transport create connect failed": "/dvs/nvshmem/src/host/transport/transport.cpp:nvshmemi_transport_connect:"
                                       " transport create connect failed",
    "connect EPS failed": "/dvs/nvshmem/src/host/init/init.cu:nvshmemi_setup_connections:366: connect EPS failed",
    "ep_connect failed": "/dvs/nvshmem/src/modules/transport/ibrc/ibrc.cpp:1483: ep_connect failed",
    "UNAVAILABLE: ": "| llama | 1 | UNAVAILABLE: Not found: unable to load shared library: libvllm.so |",
    "KV cache memory: -": "Available KV cache memory: -0.87 GiB",
    ": NULL value ": "/sgl-workspace/nvshmem/src/modules/transport/ibgda/ibgda.cpp:1889: NULL value cannot allocate "
                     "mlx5dv_devx_uar",
    "========= Invalid __": "========= Invalid __global__ write of size 4 bytes",
    "cuFile": "gds_device_buffer.cufile_register: cuFileBufRegister returned an error = 5016",
    "error: creating server: ": "error: creating server: Internal - failed to load all models",
    "failed (attempt ": "WARN - Generate request to http://localhost:8001 failed (attempt 3/3)",
    "failed with RSMI_STATUS_": "[/sgl-workspace/mori/src/application/topology/gpu.cpp:80] rocm smi failed with "
                                "RSMI_STATUS_INIT_ERROR: An error occurred during initialization",
    "Assertion failed: ": "Assertion failed: /usr/local/lib/python3.10/dist-packages/deep_gemm/jit/../include/deep_gemm/"
                          "fp8_gemm.cuh:435, condition: status == cudaSuccess",
    "Execution of the command buffer was aborted": "Execution of the command buffer was aborted due to an error during "
                                                   "execution. Insufficient Memory (00000008:kIOGPUCommandBufferCallback"
                                                   "ErrorOutOfMemory)",
    "failed (status ": "gemm.cu:635: gemm: cublasLtMatmul failed (status 14) M=2048 K=2048 N=32 after algo reselect",
    "' for url '": "(RolloutManager pid=1191) [2026-01-05 00:27:53] http_utils.py:153 - Error: Server error '503 Service "
                   "Unavailable' for url 'http://11.215.121.109:3592/generate'",
    "got completion with error": "(LLMRayActor pid=90738, ip=172.19.24.110) mlx5: host_unknown: got completion with "
                                 "error:",
    "terminated unexpectedly": "│ ✗ Server process terminated unexpectedly                              │",
    "failed with exception: ": "Runner failed with exception: Runner has been initializing for too long: 300 seconds",
    "orte_init failed": "It looks like orte_init failed for some reason; your parallel process is",
    "Unhandled error (suppress with ": "(TaskRunner pid=5757) Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS="
                                       "1'): ray::WorkerDict.actor_rollout_generate_sequences() (pid=6249, ip=10.156.5.220)",
    # the record of triton-inference-server/server#8387 without its glog prefix (INFO: the test of its own shape is in
    # test_tracebacks_round52.py)
    "Failed to initialize Python stub: ": "\"Failed to initialize Python stub: AttributeError: 'AsyncLLM' object has no "
                                          "attribute 'engine'\\n\\nAt:\\n",
    "rpc error: code = ": "[rwkv] Fails: could not load model: rpc error: code = Unavailable desc = error "
                          "reading from server: EOF",
    "error while attempting to bind on address": "[Errno 98] error while attempting to bind on address ('10.102.241.42',"
                                                 " 42169): address already in use",
    "nvidia-container-cli: ": "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update "
                              "your driver to a newer version, or use an earlier cuda container: unknown",
    "Engine reset: engine_class=": "xe 0000:0b:00.0: [drm] Tile0: GT0: Engine reset: engine_class=ccs, logical_mask: "
                                   "0x1, guc_id=2, state=0x3",
    "amdgpu_job_timedout": "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=26, emitted "
                           "seq=27",
    "Memory access fault by GPU node": "Memory access fault by GPU node-8 (Agent handle: 0x5a1e8d0) on address (nil). "
                                       "Reason: Unknown.",
    "CUDBG_EXCEPTION_": "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS",
    # Open MPI's rmaps messages (TensorRT-LLM#5495; help-orte-rmaps-base.txt's "orte-rmaps-base:alloc-error")
    "are already filled": "All nodes which are allocated for this job are already filled.",
    "not enough slots": "There are not enough slots available in the system to satisfy the 8",
    # ggml's CUDA backend (llama.cpp#13909)
    "CUDA error: ": "CUDA error: an illegal memory access was encountered",
    # llama.cpp#21512 (its path shortened)
    "Assertion `": "llama-server: /src/llama-sampler.cpp:1094: void llama_sampler_dist_apply(llama_sampler*, "
                   "llama_token_data_array*): Assertion `found' failed.",
    # llama.cpp#18039 (its path shortened)
    "GGML_ASSERT": "/src/llama.cpp/ggml/src/ggml-backend-meta.cpp:728: GGML_ASSERT(src_ss[0].axis != "
                   "GGML_BACKEND_SPLIT_AXIS_1) failed",
    # DeepEP#274
    "DeepEP ": "DeepEP dispatch NVL receiver timeout, channel: 6, RDMA: 0, nvl: 0, src NVL: 5, head: 315, tail: 315",
    # vllm#52907's record without its "[rank0]:[W903 ...] " prefix
    "timed out after ": "[c10d] waitForInput: socket SocketImpl(fd=33, addr=[blk02]:34316, remote=[blk01]:29501) timed "
                        "out after 1800000ms",
    # sglang#12464's record without its "EZ9999: [PID: ...] <time> " head
    "The error from device(": "The error from device(chipId:7, dieId:0), serial number is 2, there is an exception of "
                              "aivec error, core id is 9, error code = 0, dump info: pc start: 0x12c0c0a8c000",
    # ipex-llm#12433
    "detected ***": "*** buffer overflow detected ***: terminated",
    # tensorrtllm_backend#1086's shape
    "(): ": "free(): invalid pointer",
    # glibc's message for a chunk freed twice, as a process prints it before SIGABRT
    "double free or corruption": "double free or corruption (out)",
    # Mooncake#1338: importing its store on an Ascend host, before "Aborted (core dumped)"
    "corrupted size vs. prev_size": "corrupted size vs. prev_size",
    "corrupted double-linked list": "corrupted double-linked list",
    # a llama.cpp CLI's output on a Hugging Face discussion (GLM-4 GGUF)
    "error loading model: ": "llama_model_load: error loading model: error loading model architecture: unknown model "
                             "architecture: 'chatglm'",
    # tensorrtllm_backend#488, its glog letter lost
    "Failed to process the request(s)": "0603 11:27:18.631800 29219 pb_stub.cc:751] \"Failed to process the request(s) "
                                        "for model 'tensorrt_llm_0_0', message: Python model 'tensorrt_llm_0_0' is using "
                                        "the decoupled mode and the execute function must return None.\"",
    # llama.cpp on Apple's Metal under Xinference (its docs' troubleshooting page)
    "failed with status ": "ggml_metal_graph_compute: command buffer 0 failed with status 5",
    # nccl-tests (its issue 322), and Open MPI's hcoll component under it (its issue 284)
    "Test NCCL failure ": "HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO)'",
    "Library not loaded: ": "2026-04-23 14:04:02.064 [Info] (Process) dyld[41630]: Library not loaded: "
                            "@rpath/libllama-common.0.dylib",
    "INTERNAL ASSERT FAILED at ": "cuda call failed lazily at initialization with error: device >=0 && device < num_gpus "
                                  "INTERNAL ASSERT FAILED at \"../aten/src/ATen/cuda/CUDAContext.cpp\": 50,",
    "UserWarning: CUDA initialization: ": "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:991: UserWarning: "
                                          "CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 803: "
                                          "system has unsupported display driver / cuda driver combination",
    "failed with hsa_status: ": ":1:rocmemory.cpp :1043: Failed to create memory for IPC, failed with hsa_status: 4097",
    "timeout, signaled seq=": "maj 08 19:27:35 host kernel: amdgpu 0000:c2:00.0: ring gfx_0.0.0 timeout, signaled "
                              "seq=166926, emitted seq=166928",
    "from NVSwitch driver failed": "Sep 18 03:19:01 host nvidia-fabricmanager-start.sh[4756]: request to query NVSwitch "
                                   "device information from NVSwitch driver failed with error:WARNING Nothing to do",
    "CUDA out of memory. Tried to allocate ": "Error during inference: CUDA out of memory. Tried to allocate 730.00 MiB. GPU 0 "
                                              "has a total capacity of 7.57 GiB of which 685.25 MiB is free.",
    "CUresult error": "[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h func=cu_mem_create "
                      "line=194",
    "No available node types can fulfill resource request": "(autoscaler +13s) Error: No available node types can fulfill "
                                                            "resource request {'GPU': 1.0}. Add suitable node types.",
    "MTE instruction is out of range": "[AIC_INFO] The DDR address of the MTE instruction is out of range.",
    "health check response for replica": "1758 -- Didn't receive health check response for replica Replica(id='rut1591v', "
                                          "deployment='vLLM:Qwen--Qwen3-32B', app='RayServeApp') after 10.0s, marking it "
                                          "unhealthy.",
    "Test CUDA failure ": "node1: Test CUDA failure common.cu:892 'out of memory'",
    "] Error: ": "[agzen-worker:386753] Error: coll_hcoll_module.c:312 - mca_coll_hcoll_comm_query() Hcol library init "
                 "failed",
    "No module named ": "/home/user/.openllm/venv/608482142055440317/bin/python: No module named bentoml",
    "Error while finding module specification for ": "/usr/bin/python3: Error while finding module specification for "
                                                     "'vllm.entrypoints.openai.api_server' (ModuleNotFoundError: No "
                                                     "module named 'vllm')",
    "signal: aborted": "llama runner process has terminated: signal: aborted (core dumped)",
    "signal: killed": "llama runner process has terminated: signal: killed",
    "signal: segmentation fault": "llama runner process has terminated: signal: segmentation fault (core dumped)",
    "Error code: ": "Error code: 500 - {'message': 'Internal server error'}",
}


def test_every_level_free_phrase_has_a_line_and_its_match_holds_the_phrase() -> None:
    from workbench.tracebacks.phrases import ANY_LEVEL_PHRASES, LOST_TYPE_PHRASES
    table = [text for text, _ in LOST_TYPE_PHRASES + ANY_LEVEL_PHRASES]
    assert sorted(table) == sorted(_PHRASE_LINES)
    for group, phrases in (("lost", LOST_TYPE_PHRASES), ("any", ANY_LEVEL_PHRASES)):
        for text, _ in phrases:
            m = next(m for k, m in event_matches(_PHRASE_LINES[text]) if k == "error_line")
            assert m.group(0) == m.group(group) and text in m.group(0), (text, m.group(0))


def test_a_level_free_phrase_is_an_event_on_a_line_with_no_level_and_only_lost_types_stand_for_an_exception() -> None:
    from workbench.tracebacks.events import log_event, lost_type
    from workbench.tracebacks.phrases import LOST_TYPE_PHRASES
    lost = {text for text, _ in LOST_TYPE_PHRASES}
    for text, line in _PHRASE_LINES.items():
        parsed = parse_line(line)
        assert parsed.level is None, line
        event = log_event(parsed, parsed.message, 7, "serving", "s", [line])
        assert event is not None and event.kind == "error_line", line
        assert lost_type(event) == (text in lost), line
    # a generic error word still needs an error level (ggml's "CUDA error: " heading its own line is a row above)
    quiet = parse_line("the run printed CUDA error: an illegal memory access was encountered (at INFO, only quoted)")
    assert log_event(quiet, quiet.message, 7, "serving", "s", []) is None
