"""Mechanisms added after held-out 18 was measured (issue 15, seventeenth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.tracebacks import analyze


def test_a_cuda_error_without_a_level_before_a_workers_death_is_its_cause() -> None:
    """vllm#25032 and vllm#56180: the CUDA error a kernel printed, then vLLM's "Worker proc ... died unexpectedly"."""
    died = ("(EngineCore_DP0 pid=1318386) ERROR 09-17 00:55:51 [multiproc_executor.py:156] Worker proc VllmWorker-0 "
            "died unexpectedly, shutting down executor.\n")
    for error, said in (
        ("CUDA error (/workspace/.deps/vllm-flash-attn-src/hopper/flash_fwd_combine_launch_template.h:60): an illegal "
         "memory access was encountered", "an illegal memory access was encountered"),
        ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'",
         "custom_all_reduce.cuh:164 'invalid argument'"),
    ):
        rc = analyze(f"{error}\n{died}").root_cause
        assert rc is not None and said in rc.message and rc.line == 1
    # an unrelated line before the death, or a CUDA error printed without a level long before it, is not its cause
    # (a line that *heads* with "CUDA error: " is ggml's failure at any level: test_tracebacks_round68.py)
    assert "died unexpectedly" in (analyze(f"loading the tokenizer\n{died}").root_cause or ()).message
    far = "CUDA error (/workspace/csrc/launch.h:60): too many resources requested for launch\n" + "waiting\n" * 4 + died
    assert "died unexpectedly" in (analyze(far).root_cause or ()).message


def test_a_cuda_error_before_a_shells_abort_is_its_cause() -> None:
    """lmdeploy#3806: an RTX 5090 with no kernels for it, the shell's "Aborted (core dumped)" after."""
    rc = analyze("no kernel image is available for execution on the device\nAborted (core dumped)\n").root_cause
    assert rc is not None and rc.message == "no kernel image is available for execution on the device"
    rc = analyze("Aborted (core dumped)\n").root_cause
    assert rc is not None and rc.message == "Aborted (core dumped)"


