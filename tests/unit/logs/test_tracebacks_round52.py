"""Mechanisms added from misses of held-outs 47-51 (each measured once untuned first), on lines written in the
shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze

_CLI_CUT = "\n".join((
    "INFO 04-02 09:12:40 [__init__.py:239] Automatically detected platform cuda.",
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/vllm", line 8, in <module>',
    "    sys.exit(main())",
    "             ^^^^^^",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/cli/main.py", line 73, in main',
    "    args.dispatch_function(args)",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/cli/serve.py", line 60, in cmd',
))


def test_a_stack_cut_in_a_servers_launcher_before_readiness_is_start_up() -> None:
    """vllm#42343, inspect_ai#1799: `vllm serve`'s stack through the console script, cut before its exception line,
    no server ready in the window: the launching process died while starting the server."""
    a = analyze(_CLI_CUT + "\n")
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.root_cause.phase == "startup_other" and a.final is not None and a.final.phase == "startup_other"
    # a server that was ready before says nothing about when this stack began: no phase from the launcher
    ready = "\n".join(("INFO 04-02 09:12:40 [api_server.py:1090] Starting vLLM API server 0 on http://0.0.0.0:8000",
                       "INFO:     Started server process [1]", "INFO:     Waiting for application startup.",
                       "INFO:     Application startup complete.", _CLI_CUT)) + "\n"
    assert analyze(ready).root_cause.phase != "startup_other"
    # nor does a benchmark client the same console script ran (vllm bench serve)
    bench = _CLI_CUT.replace("cli/serve.py\", line 60, in cmd", "cli/benchmark/main.py\", line 54, in cmd")
    assert analyze(bench + "\n").root_cause.phase == "unknown"


def test_a_python_exception_quoted_by_tritons_stub_record_is_the_typed_cause() -> None:
    """triton-inference-server/server#8387, awslabs/data-on-eks#605: the Python backend's INFO record quotes the
    exception its stub raised loading the model, in pybind11's words (line breaks escaped, "At:" and the frames),
    or cut by the window before its frames."""
    stub = 'vllm-openai-1  | I0911 08:21:51.554457 1 pb_stub.cc:389] "Failed to initialize Python stub: '
    rc = analyze(stub + "AttributeError: 'AsyncLLM' object has no attribute 'engine'\\n\\nAt:\\n  /opt/tritonserver/"
                 'backends/vllm/model.py(365): _setup_metrics\\n  /opt/tritonserver/backends/vllm/model.py(191): '
                 'initialize\\n"\n').root_cause
    assert rc is not None and rc.kind == "exception" and rc.exception_type == "AttributeError"
    assert rc.message == "'AsyncLLM' object has no attribute 'engine'" and rc.phase == "startup_other"
    cut = analyze(stub + "OSError: You are trying to access a gated repo.\\nMake sure to have access to it at "
                  "https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct.\\n403 Client Error.\n").root_cause
    assert cut is not None and cut.exception_type == "OSError"
    assert cut.message == "You are trying to access a gated repo." and cut.phase == "startup_other"
    # a record that only mentions an error type, with no pybind11 frames and no stub words, stays a log line
    plain = analyze("E0911 08:21:51.554457 1 model.cc:12] failed: RuntimeError: boom\n").root_cause
    assert plain is None or plain.kind == "log_line"


def test_a_record_glued_after_a_progress_bar_and_cut_inside_its_traceback_header_is_a_cut_failure() -> None:
    """sglang#23763: DeepGEMM's warm-up bar lost its carriage return; the scheduler's record that follows is glued to it
    and the window ends inside "Traceback" itself."""
    log = "\n".join((
        "[2026-05-20 02:29:31 TP0] Required memory for warmup: 0.09765625GB, Available memory: 14.2200927734375GB",
        "DeepGEMM warmup:  30%|███████████▌                          | 4965/16384 [00:00<00:00, 24891.75it/s]"
        "[2026-05-20 02:29:31 TP3] Scheduler hit an exception: Tra",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type is None and a.root_cause.ranks == ("TP3",)
    assert a.final is not None and a.final.truncated
    # a line that only ends in the same letters is no traceback
    assert analyze("[2026-05-20 02:29:31 TP0] Loaded adapter Tra\n").root_cause is None
    # nor is a bar with nothing glued after it an error record
    assert analyze("Loading safetensors checkpoint shards:  30%|███   | 3/10 [00:02<00:05, 1.2it/s]\n").root_cause is None


def test_a_window_that_begins_inside_a_wrapped_frame_line_takes_the_rank_of_the_stack_it_continues() -> None:
    """vllm#29360: the window opens on the tail of a wrapped frame line (its worker's prefix above the window); the rest
    of the same stack keeps the worker's prefix, Worker_TP2_EP2."""
    p = "(Worker_TP2_EP2 pid=405) ERROR 11-25 08:05:06 [multiproc_executor.py:815] "
    log = "\n".join((
        'cutor/warmup/deep_gemm_warmup.py", line 314, in deep_gemm_warmup',
        p + "    deepgemm_grouped_fp8_gemm_nt_contiguous_warmup(model, max_",
        "tokens)",
        p + '  File "/usr/local/lib/python3.12/dist-packages/vllm/model_exe',
        'cutor/warmup/deep_gemm_warmup.py", line 262, in _warmup',
        p + "    out = torch.empty((MAX_M, n), device=device, dtype=torch.b",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.line == 1 and rc.ranks == ("TP2 EP2",) and rc.phase == "warmup"


def test_an_extension_module_refused_for_an_undefined_symbol_is_start_up() -> None:
    """sglang#8373: a bare ImportError of sgl_kernel's library built against another torch, between an issue's headings."""
    a = analyze("### Describe the bug\n\nImportError: /home/devuser/.local/lib/python3.10/site-packages/sgl_kernel/"
                "common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa\n\n### Reproduction\n")
    assert a.root_cause is not None and a.root_cause.exception_type == "ImportError"
    assert a.root_cause.phase == "startup_other"


def test_an_exception_line_opened_by_markdown_bold_ends_its_traceback_and_a_torch_hint_cut_short_cuts_the_log() -> None:
    """QwenLM/Qwen-VL#465: the paste's bold wraps the exception line ("**RuntimeError: ..."), and the window ends inside
    PyTorch's hint under a CUDA error ("For debugging consider passing CU")."""
    log = "\n".join((
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.8/dist-packages/vllm/model_executor/models/qwen2_vl.py", line 328, in forward',
        "    x = x + self.mlp(self.norm2(x))",
        "**RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.",
        "For debugging consider passing CU",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.exception_type == "RuntimeError"
    assert a.root_cause.message.startswith("CUDA error: no kernel image is available")
    assert a.final is not None and a.final.exception_type == "RuntimeError" and a.final.truncated
    whole = log.replace("passing CU\n", "passing CUDA_LAUNCH_BLOCKING=1\n")
    assert not analyze(whole).final.truncated  # the hint whole: nothing cut


def test_turbomind_s_per_gpu_forward_thread_and_the_vision_encoder_s_forward_are_requests() -> None:
    """InternLM/lmdeploy#1058 and #2050: TurboMind's thread target _func running model_insts[device_id].forward, and
    lmdeploy's ImageEncoder.forward of a request's images, both under nothing that tells a phase."""
    tm = "\n".join((
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.9/threading.py", line 980, in _bootstrap_inner',
        "    self.run()",
        '  File "/usr/local/lib/python3.9/threading.py", line 917, in run',
        "    self._target(*self._args, **self._kwargs)",
        '  File "/home/user/.local/lib/python3.9/site-packages/lmdeploy/turbomind/turbomind.py", line 499, in _func',
        "    output = self.model_insts[device_id].forward(",
        "RuntimeError: [TM][ERROR] CUDA runtime error: invalid argument /lmdeploy/src/turbomind/utils/allocator.h:262",
    )) + "\n"
    assert analyze(tm).root_cause.phase == "serving"
    vl = "\n".join((
        '  File "/home/a/venv/lib/python3.10/site-packages/lmdeploy/vl/engine.py", line 151, in forward',
        "    outputs = self.model.forward(inputs)",
        '  File "/home/a/venv/lib/python3.10/site-packages/lmdeploy/vl/model/internvl.py", line 172, in forward',
        "    return self._forward_func(images)",
    )) + "\n"
    assert analyze(vl).root_cause.phase == "serving"


def test_a_nic_completion_error_is_a_failure_and_a_repeated_record_cut_short_cuts_the_log() -> None:
    """OpenRLHF/OpenRLHF#621: during a weight sync, the mlx5 driver reports an RDMA completion in error, at no level; the
    window ends inside the same record printed again."""
    p = "(LLMRayActor pid=90738, ip=172.19.24.110) "
    log = "\n".join((
        "(LLMRayActor pid=90621, ip=172.19.24.110) update weight: model.embed_tokens.weight, dtype: torch.bfloat16, "
        "shape: torch.Size([152064, 5120])",
        p + "mlx5: host_unknown: got completion with error:",
        p + "mlx5: host_u",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert "mlx5: host_unknown: got completion with error" in a.root_cause.message
    assert a.final is not None and a.final.truncated
    # a record repeated whole is not cut; the same record short of its end is
    failed = "[2026-05-20 02:29:31 TP0] Scheduler hit an exception: RuntimeError: CUDA error: out of memory"
    assert not analyze(f"{failed}\n{failed}\n").final.truncated
    assert analyze(f"{failed}\n{failed[:-9]}\n").final.truncated


def test_a_launchers_status_panel_saying_the_server_process_died_is_the_failure() -> None:
    """Chen-zexi/vllm-cli#4: a rich panel's line, no level, between panels of GPU stats."""
    log = "\n".join((
        "╭──────────────────────────────── Server Status ────────────────────────────────╮",
        "│ ✗ Server process terminated unexpectedly                                      │",
        "╰───────────────────────────────────────────────────────────────────────────────╯",
        "│   0    NVIDIA A10    Mem: ░░░░░░░░░░    4.00 MB/22.49 GB      Util: ░░░░░░░░░░   0.0%   │",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "Server process terminated unexpectedly" in rc.message


def test_the_kv_cache_that_tgi_1x_and_lorax_allocate_in_their_warm_up_is_kv_cache_allocation() -> None:
    """predibase/lorax#339: "Method Warmup encountered an error" over set_cache_manager → CacheManager.__init__'s
    torch.empty: the frames name the KV cache, which the wrapper's words (warm-up) do not."""
    root = "/opt/conda/lib/python3.10/site-packages/lorax_server/models/"
    log = "\n".join((
        "Method Warmup encountered an error.",
        "Traceback (most recent call last):",
        f'  File "{root}flash_causal_lm.py", line 775, in warmup',
        "    self.kv_cache = set_cache_manager(",
        f'  File "{root}cache_manager.py", line 124, in set_cache_manager',
        "    CACHE_MANAGER = CacheManager(num_blocks, num_layers, num_heads, head_size, repeat_slots, dtype, device)",
        f'  File "{root}cache_manager.py", line 29, in __init__',
        "    self.kv_cache = [",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB.",
    )) + "\n"
    assert analyze(log).root_cause.phase == "kv_cache_alloc"


def test_open_mpi_s_orte_init_banner_is_a_start_up_failure() -> None:
    """triton-inference-server/tensorrtllm_backend#553: Triton loaded its Python models, then Open MPI's banner (no
    level) says its runtime could not start the ranks; the window cuts the banner."""
    log = "\n".join((
        'I0801 06:26:01.677837 2034 model_lifecycle.cc:838] "successfully loaded \'postprocessing\'"',
        "--------------------------------------------------------------------------",
        "It looks like orte_init failed for some reason; your parallel process is",
        "likely to abort.  There are many reasons that a parallel process can",
        "fail during orte_init; some of which are due to configuration or",
        "environment pro",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "orte_init failed" in rc.message
    assert rc.phase == "startup_other"


def test_an_error_record_cut_inside_its_location_ends_the_log_as_a_failure() -> None:
    """QwenLM/Qwen3-VL#1684: graph capture's bar, then a worker's ERROR record cut inside its "[file:line]"."""
    log = "\n".join((
        "Capturing CUDA graphs (decode, FULL):   9%|...| 3/35 [00:00<00:09,  3.30it/s]",
        "",
        "(Worker_TP7_EP7 pid=7475) ERROR 10-23 08:05:13 [multiproc_",
    )) + "\n"
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.ranks == ("TP7 EP7",)
    assert a.root_cause.phase == "cuda_graph_capture" and a.final is not None and a.final.truncated


def test_rays_unhandled_error_over_a_cut_stack_is_the_failure_and_its_method_tells_the_phase() -> None:
    """verl-project/verl#4057: the trainer's driver reports the rollout actor's task error nobody took; the window cuts
    the task's traceback under it at its first frame."""
    p = "(TaskRunner pid=5757) "
    log = "\n".join((
        "(WorkerDict pid=6249) WARNING 11-08 04:43:11 [block_pool.py:304] Failed to reset prefix cache because some "
        "blocks (512) are not freed yet",
        p + "Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::WorkerDict.actor_rollout_generate_"
        "sequences() (pid=6249, ip=10.156.5.220, actor_id=09cff768ed4766b724c4590103000000)",
        p + "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        p + '  File "/local/apps/verl/single_controll',
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and "ray::WorkerDict.actor_rollout_generate_sequences()" in rc.message
    assert rc.phase == "serving"
    # with the task's traceback whole, its exception stays the cause (dev's OpenRLHF window)
    whole = analyze(log.replace(p + '  File "/local/apps/verl/single_controll\n', "") + "\n".join((
        p + "Traceback (most recent call last):",
        p + '  File "/usr/lib/python3/dist-packages/vllm/worker/worker.py", line 12, in init_process_group',
        p + "    self.model_executor.x()",
        p + "AttributeError: 'LLM' object has no attribute 'model_executor'",
    )) + "\n").root_cause
    assert whole is not None and whole.exception_type == "AttributeError"


def test_an_argument_parser_named_in_two_words_refusing_its_command_line_is_a_start_up_failure() -> None:
    """wdrink/SimpleAR#24: TRL's CLI (argparse's prog "TRL CLI") has no `vllm-serve` command in that version."""
    log = "\n".join((
        "INFO 05-19 17:20:56 __init__.py:190] Automatically detected platform cuda.",
        "usage: trl",
        "TRL CLI: error: argument command: invalid choice: 'vllm-serve' (choose from 'chat', 'dpo', 'env', 'grpo', "
        "'kto', 'sft')",
    )) + "\n"
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "invalid choice: 'vllm-serve'" in rc.message
    assert rc.phase == "startup_other"
