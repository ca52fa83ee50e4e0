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
