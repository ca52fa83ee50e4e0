"""Mechanisms added in the twenty-eighth stop.  Lines in the shapes of real logs (the docstrings say which thread's)."""

from __future__ import annotations

from workbench.tracebacks import analyze

_FORWARD_STACK = ('Traceback (most recent call last):\n'
                  '  File "/app/api.py", line 88, in tts_api\n'
                  '    wav = vocoder(mel)\n'
                  '  File "/usr/local/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl\n'
                  '    return self._call_impl(*args, **kwargs)\n'
                  '  File "/usr/local/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1747, in _call_impl\n'
                  '    return forward_call(*args, **kwargs)\n'
                  '  File "/app/models/vocoder.py", line 412, in forward\n'
                  '    x = self.conv_pre(x)\n'
                  'RuntimeError: Given groups=1, weight of size [512, 80, 7], expected input[1, 100, 36] to have 80 channels\n')


def test_a_models_forward_with_nothing_else_telling_is_serving() -> None:
    """index-tts#19's shape: an API handler calls the model's forward and it fails; no start-up step in the stack, the
    words or the timeline.  A server runs a forward for every batch it serves; start-up only inside a named step."""
    a = analyze(_FORWARD_STACK)
    assert a.root_cause is not None and a.root_cause.phase == "serving"
    assert a.final is not None and a.final.phase == "serving"


def test_a_forward_under_a_named_step_keeps_the_step() -> None:
    """The same forward run by vLLM's memory profile is KV-cache sizing: the stack names the step."""
    log = _FORWARD_STACK.replace('  File "/app/api.py", line 88, in tts_api\n    wav = vocoder(mel)\n',
                                 '  File "/vllm/v1/worker/gpu_worker.py", line 240, in determine_available_memory\n'
                                 '    self.model_runner.profile_run()\n')
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "kv_cache_alloc"


def test_torchs_own_forward_is_not_a_models() -> None:
    """A forward in torch's own files (a hook, DataParallel) says nothing of a model being served: unknown stays."""
    log = ('Traceback (most recent call last):\n'
           '  File "/usr/lib/python3/site-packages/torch/nn/parallel/data_parallel.py", line 171, in forward\n'
           '    return self.module(*inputs, **kwargs)\n'
           'RuntimeError: chunk expects at least a 1-dimensional tensor\n')
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "unknown"
