"""What held-outs 203-205 (TensorRT-LLM, lmdeploy, Dynamo and NIXL; measured untuned at the thirty-seventh stop)
and the parts after them showed missing, each a general rule."""

from __future__ import annotations

from workbench.tracebacks import analyze

LITE = """Traceback (most recent call last):
  File "/usr/local/bin/lmdeploy", line 8, in <module>
    sys.exit(run())
  File "/usr/local/lib/python3.10/site-packages/lmdeploy/cli/entrypoint.py", line 37, in run
    args.run(args)
  File "/usr/local/lib/python3.10/site-packages/lmdeploy/cli/lite.py", line 131, in auto_awq
    auto_awq(**kwargs)
  File "/usr/local/lib/python3.10/site-packages/lmdeploy/lite/apis/auto_awq.py", line 68, in auto_awq
    smooth_layers(layers, fc2fcs, norm2fcs, act_scales, w_group_size, device)
  File "/usr/local/lib/python3.10/site-packages/lmdeploy/lite/quantization/awq.py", line 118, in smooth_ln_fcs
    assert torch.isnan(p).sum() == 0
AssertionError
"""


def test_lmdeploy_lite_offline_quantization_is_the_weights_step() -> None:
    # auto_awq / calibrate / smooth_layers rewrite the weights: what goes wrong there is weight_loading
    rc = analyze(LITE).root_cause
    assert rc is not None and rc.exception_type == "AssertionError" and rc.phase == "weight_loading"
