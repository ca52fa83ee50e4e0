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


def test_an_rl_trainers_fit_is_past_the_engines_start() -> None:
    """verl#5750's shape: the driver's ray.get over TaskRunner.run, whose remote stack calls the trainer's fit and is
    cut there.  Every step of fit asks the rollout engines for generations: serving, not start-up."""
    log = ('Traceback (most recent call last):\n'
           '  File "/workspace/verl/verl/trainer/main_ppo.py", line 99, in run_ppo\n'
           '    ray.get(runner.run.remote(config))\n'
           '  File "/usr/local/lib/python3.12/dist-packages/ray/_private/worker.py", line 1026, in get_objects\n'
           '    raise value.as_instanceof_cause()\n'
           'ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=4030, ip=10.0.2.100)\n'
           '  File "/workspace/verl/verl/trainer/main_ppo.py", line 359, in run\n'
           '    trainer.fit()\n')
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_rays_memory_monitor_message_is_the_failure() -> None:
    """OpenRLHF#911's shape: a job's last logs keep only the end of Ray's message for a task its memory monitor
    killed, under the actor's prefix and no level."""
    log = ("2025-03-24 14:49:45,286\tINFO cli.py:83 -- Status message: Job entrypoint command failed with exit code 1\n"
           "(ActorModelRayActor pid=8249) 8800\t1.18\tray::ReferenceModelRayActor\n"
           "(ActorModelRayActor pid=8249) Refer to the documentation on how to address the out of memory issue: "
           "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more "
           "memory on this node or reducing task parallelism by requesting more CPUs per task.\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "how to address the out of memory issue" in a.root_cause.message
    assert [e.kind for e in a.events] == ["oom_kill"]


def test_a_log_ending_in_out_of_memory_is_not_cut_short_of_rays_phrase() -> None:
    """ollama's last record ends "cudaMalloc failed: out of memory": whole, though Ray's phrase goes on after those
    words (its needle starts earlier, so a log's end is not read as that phrase cut short)."""
    log = ('time=2025-06-05T17:54:37.891-05:00 level=ERROR source=sched.go:489 msg="error loading llama server" '
           'error="llama runner process has terminated: cudaMalloc failed: out of memory"\n')
    a = analyze(log)
    assert a.final is not None and a.final.truncated is False


def test_ascends_device_error_line_is_a_failure_at_no_level() -> None:
    """lmdeploy#3354's shape: the runtime's report of a device fault, indented inside CANN's error block."""
    log = ("        TraceBack (most recent call last):\n"
           "        The error from device(chipId:5, dieId:0), serial number is 17, hccl fftsplus task timeout occurred "
           "during task execution, stream_id:7, sq_id:7, task_id:9865, stuck notify num:3, timeout:1836.\n")
    a = analyze(log)
    assert a.root_cause is not None and "hccl fftsplus task timeout" in a.root_cause.message


def test_tensorrt_llms_cuda_graph_warmup_is_the_capture() -> None:
    """TensorRT-LLM#4708's shape: the PyTorch backend's "CUDA graph warmup" captures each batch size's graph."""
    log = ("[05/27/2025-21:12:36] [TRT-LLM] [I] [Autotuner]: Autotuning process ends\n"
           "[05/27/2025-21:12:36] [TRT-LLM] [I] Creating CUDA graph instances for 196 batch sizes.\n"
           "[05/27/2025-21:12:36] [TRT-LLM] [I] Run generation only CUDA graph warmup for batch size=196\n"
           "[05/27/2025-21:12:36] [TRT-LLM] [E] Failed to initialize executor on rank 3: [TensorRT-LLM][ERROR] CUDA "
           "runtime error in cudaMemsetAsync(ptr, 0x0, size, stream): an illegal memory access was encountered\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "cuda_graph_capture"


def test_ray_data_llms_batch_stage_serves_rows() -> None:
    """ray#64275's shape: Ray Data's vLLM stage sends each row of a batch to the engine (generate_async)."""
    log = ('  File "/env/lib/python3.13/site-packages/ray/llm/_internal/batch/stages/vllm_engine_stage.py", line 508, '
           'in generate_async\n'
           '    output = await self._generate_async(request)\n'
           '  File "/env/lib/python3.13/site-packages/ray/llm/_internal/batch/stages/vllm_engine_stage.py", line 538, '
           'in _generate_async\n'
           '    llm_prompt = vllm.inputs.data.TokensPrompt(\n'
           "AttributeError: module 'vllm.inputs' has no attribute 'data'\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "serving"


def test_oneccls_error_records_are_read_and_name_the_collectives() -> None:
    """ipex-llm#11877's shape: oneCCL's records ("|CCL_ERROR|") carry their level; the first is the failure, and ATL
    (oneCCL's transport) failing is the communicators' step."""
    from workbench.logformats import parse_line

    first = "2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi_helper.cpp:867 atl_ofi_get_prov_list: fi_getinfo error: ret -61, providers 0"
    parsed = parse_line(first)
    assert (parsed.level, parsed.pid, parsed.location) == ("ERROR", 4456, "atl_ofi_helper.cpp:867")
    log = (first + "\n"
           "2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi.cpp:243 init: can't find suitable provider\n"
           "2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi_comm.cpp:278 init_transport: condition "
           "transport->init(nullptr, nullptr, &attr, nullptr, pmi) == ATL_STATUS_SUCCESS failed\n"
           "failed to initialize ATL\n")
    a = analyze(log)
    assert a.root_cause is not None and "fi_getinfo error: ret -61" in a.root_cause.message
    assert a.root_cause.phase == "nccl_init"
    # the last line ends in an acronym a constant above is named after (ATL_STATUS_SUCCESS): whole, not cut
    assert a.final is not None and a.final.truncated is False


def test_glibcs_abort_message_is_the_cause_of_the_abort_reports_after_it() -> None:
    """ipex-llm#12433's shape: glibc's fortify check aborts; absl's handler, Ray's copy of it and faulthandler each report
    the same SIGABRT after it."""
    log = ("-----> current rank: 0, world size: 4, byte_count: 65536000\n"
           "*** buffer overflow detected ***: terminated\n"
           "*** SIGABRT received at time=1732793067 on cpu 2 ***\n"
           "PC: @     0x748d6ec4e9fc  (unknown)  pthread_kill\n"
           "[2024-11-28 19:24:27,772 E 24574 26937] logging.cc:440: *** SIGABRT received at time=1732793067 on cpu 2 ***\n"
           "Fatal Python error: Aborted\n")
    a = analyze(log)
    assert a.root_cause is not None and "buffer overflow detected" in a.root_cause.message
    b = analyze("free(): invalid pointer\nAborted (core dumped)\n")
    assert b.root_cause is not None and b.root_cause.message == "free(): invalid pointer"


def test_a_tensorrt_engine_deserialised_is_the_weights_loading() -> None:
    """TensorRT-LLM#1838's shape: Triton's model manager quotes the runtime's failure to read the engine file back."""
    log = ("I0625 13:46:36.561751 1 model_lifecycle.cc:773] failed to load 'tensorrt_llm'\n"
           "E0625 13:46:36.561897 1 model_repository_manager.cc:579] Invalid argument: ensemble 'ensemble' depends on "
           "'tensorrt_llm' which has no loaded version. Model 'tensorrt_llm' loading failed with error: version 1 is at "
           "UNAVAILABLE state: Internal: unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] "
           "Assertion failed: Failed to deserialize cuda engine. (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/"
           "tllmRuntime.cpp:129)\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.phase == "weight_loading"


def test_engine_loops_of_other_servers_are_serving() -> None:
    """mistral.rs' engine step, TGI's router in a batch's span, and an engine's background loop that ended."""
    mistral = ('2024-05-10T16:54:48.027226Z ERROR mistralrs_core::engine: prompt step - Model failed with error: '
               'DTypeMismatchBinaryOp { lhs: F16, rhs: F32, op: "where" }\n')
    tgi = ("ERROR batch{batch_size=1}:prefill:prefill{id=0 size=1}:prefill{id=0 size=1}: text_generation_client: "
           "router/client/src/lib.rs:33: Server error: CANCELLED\n")
    dead = ('Traceback (most recent call last):\n'
            '  File "/usr/local/lib/python3.10/dist-packages/aphrodite/engine/async_aphrodite.py", line 31, in '
            '_raise_exception_on_finish\n'
            '    raise AsyncEngineDeadError(\n'
            'aphrodite.engine.async_aphrodite.AsyncEngineDeadError: Task finished unexpectedly.\n')
    for log in (mistral, tgi, dead):
        rc = analyze(log).root_cause
        assert rc is not None and rc.phase == "serving", log


def test_a_servers_own_initialise_failed_record_is_start_up() -> None:
    """MindIE's manager on the Ascend forum: "[MIE05E030001] Initialize modelBackends_ failed" while it starts."""
    log = ("[2025-02-19 09:59:12.384944] [917] [281473784016832] [llm] [ERROR] [llm_infer_model_instance.cpp:47] "
           "[MIE05E030001] Initialize modelBackends_ failed, export MINDIE_LLM_PYTHON_LOG_TO_STDOUT=1\n"
           "[2025-02-19 09:59:12.384965] [917] [281473784016832] [llm] [ERROR] [llm_infer_model.cpp:25] Init model "
           "instance failed.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "startup_other"


def test_bracketed_c_plus_plus_records_carry_their_level() -> None:
    """MindIE's records on the Ascend forum: bracketed fields after the time (with or without a zone), one of them the
    level; its daemon's older "time thread level file:line]" records, whose first line says that format."""
    from workbench.logformats import parse_line

    zoned = parse_line("[2025-03-10 20:26:36.604+08:00] [324] [325] [mindie-server] [ERROR] [share_memory.cpp:172] : "
                       "[MIE04E120407] [model_backend] Shared memory available is not enough on the filesystem.")
    assert (zoned.level, zoned.location) == ("ERROR", "share_memory.cpp:172")
    assert zoned.message.startswith("[MIE04E120407]")
    plain = parse_line("[2025-02-19 09:59:12.384944] [917] [281473784016832] [llm] [ERROR] [llm_infer_model_instance"
                       ".cpp:47] [MIE05E030001] Initialize modelBackends_ failed")
    assert (plain.level, plain.location) == ("ERROR", "llm_infer_model_instance.cpp:47")
    daemon = parse_line("2024-07-01 10:59:22.535626 460279 error infer_engine_inner.cc:257] Engine init config manager "
                        "falied.")
    assert (daemon.level, daemon.message) == ("ERROR", "Engine init config manager falied.")
    info = parse_line("[2025-03-10 20:26:36.599+08:00] [324] [325] [mindie-server] [INFO] [connector_launcher.cpp:127] : "
                      "[model_backend] Signal SIGCHLD handler has been registered.")
    assert info.level == "INFO"
    log = ("[2025-04-06 15:49:29.887304+08:00] [419] [421] [server] [ERROR] [llm_infer_model_instance.cpp:234] : "
           "[LLMInferModelInstance::Init] llmManager_ init fail!\n"
           "[2025-04-06 15:49:29.887347+08:00] [419] [421] [server] [ERROR] [llm_infer_model.cpp:28] : ModelInstance init "
           "failed\n")
    rc = analyze(log).root_cause
    assert rc is not None and "llmManager_ init fail!" in rc.message and rc.phase == "startup_other"


def test_llama_cpps_loader_error_is_the_weights_failure() -> None:
    """A llama.cpp CLI on a Hugging Face discussion: the loader's own line, at no level, is the failure."""
    log = ("e:\\ai\\llama.cpp\\llama-cli -m glm-4-9b-chat.q5.gguf\n\n"
           "llama_model_load: error loading model: error loading model architecture: unknown model architecture: "
           "'chatglm'\n")
    rc = analyze(log).root_cause
    assert rc is not None and "unknown model architecture: 'chatglm'" in rc.message
    assert rc.phase == "weight_loading"


def test_an_exception_whose_message_begins_on_the_next_line() -> None:
    """multiprocessing's spawn error prints "RuntimeError: " and its message indented under it; a bare "AssertionError: "
    whose next line is a traceback, not a message, is no failure of its own (lmdeploy#2621's pytest margin)."""
    log = ("RuntimeError: \n"
           "        An attempt has been made to start a new process before the\n"
           "        current process has finished its bootstrapping phase.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    assert "An attempt has been made to start a new process" in rc.message and rc.phase == "startup_other"
    wrapped = ("AssertionError: \n"
               "Traceback (most recent call last):\n"
               '  File "/opt/py3/bin/lmdeploy", line 8, in <module>\n'
               "    sys.exit(run())\n")
    a = analyze(wrapped)
    assert [t.exception_type for t in a.tracebacks] == [None]


def test_an_error_record_quoting_the_exception_a_call_raised_gives_its_type() -> None:
    """MindIE: "Failed to get vocab size from tokenizer wrapper with exception: ModuleNotFoundError: ..."."""
    log = ("[2025-05-08 17:50:19.527118] [1369] [140391139731136] [llm] [ERROR] [model_deploy_config.cpp:152] Failed to "
           "get vocab size from tokenizer wrapper with exception: ModuleNotFoundError: No module named 'mindie_llm'\n")
    rc = analyze(log).root_cause
    assert rc is not None and (rc.kind, rc.exception_type) == ("exception", "ModuleNotFoundError")
    assert rc.message == "No module named 'mindie_llm'"


def test_mpiruns_report_of_a_process_that_exited_with_an_error_is_a_death() -> None:
    """tensorrtllm_backend#459's shape: Open MPI's box, its "Exit code:" indented under it."""
    log = ("--------------------------------------------------------------------------\n"
           "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
           "the job to be terminated. The first process to do so was:\n\n"
           "  Process name: [[12525,1],0]\n"
           "  Exit code:    1\n")
    a = analyze(log)
    assert a.root_cause is not None and "exited with non-zero status" in a.root_cause.message
    assert [e.kind for e in a.events] == ["process_died"]


def test_tritons_python_backend_failing_a_requests_batch_is_serving() -> None:
    """tensorrtllm_backend#488's shape: the stub's record, its glog letter lost, then the client's copies."""
    log = ("0603 11:27:18.631800 29219 pb_stub.cc:751] \"Failed to process the request(s) for model 'tensorrt_llm_0_0', "
           "message: Python model 'tensorrt_llm_0_0' is using the decoupled mode and the execute function must return "
           "None.\"\n"
           "Received an error from server:\n")
    rc = analyze(log).root_cause
    assert rc is not None and "execute function must return None" in rc.message and rc.phase == "serving"


def test_a_runtime_that_cannot_reach_its_control_plane_is_starting() -> None:
    """Dynamo#1188's shape: the worker's runtime fails to connect to etcd as it starts."""
    log = ("2025-05-20T10:11:12.123Z ERROR dynamo_runtime::worker: Application shutdown with error: Failed to connect to "
           "etcd server\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "startup_other"


def test_an_exception_repr_with_an_empty_message_stays_a_failure() -> None:
    """logger.exception(repr(e)) of an exception raised with no words ("ValueError('')") is still the failure; only an
    exception line whose message is to follow on the next line waits for it."""
    a = analyze("ValueError('')\n")
    assert [(t.exception_type, t.message) for t in a.tracebacks] == [("ValueError", "")]
