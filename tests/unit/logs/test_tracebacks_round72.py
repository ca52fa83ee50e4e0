"""Mechanisms added in the twenty-sixth stop's third round, from held-outs 71 and 72's misses (measured untuned first):
a chain whose last link is a notebook's stack cut after its header, and Ray placing an engine's workers.  Lines in the
shapes of the real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze


def test_a_chains_last_link_cut_after_its_notebook_header_leaves_the_whole_link_before_it_the_cause() -> None:
    """unsloth#2947: triton's compile fails, and IPython's second stack (during its handling) is cut under its header."""
    log = ("/usr/local/lib/python3.11/dist-packages/triton/backends/nvidia/compiler.py in make_llir(self, src, metadata)\n"
           "    340             passes.llvmir.add_di_scope(pm)\n"
           "--> 341         pm.run(mod)\n"
           "    342         # LLVM-IR (MLIR) -> LLVM-IR (LLVM)\n"
           "\n"
           "RuntimeError: PassManager::run failed\n"
           "\n"
           "During handling of the above exception, another exception occurred:\n"
           "\n"
           "RuntimeError                              Traceback (most recent call last)\n"
           "/tmp/ipykernel_19/3010846500.py in <cell line: 0>()\n"
           "      4 lora_rank = 32\n"
           "----> 6 model,\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.message == "PassManager::run failed"


def test_ray_placing_an_engines_workers_is_start_up() -> None:
    """vllm#13388: Ray could not place the TP16 engine's workers on its nodes."""
    log = ("Waiting for creating a placement group of specs for 70 seconds... \n"
           "Error: No available node types can fulfill resource request {'node:10.61.0.27': 0.001, 'GPU': 1.0}\n")
    rc = analyze(log).root_cause
    assert rc is not None and "No available node types" in rc.message and rc.phase == "startup_other"


def test_nvccs_count_of_errors_and_ninja_giving_up_are_a_failed_compile() -> None:
    """sglang#7855: FlashInfer's JIT build of a prefill kernel fails under nvcc, and ninja stops."""
    log = ("Error limit reached.\n"
           '100 errors detected in the compilation of "/home/u/.cache/flashinfer/120/generated/batch_prefill/'
           'batch_prefill_jit_pybind.cu".\n'
           "Compilation terminated.\n"
           "ninja: build stopped: subcommand failed.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.message.startswith("100 errors detected in the compilation")


def test_turbomind_taking_a_request_is_serving() -> None:
    """lmdeploy#2195's lines (unindented): TurboMind received a request, then its forward thread's CUDA error."""
    log = ("[TM][INFO] [forward] Enqueue requests\n"
           "[TM][INFO] [ProcessInferRequests] Request for 1 received.\n"
           "[TM][INFO] [Forward] [0, 1), dc=0, pf=1, sum_q=679, sum_k=679, max_q=679, max_k=679\n"
           "terminate called after throwing an instance of 'std::runtime_error'\n"
           "  what():  [TM][ERROR] CUDA runtime error: an illegal memory access was encountered "
           "/lmdeploy/src/turbomind/models/llama/LlamaBatch.h:143\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "std::runtime_error" and rc.phase == "serving"
