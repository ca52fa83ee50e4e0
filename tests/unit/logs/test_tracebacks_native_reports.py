"""Failure reports with no Python traceback: Go's runtime on a signal, torch elastic's summary of a signalled rank,
ggml's abort, ptxas refusing a kernel, Metal's command buffer; and last lines that end a report whole."""

from __future__ import annotations

import pytest

from workbench.tracebacks import analyze
from workbench.tracebacks.cut import ends_cut


@pytest.mark.parametrize(("log", "said"), [
    ("INFO Discovered GPU libraries\nSIGSEGV: segmentation violation\nPC=0x7180ec649a70 m=17 sigcode=1\n"
     "signal arrived during cgo execution\n", "SIGSEGV: segmentation violation"),
    ("  rank      : 0 (local_rank: 0)\n  exitcode  : -11 (pid: 6421)\n"
     "  traceback : Signal 11 (SIGSEGV) received by PID 6421\n", "Signal 11 (SIGSEGV) received by PID 6421"),
    ("warming up the model with an empty run\nggml-cpu.c:13612: fatal error\n", "ggml-cpu.c:13612: fatal error"),
    ("Internal Triton PTX codegen error\n\nptxas fatal : Value 'sm_121a' is not defined for option 'gpu-name'\n",
     "Value 'sm_121a' is not defined"),
    ("srv  process_chun: processing image...\nggml_metal_graph_compute: command buffer 0 failed with status 5\n",
     "command buffer 0 failed with status 5"),
    (".../ggml/src/ggml-cpu/ggml-cpu-aarch64.cpp:4012: GGML_ASSERT(params->wsize >= (GGML_PAD(nbw3, 8)))\n",
     "GGML_ASSERT(params->wsize"),
    ("  1073741824     268435456     float     sum      -1    19355   55.48  110.84      0\n"
     "HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '\n",
     "Test NCCL failure common.cu:1204"),
    ("[agzen-worker:386753] Error: coll_hcoll_module.c:312 - mca_coll_hcoll_comm_query() Hcol library init failed\n"
     "# nThread 1 nGpus 1 minBytes 128 maxBytes 4294967296\n", "Hcol library init failed"),
    ("[  +0.000012] amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:32781)\n"
     "[  +0.000006] amdgpu 0000:03:00.0: amdgpu:  in process python3 pid 5748 thread python3 pid 5748)\n",
     "[gfxhub] page fault"),
    ("[24078.925037] MTGPU:(Error): 56377:  PID 1747 experienced error Guilty Lockup (0x1) caller[CheckFWCCB CTX Reset]\n",
     "experienced error Guilty Lockup"),
    ("Failures:\n[1]:\n  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 69812)\n"
     "------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n"
     "  time      : 2024-03-05_07:01:51\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 69811)\n"
     "  error_file: <N/A>\n", "exitcode  : 1 (pid: 69811)"),
    ("[default0]:12:13:46    INFO Starting training step 0\nW1130 12:13:49.388000 124326 torch/distributed/elastic/agent/"
     "server/api.py:723] Received 15 death signal, shutting down workers\n", "Received 15 death signal"),
    ("1758 -- Didn't receive health check response for replica Replica(id='rut1591v', deployment='vLLM:Qwen3-32B', "
     "app='RayServeApp') after 10.0s, marking it unhealthy.\n", "health check response for replica"),
    ("2026-04-23 14:04:02.064 [Info] (Process) dyld[41630]: Library not loaded: @rpath/libllama-common.0.dylib\n",
     "Library not loaded: @rpath/libllama-common.0.dylib"),
    ("cuda call failed lazily at initialization with error: device >=0 && device < num_gpus INTERNAL ASSERT FAILED at "
     '"../aten/src/ATen/cuda/CUDAContext.cpp": 50\n', "device >=0 && device < num_gpus INTERNAL ASSERT FAILED"),
    ("/usr/lib/python3.12/site-packages/torch/cuda/__init__.py:991: UserWarning: CUDA initialization: Unexpected error "
     "from cudaGetDeviceCount(). Error 803: system has unsupported display driver / cuda driver combination\n",
     "Error 803: system has unsupported display driver"),
    (":1:rocmemory.cpp :1043: Failed to create memory for IPC, failed with hsa_status: 4097\n",
     "failed with hsa_status: 4097"),
    ("May 08 19:27:35 host kernel: amdgpu 0000:c2:00.0: ring gfx_0.0.0 timeout, signaled seq=166926, emitted seq=166928\n",
     "ring gfx_0.0.0 timeout"),
    ("Sep 18 03:19:01 host nvidia-fabricmanager-start.sh[4756]: request to query NVSwitch device information from "
     "NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]\n", "from NVSwitch driver failed"),
    ("[Thu Feb 12 20:35:53 2026] amdgpu 0000:65:00.0: amdgpu: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:3)\n",
     "retry page fault"),
    ("Error during inference: CUDA out of memory. Tried to allocate 730.00 MiB. GPU 0 has a total capacity of 7.57 GiB\n",
     "CUDA out of memory. Tried to allocate 730.00 MiB"),
    ("(SGLangHttpServer pid=250977) [torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h "
     "func=cu_mem_create line=194\n", "CUresult error: 2 (out of memory)"),
    ("(autoscaler +13s) Error: No available node types can fulfill resource request {'GPU': 1.0}. Add suitable node "
     "types to this cluster to resolve this issue.\n", "No available node types can fulfill resource request"),
    ("[AIC_INFO] The DDR address of the MTE instruction is out of range.\n", "MTE instruction is out of range"),
])
def test_a_failure_reported_without_a_traceback_is_found(log: str, said: str) -> None:
    root = analyze(log).root_cause
    assert root is not None and root.kind == "log_line" and said in (root.message or "")


