"""What held-outs 155-162 (kernel and communication libraries, other inference servers, training frameworks, multi-node
and HPC launches; GPU drivers and telemetry, managed deployments, multimodal serving, benchmark harnesses) showed
missing, each a general rule: a failure a line states in plain words with no level as the last resort, and as the cause
of a death just below it; the launch layer (Slurm, PMI, Open MPI, Ray's cluster, cloud machines, image pulls) as
start-up; the rendezvous as the communicator's set-up; a model's file named as what would not load; benchmark and
evaluation clients as serving; Go's signal line, i915's GPU hang, the kubelet's failed hooks, the container engine's
daemon refusal."""

from __future__ import annotations

import pytest

from workbench.tracebacks import analyze


@pytest.mark.parametrize(("log", "said"), [
    ("Task failed because the node it was running on is dead or unavailable. Node IP: 127.0.0.1, node ID: e55b8c\n",
     "Task failed because the node"),
    ("2025-12-01T10:02:03Z llama-server <completion> exited with status code -1073740791, for more information\n",
     "exited with status code -1073740791"),
    ("level_zero backend failed with error: 20 [UR_RESULT_ERROR_DEVICE_LOST]\n", "UR_RESULT_ERROR_DEVICE_LOST"),
    ("Deserialization of tag dest_data_ep_4 failed\n", "Deserialization of tag"),
    # (the first of two: what the window said first)
    ("[GPU] ProgramBuilder build failed!\nError during llm node initialization for models_path: /models/x\n",
     "ProgramBuilder build failed"),
])
def test_a_failure_stated_with_no_level_is_the_last_resort(log: str, said: str) -> None:
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and said in rc.message


@pytest.mark.parametrize("log", [
    "Will ignore error and continue. Error: [Errno 30] Read-only file system: '/root/.cache'\n",
    "tests: 12 passed, 0 FAILED\n",
    " (no failures)\n",
    "Recent failures:\n",
    "The test marked FAILED yesterday passes again today\n",
    "Failed to update parameter online, then it worked after a restart.\n",
    "WARNING: Failed to read commit hash:\n",
    # (a warning that states a failure is a last resort since held-out 186: test_tracebacks_round186.py)
    "Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")\n",
    "INFO 01-01 00:00:00 [core.py:1] Attempt 1 failed, retrying\n",
    "# Failed Trace\n",
    "ollama exited with code 0\n",
])
def test_a_warning_a_note_or_a_sentence_about_a_failure_is_none(log: str) -> None:
    assert analyze(log).root_cause is None


def test_an_error_record_comes_before_a_stated_failure() -> None:
    log = ("Deserialization of tag dest_data_ep_4 failed\n"
           "INFO 01-01 00:00:01 [core.py:1] one\nINFO 01-01 00:00:01 [core.py:1] two\n"
           "ERROR 01-01 00:00:01 [core.py:1] EngineCore failed to start.\n")
    rc = analyze(log).root_cause
    assert rc is not None and "EngineCore failed to start" in rc.message


@pytest.mark.parametrize(("log", "said"), [
    ("Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file\n"
     "Aborted (core dumped)\n", "Could not load library libcudnn_ops_infer.so.8"),
    ("```HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n"
     "Available Free mem: 30 MB\nFatal Python error: Aborted\n", "HSA_STATUS_ERROR_OUT_OF_RESOURCES"),
    ("FATAL: exception not rethrown\nAborted (core dumped)\n", "FATAL: exception not rethrown"),
])
def test_what_a_line_just_above_a_death_states_is_its_cause(log: str, said: str) -> None:
    rc = analyze(log).root_cause
    assert rc is not None and said in rc.message


