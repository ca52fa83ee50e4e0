"""A log whose last line was cut inside a quoted value, after a word a sentence cannot end on, or in glog's head; and
one that ended whole after a bracket its writer never closed."""

from __future__ import annotations

import pytest

from workbench.tracebacks import analyze
from workbench.tracebacks.cut import ends_cut


@pytest.mark.parametrize("line", [
    "ERROR 05-16 11:10:22 [dump_input.py:72] Dumping input data with config: model='Qwen3.6",
    "failed: Server error '500 Internal Server Error' for url 'http://localhost:4000/v1/complet",
    "Worker exit detail: Worker unexpectedly exits with",
    "RuntimeError: could not load the",
    "E1204 10:45:22.131799 108700 transfer_metadata.cpp:85",
    # a repr cut, the last of its sentences short of its end
    "RuntimeError: ('torch._dynamo failed\\n\\nYou can suppress this exception and fall back to eager by setting:\\n"
    "    import torch.",
])
def test_a_last_line_cut_inside_its_record_is_cut(line: str) -> None:
    assert ends_cut((9, line))


@pytest.mark.parametrize("line", [
    "AttributeError: 'GroupCoordinator' object has no attribute 'allreduce'. Did you mean: 'all_reduce'?",
    "Error message: `KeyError: 'layers.0.attention.wk.weight'`",
    "[6300] Failed to execute script 'koboldcpp\u2019 due to unhandled exception!",
    """"msg"="You can verify this by running 'kubectl get crd rayclusters.ray.io'" "logger"="setup\"""",
    "ValueError: can't load the users' weights",
    "RuntimeError: the model is not supported by this backend",
    "E1204 10:45:22.131799 108700 transfer_metadata.cpp:85] Failed to put segment description",
    # a bracket its writer never closed, sentences after it (vLLM's KV-cache check)
    "ValueError: To serve at least one request with the models's max seq len (118000), (6.30 GiB KV cache is needed, "
    "which is larger than the available KV cache memory (6.11 GiB). Based on the available memory, the estimated "
    "maximum model length is 114432. Try increasing `gpu_memory_utilization` when initializing the engine.",
])
def test_a_whole_last_line_is_not_cut(line: str) -> None:
    assert not ends_cut((9, line))


def test_the_final_failure_of_a_log_cut_in_a_quoted_value_is_truncated() -> None:
    log = ("Traceback (most recent call last):\n"
           '  File "/x/engine.py", line 3, in run\n'
           "    raise ValueError(repr(cfg))\n"
           "ValueError: bad config: {'model': 'Qwen3.6\n")
    final = analyze(log).final
    assert final is not None and final.truncated
    whole = analyze(log.replace("'Qwen3.6\n", "'Qwen3.6'}\n")).final
    assert whole is not None and not whole.truncated