def test_an_elastic_summary_of_other_failures_is_no_root_cause_alone() -> None:
    """torch elastic's exit codes count only under its "Root Cause (first observed failure):" head; a signal's death
    (a negative code) is said on its own traceback line."""
    assert analyze("Failures:\n[1]:\n  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 69812)\n").root_cause is None
    assert analyze("Root Cause (first observed failure):\n[0]:\n  exitcode  : 0 (pid: 9)\n").root_cause is None


def test_an_assertion_an_exception_line_quotes_stays_with_it() -> None:
    """torch's INTERNAL ASSERT inside an exception's message (or a record quoting it) is that exception's, not a
    failure line of its own."""
    log = ("Traceback (most recent call last):\n  File \"/x/server.py\", line 5, in warmup\n    run()\n"
           "RuntimeError: captures_underway.empty() INTERNAL ASSERT FAILED at \"/pytorch/c10/cuda/"
           "CUDACachingAllocator.cpp\":3085, please report a bug to PyTorch.\n"
           "Error: Backend(Warmup(Generation(\"Unexpected <class 'RuntimeError'>: captures_underway.empty() INTERNAL "
           "ASSERT FAILED at \\\"/pytorch/c10/cuda/CUDACachingAllocator.cpp\\\":3085\")))\n")
    root = analyze(log).root_cause
    assert root is not None and root.kind == "exception" and root.exception_type == "RuntimeError"


def test_a_plain_log_line_is_no_failure() -> None:
    assert analyze("INFO serving on 0.0.0.0:8000\nSIGSEGV handler installed\nfatal errors: 0\n").root_cause is None


@pytest.mark.parametrize("line", [
    "======================================================",  # torch elastic's summary ends on a rule
    "-lineinfo -v --gpu-name=sm_121a /tmp/xxx.ptx -o /tmp/xxx.ptx.o",  # a file's extension, not a cut word
])
def test_a_whole_last_line_is_not_cut(line: str) -> None:
    assert not ends_cut((9, line), near="ptxas fatal : Value 'sm_121a' is not defined for option 'gpu-name'")


def test_a_dotted_name_cut_is_still_cut() -> None:
    assert ends_cut((9, "vllm.v1.engine.exceptions.Engin"), near="raise EngineDeadError()")


@pytest.mark.parametrize(("line", "cut"), [
    ("   4: core::ptr::drop_in_place<cudarc::driver::safe::core::CudaSlice<u8>>", True),
    ("   6:     0x564a0f7cade8 - std::panicking::begin_panic_handler::{{closure}}::hd5f53fdb59d78538", True),
    ("  12: _dl_open", True),
    ("  18: _start", False),  # the outermost frame: the backtrace ended
    (" 0: RuntimeError: boom", False),  # srun's label before a sentence
])
def test_a_log_that_ends_inside_a_rust_backtrace_was_cut(line: str, cut: bool) -> None:
    assert ends_cut((9, line)) is cut


@pytest.mark.parametrize(("log", "phase"), [
    # NVSHMEM (DeepEP's communicator) failing as it starts
    ("Allocating buffer size: 2116.2912 MB ...\n"
     "/root/nvshmem_src/src/modules/transport/ibgda/ibgda.cpp:3005: non-zero status: 7 ibgda_rc_init2rtr failed\n"
     "/root/nvshmem_src/src/host/init/init.cu:998: non-zero status: 7 building transport map failed\n", "nccl_init"),
    # an engine that cannot start, a config refused as it is built
    ("ValueError: Current node has no GPU available. current_node_resource={'CPU': 96.0}. vLLM engine cannot start "
     "without GPU. Make sure you have at least 1 GPU available in a node\n", "startup_other"),
    ("ValidationError: 1 validation error for ModelConfig\nValue error, The checkpoint you are trying to load has model "
     "type hunyuan_v1_dense but Transformers does not recognize this architecture.\n", "startup_other"),
    # a prediction cog failed: a request being served
    ('Traceback (most recent call last):\n  File "/x/cog/server/runner.py", line 474, in _handle_done\n'
     "    f.result()\ncog.server.exceptions.FatalWorkerException: Prediction failed for an unknown reason. It might "
     "have run out of memory? (exitcode -6)\n", "serving"),
])
def test_the_words_of_a_failure_name_its_phase(log: str, phase: str) -> None:
    root = analyze(log).root_cause
    assert root is not None and root.phase == phase
