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