def test_an_exception_line_set_in_bold_is_a_bare_exception_line() -> None:
    """GLM-V#185: a Markdown paste that set the exception line in bold, under a sentence of prose."""
    text = ("即使安装最新版sglang，也无法运行\n\n**AttributeError: 'Glm4vMoeForConditionalGeneration' object has no "
            "attribute 'capture_aux_hidden_states'**\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "AttributeError"
    assert rc.message.endswith("has no attribute 'capture_aux_hidden_states'")
    assert analyze("**Note: the server restarts on its own**\n").root_cause is None


def test_a_device_assert_in_a_kernel_torchinductor_generated_is_the_cause() -> None:
    """vllm#31709: the Triton kernel torchinductor wrote under /tmp asserting an index's bounds."""
    text = ("/tmp/torchinductor_root/q5/cq5iuvdeguweyk7x36xgxz2jrq5ktxlkxxg3u6legsnlo62zqcrn.py:97: unknown: block: "
            "[4,0,0], thread: [0,0,0] Assertion `index out of bounds: 0 <= tmp48 < 40960` failed.\n")
    rc = analyze(text).root_cause
    assert rc is not None and "index out of bounds" in rc.message


def test_a_bare_dist_store_error_while_starting_is_the_process_groups_rendezvous() -> None:
    """sglang#507: torch's TCPStore timed out waiting for the other ranks, then SGLang's "Initialization failed"."""
    text = ("torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/4 clients joined.\n"
            "Initialization failed. detoken_init_state: init ok\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "torch.distributed.DistStoreError" and rc.phase == "nccl_init"


def test_sglangs_running_warmup_line_puts_the_next_batch_in_warm_up() -> None:
    """sglang#7547: "Running warmup compile-deep-gemm", its prefill batch, then the scheduler's cut traceback."""
    text = ("[2025-06-27 19:02:09] max_total_num_tokens=1107402, chunked_prefill_size=8192, max_prefill_tokens=16384\n"
            "[2025-06-27 19:02:10] Running warmup compile-deep-gemm\n"
            "[2025-06-27 19:02:10] Prefill batch. #new-seq: 1, #new-token: 4, #cached-token: 0, token usage: 0.00\n"
            "[2025-06-27 19:02:10] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/home/m/sglang/python/sglang/srt/managers/scheduler.py", line 2336, in run_scheduler_process\n'
            "    scheduler.event_loop_overlap()\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "warmup"


def test_an_engines_wake_up_from_sleep_mode_is_serving() -> None:
    """vllm#13941: an RL trainer's colocated vLLM taking its memory back (LLMEngine.wake_up -> cumem's allocator)."""
    text = ('  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/llm_engine.py", line 1859, in wake_up\n'
            "    self.model_executor.wake_up()\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/device_allocator/cumem.py", line 207, in wake_up\n'
            "    create_and_map(handle)\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/device_allocator/cumem.py", line 75, in create_and_map\n'
            "    python_create_and_map(*allocation_handle)\n"
            "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "serving"


def test_vllms_dump_of_the_failed_batch_after_a_death_says_it_was_serving() -> None:
    """vllm#25032: a kernel's CUDA error, the worker's death, then the engine core's "Dumping input data for V1 LLM
    engine" (dump_engine_exception, called only from the busy loop's execute_model error path)."""
    text = ("CUDA error (/workspace/.deps/vllm-flash-attn-src/hopper/flash_fwd_combine_launch_template.h:60): an illegal "
            "memory access was encountered\n"
            "(EngineCore_DP0 pid=1318386) ERROR 09-17 00:55:51 [multiproc_executor.py:156] Worker proc VllmWorker-0 "
            "died unexpectedly, shutting down executor.\n"
            "(Worker_TP1 pid=1318535) INFO 09-17 00:55:51 [multiproc_executor.py:560] Parent process exited, "
            "terminating worker\n")
    dump = ("(EngineCore_DP0 pid=1318386) ERROR 09-17 00:55:55 [dump_input.py:69] Dumping input data for V1 LLM engine "
            "(v0.10.3.dev108+ga14b5d87d.d20250917) with config: model='/opt/models/Qwen3-Next', "
            "speculative_config=None, tokenizer='/opt/models/Qwen3-Next', skip_tokenizer_init=False\n")
    assert (analyze(text).root_cause or ()).phase == "unknown"
    rc = analyze(text + dump).root_cause
    assert rc is not None and "illegal memory access" in rc.message and rc.phase == "serving"
    # a start the timeline placed elsewhere keeps its phase: the dump fills only an unknown one
    loading = "(EngineCore_DP0 pid=1318386) INFO 09-17 00:50:00 [gpu_model_runner.py:1] Starting to load model m...\n"
    assert (analyze(loading + text + dump).root_cause or ()).phase == "weight_loading"


def test_a_5xx_error_body_quoted_in_a_klog_record_is_the_servers_failure() -> None:
    """llm-d FMA#746: a Go launcher's klog line quoting vLLM's 500 answer to its wake_up call, quotes escaped."""
    text = ('> 2026-09-02T00:56:18.3900781Z I0902 00:55:35.305769       1 inference-server.go:2282] "HTTP call done" '
            'worker=1 purpose="wake" method="POST" url="http://10.131.8.254:8006/wake_up" statusCode=500 err="HTTP POST '
            '\\"http://10.131.8.254:8006/wake_up\\" returned unexpected status 500; bodyReadErr=<nil>; responseBody='
            '{\\"error\\":{\\"message\\":\\"Call to wake_up method failed: CUDA Error: out of memory at <path>:163\\",'
            '\\"type\\":\\"InternalServerError\\",\\"param\\":null,\\"code\\":500}}"\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.message.startswith("Call to wake_up method failed: CUDA Error: out of memory")
    assert rc.phase == "serving"
    # a client's mistake (a 4xx answer) is not the server failing
    bad = ('INFO: {"error":{"message":"This model\'s maximum context length is 4096 tokens","type":"BadRequestError",'
           '"param":null,"code":400}}\n')
    assert analyze(bad).root_cause is None


def test_a_collapsed_paste_whose_header_was_cut_is_read_as_a_flattened_traceback() -> None:
    """vllm#25387: serving_chat's logger.exception records pasted without their newlines, the window beginning
    inside the stack and wrapped at 1000 characters (the second line a frame whose 'File "' the wrap took)."""
    rec = "(APIServer pid=1) ERROR 09-22 07:18:30 [serving_chat.py:1133] "
    text = (f'at.py:1133] File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", line 387, in '
            f"generate {rec}out = q.get_nowait() or await q.get() {rec}^^^^^^^^^^^^^ {rec}File "
            f'"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/output_processor.py", line 59, in get {rec}raise '
            f'output {rec}File "/usr/local/lib/python3.12/dist-packa\n'
            f'ges/vllm/v1/engine/core_client.py", line 846, in get_output_async {rec}raise '
            f"self._format_exception(outputs) from None {rec}vllm.v1.engine.exceptions.EngineDeadError: EngineCore en\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "vllm.v1.engine.exceptions.EngineDeadError"
    assert rc.innermost_frame is not None and rc.innermost_frame.function == "get_output_async"
    assert rc.phase == "serving"


def test_v0s_multi_step_advance_step_is_serving() -> None:
    """vllm#10432: a VllmWorkerProcess's stack cut above vLLM v0.6.4's advance_step_flashattn kernel call."""
    rec = "(VllmWorkerProcess pid=3524553) ERROR 11-18 19:20:05 multiproc_worker_utils.py:229] "
    text = (f'{rec}  File "/envs/v/lib/python3.11/site-packages/vllm/_custom_ops.py", line 230, in advance_step_flashattn\n'
            f"{rec}    return torch.ops._C.advance_step_flashattn(num_seqs, num_queries,\n"
            f'{rec}  File "/envs/v/lib/python3.11/site-packages/torch/_ops.py", line 1116, in __call__\n'
            f"{rec}    return self._op(*args, **(kwargs or {{}}))\n"
            f"{rec}RuntimeError: tensor: name = sampled_token_ids, shape = [27, 1] is_cont = 1, type = long int is not as\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "serving"
