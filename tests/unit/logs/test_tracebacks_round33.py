"""Mechanisms added from misses of held-out 33 (projects around vLLM and SGLang, measured once untuned first), each
on lines written in the shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze
from workbench.tracebacks.native import frame_function


def test_a_wrapper_that_reraises_the_handled_errors_message_gives_way_to_it() -> None:
    """litellm#2831: the provider's "except Exception as e: raise VLLMError(status_code=0, message=str(e))" over the
    import that failed: the wrapper says nothing more; the error it handled is the root cause, the wrapper the final."""
    p = "/usr/lib/python3.11/site-packages/gateway/providers/engine.py"
    log = "\n".join((
        "Traceback (most recent call last):",
        f'  File "{p}", line 20, in check_environment',
        "    import vllm",
        "ImportError: libcudart.so.12: cannot open shared object file",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        f'  File "{p}", line 44, in completion',
        "    check_environment()",
        f'  File "{p}", line 25, in check_environment',
        "    raise ProviderError(code=0, message=str(e))",
        "gateway.providers.engine.ProviderError: libcudart.so.12: cannot open shared object file",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "ImportError"
    assert a.final is not None and a.final.exception_type == "gateway.providers.engine.ProviderError"


def test_a_wrapper_with_its_own_words_stays_the_root_cause() -> None:
    log = "\n".join((
        "Traceback (most recent call last):",
        '  File "/app/x.py", line 3, in f',
        "    g()",
        "KeyError: 'a'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/app/x.py", line 5, in f',
        "    raise ValueError('no config named a')",
        "ValueError: no config named a",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "ValueError"


def test_command_line_parsing_frames_are_start_up_whatever_an_nccl_line_before_says() -> None:
    """ms-swift#6960: an NCCL INFO line (another process's) just before a stack that is still parsing the command line
    (transformers' HfArgumentParser building the argument dataclass, its __post_init__), cut there: start-up."""
    log = "\n".join((
        "node1:1234:1234 [0] NCCL INFO enqueue.cc:2432 -> 1",
        "Traceback (most recent call last):",
        '  File "/opt/train/cli/grpo.py", line 7, in <module>',
        "    grpo_main()",
        '  File "/opt/train/llm/base.py", line 31, in _parse_args',
        "    args, remaining = parser.parse_args_into_dataclasses(argv, return_remaining_strings=True)",
        '  File "/venv/lib/python3.10/site-packages/transformers/hf_argparser.py", line 345, in parse_args_into_dataclasses',
        "    obj = dtype(**inputs)",
        '  File "<string>", line 120, in __init__',
        '  File "/opt/train/llm/arguments.py", line 248, in __post_init__',
        "    self._check_rollout()",
        '  File "/opt/train/llm/argu',
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "startup_other"


def test_an_rl_trainers_weight_update_into_a_running_engine_is_serving() -> None:
    """OpenRLHF#536: vLLM v0's worker runs the trainer's update_weight method (a broadcast from the trainer's group),
    its stack cut inside torch.distributed: the engine was up and serving between rollouts."""
    h = "(LLMRayActor pid=4) ERROR 11-28 02:28:01 worker_base.py:466] "
    log = "\n".join((
        h + "Error executing method update_weights_from_distributed. This might cause deadlock in distributed execution.",
        h + "Traceback (most recent call last):",
        h + '  File "/venv/lib/python3.10/site-packages/vllm/worker/worker_base.py", line 458, in execute_method',
        h + "    return executor(*args, **kwargs)",
        h + '  File "/opt/rl/trainer/ray/worker_ext.py", line 39, in update_weights_from_distributed',
        h + "    torch.distributed.broadcast(weight, 0, group=self._model_update_group)",
        h + '  File "/venv/lib/python3.10/site-packages/torch/distributed/c10d_logger.py", line 83, in wrapper',
        h + "    return func(*args, **kwargs)",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "serving"


def test_an_exception_a_proxy_says_occurred_is_the_failure_before_a_cut_stack() -> None:
    """litellm#9367: the proxy's line "...(): Exception occured - litellm.NotFoundError: NotFoundError: ..." before
    a stack cut inside the client call: the exception the line names is what failed."""
    log = "\n".join((
        "proxy.server._handle_exception(): Exception occured - gateway.NotFoundError: NotFoundError: "
        "UpstreamException - Error code: 404 - {'detail': 'Not Found'}",
        "",
        "Traceback (most recent call last):",
        '  File "/app/gateway/llms/openai.py", line 952, in async_streaming',
        "    headers, response = await self.make_request(",
        '  File "/venv/lib/python3.9/site-packages/openai/_legacy_response.py", line 381, in wrapped',
        "    return cast(LegacyAPIResponse[R",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "gateway.NotFoundError"
    assert "UpstreamException - Error code: 404" in a.root_cause.message
    assert a.final is not None and a.final.truncated


def test_the_ncclcheck_macros_failed_call_is_the_failure_not_nccls_warning_that_points_back() -> None:
    """TensorRT-LLM#1039: NCCL warns that a communicator is used after a failed operation, then the plugin's
    NCCLCHECK prints "Failed, NCCL error <file>:<line> '<result>'" with no level: that failed call is what failed."""
    log = "\n".join((
        "host:39:39 [2] init.cc:303 NCCL WARN Attempt to use communicator before the previous operation returned "
        "ncclSuccess",
        "host:39:39 [2] NCCL INFO enqueue.cc:1605 -> 512",
        "Failed, NCCL error /src/cpp/plugins/ncclPlugin/allgatherPlugin.cpp:97 'unknown result code'",
        "host:38:41 [0] NCCL INFO [Service thread] Connection closed by localRank 2",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.message.startswith("Failed, NCCL error ")


def test_nccls_warning_of_the_cuda_failure_stays_the_cause_of_an_unhandled_cuda_error() -> None:
    """lmdeploy#1108's shape: NCCL's warning names the CUDA failure, the NCCLCHECK line only says 'unhandled cuda
    error': the warning says what went wrong."""
    log = "\n".join((
        "init.cc:1582 NCCL WARN Cuda failure 'no CUDA-capable device is detected'",
        "Failed, NCCL error /src/utils/nccl_utils.cc:296 'unhandled cuda error (run with NCCL_DEBUG=INFO for details)'",
        "Aborted (core dumped)",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and "no CUDA-capable device is detected" in rc.message


def test_a_method_the_launchers_record_names_above_the_shards_stack_gives_its_step() -> None:
    """text-generation-inference#1750: the launcher logs the shard's "Method Warmup encountered an error." (RFC 3339
    time, tracing's level) and relays the shard's stack under it, cut in the CLI's serve: warm-up."""
    log = "\n".join((
        "2024-04-16T14:19:00.377794Z ERROR text_generation_launcher: Method Warmup encountered an error.",
        "Traceback (most recent call last):",
        '  File "/opt/conda/bin/text-generation-server", line 8, in <module>',
        "    sys.exit(app())",
        '  File "/opt/conda/lib/python3.10/site-packages/typer/main.py", line 311, in __call__',
        "    return get_command(self)(*args, **kwargs)",
        '  File "/opt/conda/lib/python3.10/site-packages/text_generation_server/cli.py", line 90, in serve',
        "    server.ser",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "warmup"


def test_c10s_frames_alone_say_the_communicator_was_being_created() -> None:
    """slime#1309: only c10's frames of a torch error whose lines the window cut off, the store's get under
    ProcessGroupNCCL's broadcastUniqueNCCLID and initNCCLComm (a group's first collective creates its communicator)."""
    lib = "(0x7f97f10fed50 in /usr/lib/python3.12/dist-packages/torch/lib/libtorch_cuda.so)"
    log = "\n".join((
        f"frame #7: c10d::TCPStore::get(std::string const&) + 0x30 {lib}",
        f"frame #8: c10d::PrefixStore::get(std::string const&) + 0x30 {lib}",
        f"frame #9: c10d::ProcessGroupNCCL::broadcastUniqueNCCLID(ncclUniqueId*, bool, int) + 0x5c4 {lib}",
        f"frame #10: c10d::ProcessGroupNCCL::initNCCLComm(std::string const&, c10::Device&, c10d::OpType) + 0x1c2a {lib}",
        f"frame #11: c10d::ProcessGroupNCCL::send(std::vector<at::Tensor>&, int, int) + 0x1190 {lib}",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line" and a.root_cause.phase == "nccl_init"
    assert a.final is not None and a.final.truncated


def test_ucx_backtrace_with_collapsed_blanks_under_a_signal_says_objects_were_being_built() -> None:
    """Tlntin/Qwen-TensorRT-LLM#60: UCX's "Caught signal 11" and its backtrace, the paste's runs of blanks collapsed,
    cut inside Triton's model instance being built (constructors, a factory's create): start-up; the window is cut."""
    log = "\n".join((
        "[TensorRT-LLM][INFO] [MemUsageChange] Init cuBLAS/cuBLASLt: CPU +0, GPU +8, now: CPU 27075, GPU 27524 (MiB)",
        "[node-7:3711:0:3712] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))",
        "==== backtrace (tid: 3712) ====",
        "0 0x0000000000042520 __sigaction() ???:0",
        "1 0x00000000010d475f createInferRuntime_INTERNAL() ???:0",
        "2 0x0000000000127022 tensorrt_llm::runtime::TllmRuntime::TllmRuntime() :0",
        "3 0x000000000007099f tensorrt_llm::batch_manager::TrtGptModelFactory::create() :0",
        "4 0x0000000000048cbc triton::backend::ModelInstanceState::ModelInstanceState() :0",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line" and "Caught signal 11" in a.root_cause.message
    assert a.root_cause.phase == "startup_other"
    assert a.final is not None and a.final.truncated


def test_a_native_frames_function_drops_its_class_templates_and_arguments() -> None:
    assert frame_function("frame #9: c10d::ProcessGroupNCCL::broadcastUniqueNCCLID(ncclUniqueId*) + 0x5c4 "
                          "(0x7f in libtorch_cuda.so)") == "broadcastUniqueNCCLID"
    assert frame_function("2 0x00000000000dccbe LlamaTritonModel<__half>::createSharedModelInstance()  "
                          "/src/LlamaTritonModel.cc:292") == "createSharedModelInstance"
    assert frame_function("8 0x0000000000127022 ns::TllmRuntime::TllmRuntime() :0") == "__init__"
    assert frame_function("frame #12: <unknown function> + 0x5f95ab5 (0x7f in libtorch_cpu.so)") is None


def test_a_request_id_in_the_errors_words_makes_it_serving() -> None:
    """vllm-ascend#7401: a KV connector's "Failed to transfer KV cache for request chatcmpl-..." over a stack cut at its
    header: a request was being served, though the words name the KV cache."""
    h = "(Worker_DP0_EP0 pid=335952) ERROR 06-08 14:45:44 [kv_connector.py:463] "
    log = "\n".join((
        h + "Failed to transfer KV cache for request chatcmpl-270f82b6-18dc-4f09-bd97-90fe6a8f.",
        h + "Traceback (most recent call last):",
        h + '  File "/vllm-ascend/vllm_ascend/distributed/kv_connector.py", line 455, in _transfer',
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.phase == "serving"
