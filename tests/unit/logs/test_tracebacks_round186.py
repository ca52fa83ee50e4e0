"""What held-outs 186-189 (RL frameworks' rollout engines, KV-cache offload and disaggregation, vendors' model bring-up,
Kubernetes and managed GPU clouds) showed missing, each a general rule: a window whose worst line is a warning that
states a failure names that warning."""

from __future__ import annotations

import pytest

from workbench.tracebacks import analyze


@pytest.mark.parametrize(("log", "said"), [
    # Rust tracing at WARN (dynamo's etcd lease), then the reconnect it tried
    ("2026-06-12T17:29:50.126353Z  WARN dynamo_runtime::transports::etcd::lease: Failed to establish keep-alive stream "
     "lease_id=7 error=grpc request error\n", "Failed to establish keep-alive stream"),
    # a library's own bracketed level inside a worker's prefix
    ("(EngineCore_DP0 pid=6480) [kvcached][WARNING][2025-10-24 18:04:59][patches.py:213] Failed to patch "
     "kv_cache_coordinator\n", "Failed to patch kv_cache_coordinator"),
    # glog's W level
    ("W0904 10:52:53.047694     512 ucx_utils.cpp:62] Unexpected UCX error: Request canceled\n"
     "W0904 10:52:53.047704     515 ucx_utils.cpp:62] Unexpected UCX error: Request canceled\n",
     "Unexpected UCX error: Request canceled"),
])
def test_a_warning_that_states_a_failure_is_the_root_when_nothing_worse_is(log: str, said: str) -> None:
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and said in rc.message


@pytest.mark.parametrize("log", [
    # advice, a deprecation, a retry, a fallback: warnings that say the program goes on
    "WARNING 06-30 11:26:07 [x.py:1] Failed to connect, retrying in 5 s\n",
    "W0904 10:52:53.047694  512 a.cpp:62] Attempt 1: All connection attempts failed\n",
    "[TensorRT-LLM][WARNING] may use dynamic buffer which will fail with NIXL backend. It is recommended to set it\n",
    "WARNING 06-30 11:26:07 [x.py:1] Failed to import flash_attn, falling back to the Triton kernels\n",
    "2026-06-12T17:29:50Z  WARN runtime: error=connection refused, reconnecting to the store\n",
])
def test_a_warning_of_a_note_retry_or_advice_is_no_failure(log: str) -> None:
    assert analyze(log).root_cause is None


def test_an_error_beats_an_earlier_warning() -> None:
    log = ("WARNING 06-30 11:26:07 [x.py:1] Failed to patch the coordinator\n"
           "ERROR 06-30 11:26:08 [y.py:2] Engine core initialization failed\n")
    rc = analyze(log).root_cause
    assert rc is not None and "Engine core initialization failed" in rc.message


@pytest.mark.parametrize("log", [
    # the kubelet's probes of a server that never answered
    'Warning  Unhealthy  16s (x292 over 50m)  kubelet  Startup probe failed: Get "http://10.0.0.1:8000/v1/health/ready": '
    "dial tcp 10.0.0.1:8000: connect: connection refused\n",
    "Kind: Pod, Name: ReadinessProbeFailed, Type: Warning, Message: Readiness probe failed: HTTP probe failed with "
    "statuscode: 502\n",
    # the scheduler finding no node for the pod; the container daemon refusing to run it
    "Warning  FailedScheduling   20s (x5 over 20m)   default-scheduler   0/3 nodes are available: 3 node(s) didn't match "
    "Pod's node affinity/selector.\n",
    "docker: Error response from daemon: unknown or invalid runtime name: nvidia\n",
    # a port variable Kubernetes' service discovery set to a URI; a tokenizer file from a newer tokenizers
    "ERROR 11-26 09:29:11 engine.py:366] ValueError: invalid literal for int() with base 10: 'tcp://10.0.0.2:80'\n",
    "Exception: data did not match any variant of untagged enum ModelWrapper at line 277156 column 3\n",
    # vLLM's environment variables, read as the engine sets itself up
    'Traceback (most recent call last):\n  File "/x/vllm/utils.py", line 663, in _get_open_port\n    port = envs.VLLM_PORT\n'
    '  File "/x/vllm/envs.py", line 172, in get_vllm_port\n    raise ValueError(\n'
    "ValueError: VLLM_PORT 'tcp://10.0.0.3:6785' appears to be a URI.\n",
])
def test_a_pod_or_container_that_never_came_up_fails_in_start_up(log: str) -> None:
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "startup_other"