def test_a_traceback_comes_before_a_stated_failure() -> None:
    log = ("Deserialization of tag dest_data_ep_4 failed\n"
           "Traceback (most recent call last):\n"
           '  File "/x/y.py", line 3, in f\n'
           "ValueError: bad\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "exception" and rc.exception_type == "ValueError"


@pytest.mark.parametrize(("log", "phase"), [
    # the launch layer: Slurm placing tasks, the PMI wire-up, Open MPI's daemons, Slurm's container plugin
    ("srun: error: Application launch failed: Unable to layout tasks on given cpus\n", "startup_other"),
    ("[c1:123] PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c at line 168\n", "startup_other"),
    ("PMII_singinit: execv failed: No such file or directory\n", "startup_other"),
    ("ORTE was unable to reliably start one or more daemons.\n", "startup_other"),
    ("[2025-11-06T20:36:19.163] [19.0] error: pyxis: couldn't start container\n", "startup_other"),
    # a node joining a Ray cluster, a cloud launcher's machines, Kubernetes refusing a pod its GPUs
    ("[2025-07-23 10:05:49,679 E 51000 51000] gcs_rpc_client.h:151: Failed to connect to GCS at address :6379 "
     "within 5 seconds.\n", "startup_other"),
    ("RuntimeError: Failed to SSH to 10.128.0.10 after timeout 600s, with Timeout: SSH connection is not ready.\n",
     "startup_other"),
    ("Warning  UnexpectedAdmissionError  28m  kubelet  Allocate failed due to device plugin GetPreferredAllocation rpc "
     "failed with err: rpc error: code = Unknown desc = error calling nvml.Init: Unknown Error\n", "startup_other"),
    # the rendezvous every process group starts with
    ("ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable RANK expected, "
     "but not set\n", "nccl_init"),
    ("[E socket.cpp:1019] [c10d] The client socket has timed out after 900000ms while trying to connect to "
     "(10.0.0.1, 29500).\n", "nccl_init"),
    # a model's file as what would not load, over start-up frames
    ('Traceback (most recent call last):\n  File "/app/llama_cpp/llama.py", line 372, in __init__\n'
     '    internals.LlamaModel(\n  File "/app/llama_cpp/_internals.py", line 55, in __init__\n'
     '    raise ValueError(f"Failed to load model from file: {path_model}")\n'
     "ValueError: Failed to load model from file: /models/m.gguf\n", "weight_loading"),
    ("2025-04-23T03:14:07.818830Z ERROR text_embeddings_backend: backends/src/lib.rs:255: Could not start Candle "
     "backend: Could not start backend: cannot find tensor encoder.layer.0.attention.q_lin.weight\n", "weight_loading"),
    # ollama's client told the runner failed while it generated
    ("Error: an unknown error was encountered while running the model CUDA error: out of memory\n", "serving"),
])
def test_phase_from_the_failure_s_words(log: str, phase: str) -> None:
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == phase


@pytest.mark.parametrize("log", [
    # a running cluster that lost its GCS is no start
    "[2025-07-28 08:40:52,953 E 1 43] gcs_rpc_client.h:196: Failed to connect to GCS within 60 seconds. GCS may have "
    "been killed.\n",
    # the watchdog's check of a flag on the store is no rendezvous
    '[rank1]:[W1030 ProcessGroupNCCL.cpp:1645] [PG ID 0 PG GUID 0 Rank 1] Failed to check the "should dump" flag on '
    "TCPStore, (maybe TCPStore server has shut down too early), with error: Broken pipe\n",
])
def test_words_of_a_running_job_are_not_start_up(log: str) -> None:
    rc = analyze(log).root_cause
    assert rc is None or rc.phase not in ("startup_other", "nccl_init")


def test_a_frame_named_embed_outside_infinity_is_no_request() -> None:
    log = ("Traceback (most recent call last):\n"
           '  File "/work/scripts/device_assert.py", line 25, in main\n'
           "    h = embed(token_ids, weight).float()\n"
           '  File "/work/scripts/device_assert.py", line 19, in embed\n'
           "    return F.embedding(token_ids, weight)\n"
           "RuntimeError: CUDA error: device-side assert triggered\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "unknown"


def test_infinity_s_embed_is_a_request() -> None:
    log = ("Traceback (most recent call last):\n"
           '  File "/env/site-packages/infinity_emb/engine.py", line 150, in embed\n'
           "    embeddings, usage = await self._batch_handler.embed(sentences=sentences)\n"
           "infinity_emb.primitives.ModelNotDeployedError: the loaded model cannot fullyfill `embed`.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "serving"


@pytest.mark.parametrize("log", [
    "[signal 0xc0000005 code=0x0 addr=0x0 pc=0x7ff6b3b759d9]\n\ngoroutine 66 [running]:\n",
    "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x5581c3]\n",
])
def test_go_s_signal_line_is_a_fatal_signal(log: str) -> None:
    analysis = analyze(log)
    assert [e.kind for e in analysis.events] == ["fatal_signal"]
    assert analysis.root_cause is not None and analysis.root_cause.message.startswith("[signal ")


def test_an_orphan_header_takes_its_frames_across_another_writer_s_lines() -> None:
    """A header whose frames carry another process's prefix (nested under one worker's) takes them whether or not
    another worker's lines come between (hypothesis found the two readings apart)."""
    lines = ['(APIServer pid=11384) ERROR 11-29 13:18:32 [async_llm.py:906] Traceback (most recent call last):',
             '(EngineCore pid=11589) ERROR 11-29 13:18:32 [core.py:1512]   File "/x/vllm/distributed/device_communicators/'
             'shm_broadcast.py", line 867, in acquire_read']
    worker = [f"(VllmWorker rank=1 pid=11) ERROR 05-16 16:35:18 [multiproc_executor.py:470] {ln}" for ln in lines]
    other = [f"(VllmWorker rank=0 pid=10) INFO 05-16 16:35:18 [x.py:1] noise {i}" for i in range(len(lines))]
    mixed = [x for pair in zip(other, worker, strict=True) for x in pair]
    alone, both = analyze("\n".join(worker)), analyze("\n".join(mixed))
    assert [len(t.frames) for t in alone.tracebacks] == [len(t.frames) for t in both.tracebacks] == [1]


@pytest.mark.parametrize(("log", "kind", "said", "phase"), [
    ("Unable to find image 'llm-nim:latest' locally\n"
     "docker: Error response from daemon: pull access denied for llm-nim, repository does not exist or may require "
     "'docker login': denied: requested access to the resource is denied.\nSee 'docker run --help'.\n",
     "error_line", "pull access denied for llm-nim", "startup_other"),
    ("GPU HANG: ecode 12:1:85def5fb, in llama-bench [1538400]\nPlatform: METEORLAKE\n", "xid", "GPU HANG", "unknown"),
    ("7m45s       Normal    Killing             pod/p-0   Stopping container model-runner\n"
     "7m30s       Warning   FailedPreStopHook   pod/p-0   PreStopHook failed\n", "error_line", "PreStopHook failed",
     "unknown"),
])
def test_reports_of_the_host_s_and_the_cluster_s_own(log: str, kind: str, said: str, phase: str) -> None:
    analysis = analyze(log)
    assert [e.kind for e in analysis.events][:1] == [kind]
    rc = analysis.root_cause
    assert rc is not None and said in rc.message and rc.phase == phase


@pytest.mark.parametrize("frames", [
    '  File "/vllm/benchmarks/benchmark_serving.py", line 324, in benchmark\n',
    '  File "/env/site-packages/evalscope/perf/plugin/api/default_api.py", line 123, in process_request\n',
    '  File "/llmperf/token_benchmark_ray.py", line 116, in get_token_throughput_latencies\n',
    '  File "/env/site-packages/lm_eval/evaluator.py", line 500, in evaluate\n',
])
def test_a_benchmark_or_evaluation_client_s_request_is_serving(frames: str) -> None:
    rc = analyze("Traceback (most recent call last):\n" + frames + "KeyError: 'delta'\n").root_cause
    assert rc is not None and rc.phase == "serving"


def test_a_harness_s_own_benchmark_function_is_no_request() -> None:
    log = ("Traceback (most recent call last):\n"
           '  File "/env/site-packages/scandeval/cli.py", line 282, in benchmark\n'
           "    benchmarker(model=model)\n"
           '  File "/env/site-packages/scandeval/benchmarker.py", line 536, in benchmark\n'
           "    self._benchmark_single(dataset_config)\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "unknown"


@pytest.mark.parametrize("frames", [
    '  File "/env/site-packages/gradio/queueing.py", line 536, in process_events\n'
    '  File "/env/site-packages/gradio/route_utils.py", line 322, in call_process_api\n',
    '  File "/env/site-packages/cog/server/worker.py", line 420, in _loop\n'
    "    self._predict(e.tag, e.event.payload, predict, redirector)\n",
])
def test_a_gradio_event_or_a_cog_prediction_is_a_request(frames: str) -> None:
    rc = analyze("Traceback (most recent call last):\n" + frames + "RuntimeError: boom\n").root_cause
    assert rc is not None and rc.phase == "serving"


def test_a_benchmark_s_count_of_no_failed_requests_is_none() -> None:
    log = ("============ Serving Benchmark Result ============\n"
           "Successful requests:                     100\n"
           "Failed requests:                         0\n")
    assert analyze(log).root_cause is None


@pytest.mark.parametrize("log", [
    "urllib.error.HTTPError: HTTP Error 400: Bad Request\n",
    "ValueError: Ollama call failed with status code 404. Maybe your model is not found\n",
    "[Error] 2025-05-23 06:08:32 Api response error: /api/core/ai/model/test, 400 status code (no body)\n",
    'Error: {"error":{"code":400,"message":"dry_sequence_breakers must be a non-empty array"}}\n',
])
def test_a_client_told_the_server_s_http_status_is_serving(log: str) -> None:
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "serving"


def test_a_kernel_journal_line_without_its_host_keeps_its_xid() -> None:
    log = ("Mar 27 17:40:36 kernel: NVRM: Xid (PCI:0000:01:00): 62, 223b6a66 00002100 00000000 20662342\n"
           "Mar 27 17:40:36 kernel: NVRM: GPU0 _kgspRpcGspEventPmuHalted: Received signal from GSP that PMU has halted.\n")
    analysis = analyze(log)
    assert [e.kind for e in analysis.events][:1] == ["xid"]
    assert analysis.root_cause is not None and "Xid (PCI:0000:01:00): 62" in analysis.root_cause.message


@pytest.mark.parametrize(("log", "kind", "said", "phase"), [
    # (held-outs 167-170) Ray's memory monitor, an image the kubelet cannot pull, a Ray cluster that cannot place an
    # engine's workers for minutes
    ("Memory on the node (IP: 10.0.0.2, ID: 9f) where the task was running was 94.5GB / 99.4GB (0.950839), which "
     "exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: 1a) because it was the most recently "
     "scheduled task\n", "oom_kill", "exceeds the memory usage threshold of 0.95", "unknown"),
    ("  Warning  Failed     12s (x4 over 1m)   kubelet  Error: ImagePullBackOff\n", "error_line", "ImagePullBackOff",
     "startup_other"),
    ("INFO 05-01 10:00:00 [ray_utils.py:1] Waiting for creating a placement group of specs for 150 seconds. "
     "specs=[{'GPU': 1.0}]. Check `ray status` to see if you have enough resources.\n", "error_line",
     "placement group of specs for 150 seconds", "startup_other"),
])
def test_reports_of_loads_and_clusters_refused(log: str, kind: str, said: str, phase: str) -> None:
    analysis = analyze(log)
    assert [e.kind for e in analysis.events][:1] == [kind]
    rc = analysis.root_cause
    assert rc is not None and said in rc.message and rc.phase == phase


def test_a_placement_group_a_cluster_is_still_bringing_up_is_no_failure() -> None:
    log = ("INFO 05-01 10:00:00 [ray_utils.py:1] Waiting for creating a placement group of specs for 10 seconds. "
           "specs=[{'GPU': 1.0}]. Check `ray status` to see if you have enough resources.\n")
    assert analyze(log).root_cause is None


@pytest.mark.parametrize(("frames", "phase"), [
    ('  File "/env/site-packages/transformers/models/auto/auto_factory.py", line 558, in from_pretrained\n'
     '  File "/env/site-packages/transformers/modeling_utils.py", line 3155, in from_pretrained\n', "weight_loading"),
    ('  File "/env/site-packages/peft/peft_model.py", line 459, in from_pretrained\n', "weight_loading"),
    ('  File "/env/site-packages/sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py", line 115, in '
     "from_pretrained\n", "startup_other"),
])
def test_a_model_s_loader_reads_its_weights(frames: str, phase: str) -> None:
    rc = analyze("Traceback (most recent call last):\n" + frames + "ValueError: boom\n").root_cause
    assert rc is not None and rc.phase == phase


@pytest.mark.parametrize(("log", "said"), [
    # (held-outs 171-174) a CPU without the instructions a build uses, the shell's word alone or its report of a
    # script's command
    ("Illegal instruction\n", "Illegal instruction"),
    ("start-vllm-service.sh: line 18:  1669 Illegal instruction     (core dumped) python -m vllm.entrypoints.openai\n",
     "1669 Illegal instruction"),
])
def test_the_shell_s_report_of_an_illegal_instruction_is_a_fatal_signal(log: str, said: str) -> None:
    analysis = analyze(log)
    assert [e.kind for e in analysis.events] == ["fatal_signal"]
    assert analysis.root_cause is not None and said in analysis.root_cause.message


def test_a_rust_panic_is_its_line_not_an_exception() -> None:
    log = ("thread 'tokio-runtime-worker' panicked at router/src/infer/queue.rs:92:14:\n"
           "Queue background task dropped the receiver or the receiver is too full.\n")
    analysis = analyze(log)
    assert [c.exception_type for c in analysis.cpp_exceptions] == ["panic"]
    rc = analysis.root_cause
    assert rc is not None and (rc.kind, rc.exception_type) == ("log_line", None) and "receiver" in rc.message
