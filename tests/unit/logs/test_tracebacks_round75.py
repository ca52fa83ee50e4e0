"""Mechanisms added in the twenty-seventh stop, from held-outs 75 and 76's misses (measured untuned first): ggml's
assertions, a kernel's trap and the report it printed first, UCX's padded process ids, ollama's runner serving.  Lines
in the shapes of the real logs (the thread says which)."""

from __future__ import annotations

from workbench.logformats import parse_line
from workbench.tracebacks import analyze


def test_ggmls_assertion_is_the_failure_not_the_backtrace_under_it() -> None:
    """llama.cpp#18039: a split-mode assertion, then ggml's backtrace of the abort."""
    log = ("0.57.900.481 I srv    load_model: initializing slots, n_slots = 4\n"
           "/src/llama.cpp/ggml/src/ggml-backend-meta.cpp:728: GGML_ASSERT(src_ss[0].axis != GGML_BACKEND_SPLIT_AXIS_1) failed\n"
           "/src/llama.cpp/build/bin/libggml-base.so.0(+0x18665) [0x7f8670d5f665]\n"
           "/src/llama.cpp/build/bin/libggml-base.so.0(ggml_print_backtrace+0x1df) [0x7f8670d5fa3f]\n"
           "/src/llama.cpp/build/bin/libggml-base.so.0(ggml_abort+0x11e) [0x7f8670d5fbce]\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.kind == "log_line" and "GGML_ASSERT(src_ss[0].axis" in rc.message


def test_ggmls_abort_after_a_cuda_error_leaves_the_cuda_error_the_cause() -> None:
    """ollama#5295's shape: ggml's CUDA check prints the error, then asserts '!"CUDA error"'."""
    log = ("CUDA error: CUBLAS_STATUS_EXECUTION_FAILED\n"
           "  current device: 0, in function ggml_cuda_mul_mat_batched_cublas at ggml-cuda.cu:1855\n"
           "  cublasGemmBatchedEx(ctx.cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_N, ne01, ne11, ne10)\n"
           'GGML_ASSERT: /go/src/ollama/llm/llama.cpp/ggml-cuda.cu:100: !"CUDA error"\n')
    rc = analyze(log).root_cause
    assert rc is not None and "CUBLAS_STATUS_EXECUTION_FAILED" in rc.message


def test_a_kernels_trap_is_explained_by_the_timeout_it_printed_first() -> None:
    """DeepEP#274: the dispatch kernel times out waiting for a peer and traps; the C++ exception that ends the process
    names only the CUDA error the trap left, and its message stops at the next writer's record."""
    log = ("WARN: IB: read failed in ib_roce_get_version_num: Invalid argument\n"
           "DeepEP dispatch NVL receiver timeout, channel: 6, RDMA: 0, nvl: 0, src NVL: 5, head: 315, tail: 315\n"
           "terminate called after throwing an instance of 'EPException'\n"
           "  what():  Failed: CUDA error /workspace/DeepEP/csrc/deep_ep.cpp:83 'unspecified launch failure'\n"
           "WARN: IB: read failed in ib_roce_get_version_num: Invalid argument\n")
    a = analyze(log)
    assert a.root_cause is not None and a.root_cause.kind == "log_line"
    assert a.root_cause.message.startswith("DeepEP dispatch NVL receiver timeout")
    assert a.final is not None and a.final.message == ("Failed: CUDA error /workspace/DeepEP/csrc/deep_ep.cpp:83 "
                                                       "'unspecified launch failure'")


def test_ucx_records_with_a_padded_process_id_give_their_level() -> None:
    """nixl#1983: UCX pads the pid of a long host name's record ("pod:537  :1")."""
    line = ("[1784621081.896649] [prefill-92c6hc-x04q3qgn-pod:537  :1]       srd_iface.c:221  UCX  ERROR send "
            "completion[0] with error on rdmap132s0/0x55cf4425cfb0: Work Request Flushed Error, vendor_err 0x1")
    parsed = parse_line(line)
    assert parsed.level == "ERROR" and parsed.message.startswith("send completion[0] with error")
    rc = analyze("[2026-07-21 08:04:41 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 64\n" + line + "\n").root_cause
    assert rc is not None and "Work Request Flushed Error" in rc.message and rc.phase == "serving"


def test_ollamas_runner_started_and_gins_successful_requests_are_serving() -> None:
    """ollama#10265: the runner starts, answers a generate request, then hits an illegal memory access."""
    for ready in ('time=2025-04-14T20:20:32.049+08:00 level=INFO source=server.go:619 msg="llama runner started in '
                  '4.01 seconds"\n',
                  '[GIN] 2025/04/14 - 20:20:32 | 200 |    4.2413769s |       127.0.0.1 | POST     "/api/generate"\n'):
        log = ("llama_init_from_model: graph splits = 2\n" + ready +
               "CUDA error: an illegal memory access was encountered\n"
               "  current device: 0, in function ggml_cuda_op_mul_mat at ggml-cuda.cu:1621\n")
        rc = analyze(log).root_cause
        assert rc is not None and "illegal memory access" in rc.message and rc.phase == "serving", ready


def test_a_log_ending_inside_a_stack_that_must_go_on_is_cut() -> None:
    """The last line of a window cut inside a stack: a frame's path, a caret line, a header (openrlhf#624, vllm#15332,
    vllm-ascend#4972, vllm#2521), indented or not; a whole stack's end is not cut."""
    head = ('Traceback (most recent call last):\n  File "/ray/_private/worker.py", line 930, in get_objects\n'
            "    raise value.as_instanceof_cause()\n"
            "ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=16209, ip=10.96.200.252)\n")
    for last in ('  File "/workdir/openrlhf/t', "           ^^^^^^^^^^^^", "        TraceBack (most recent call last):",
                 "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44"):
        final = analyze(head + last + "\n").final
        assert final is not None and final.truncated, last
    whole = analyze(head).final
    assert whole is not None and not whole.truncated


def test_every_events_needle_holds_a_word_a_quiet_reader_stops_at() -> None:
    """A line an event's pattern matches is read also in a quiet stretch (after a record the reader skips past):
    Triton's "Signal (11) received." after vLLM's metrics lines was not (triton-inference-server#7332)."""
    from workbench.tracebacks.patterns import _EVENT_NEEDLES, _interesting_words
    words = _interesting_words(strong=True)
    assert [(k, n) for k, needles in _EVENT_NEEDLES.items() for n in needles if not any(w in n for w in words)] == []
    log = ("INFO 06-07 17:14:07 metrics.py:161] Avg prompt throughput: 2102.7 tokens/s, Running: 4 reqs\n"
           "Signal (11) received.\n"
           " 0# 0x0000559334F1667D in /opt/tritonserver/bin/tritonserver\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.message == "Signal (11) received." and rc.phase == "serving"


def test_glibcs_assert_before_zshs_abort_is_the_cause_while_llama_server_works_on_a_task() -> None:
    """llama.cpp#21512: a sampler's assert() during a completion request; zsh reports the abort."""
    log = ("slot update_slots: id  3 | task 0 | prompt processing done, n_tokens = 65, batch.n_tokens = 65\n"
           "srv  log_server_r: done request: POST /completion 127.0.0.1 200\n"
           "llama-server: /src/llama-sampler.cpp:1094: void llama_sampler_dist_apply(llama_sampler*, "
           "llama_token_data_array*): Assertion `found' failed.\n"
           "zsh: abort      ./run-server-glm\n")
    rc = analyze(log).root_cause
    assert rc is not None and "Assertion `found' failed" in rc.message and rc.phase == "serving"


def test_koboldcpps_prompt_counter_glued_to_a_cuda_error_is_serving() -> None:
    """koboldcpp#1711: the CUDA error printed on the prompt counter's line."""
    log = ("Processing Prompt [BLAS] (512 / 12710 tokens)CUDA error: out of memory\n"
           "  current device: 0, in function alloc at ggml-cuda.cu:457\n"
           "D:/koboldcpp/ggml/src/ggml-cuda/ggml-cuda.cu:88: CUDA error\n")
    rc = analyze(log).root_cause
    assert rc is not None and "out of memory" in rc.message and rc.phase == "serving"


def test_exllamav2s_cache_allocating_its_tensors_is_kv_cache_allocation() -> None:
    """exllamav2#677: the cache runs out of memory creating its state tensors after the model loaded."""
    log = ("Traceback (most recent call last):\n"
           '  File "/home/ubuntu/exllamav2/test_inference.py", line 192, in <module>\n'
           "    cache = ExLlamaV2Cache(model)\n"
           '  File "/home/ubuntu/exllamav2/exllamav2/cache.py", line 256, in __init__\n'
           "    self.create_state_tensors(copy_from, lazy)\n"
           '  File "/home/ubuntu/exllamav2/exllamav2/cache.py", line 91, in create_state_tensors\n'
           "    p_key_states = torch.zeros(self.shape_wk, dtype = self.dtype, device = device).contiguous()\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB.\n")
    rc = analyze(log).root_cause
    assert rc is not None and rc.exception_type == "torch.OutOfMemoryError" and rc.phase == "kv_cache_alloc"


def test_torchs_oom_message_short_of_its_end_and_a_boost_backtrace_short_of_main_are_cut() -> None:
    """exllamav2#761 and #677 (torch's message cut), triton-inference-server#7332 (its handler's frames cut)."""
    exc = "torch.OutOfMemoryError: CUDA out of memory. Tried to"
    for last in (exc, exc + " allocate 64.00 MiB. GPU 0 has a total capacity of 14.74 GiB of which 38.12 MiB is free."):
        final = analyze('  File "/x/exllamav2/cache.py", line 91, in create_state_tensors\n' + last + "\n").final
        assert final is not None and final.truncated, last
    whole = (exc + " allocate 20.00 MiB (GPU 0; 7.93 GiB total capacity; 6.68 GiB already allocated; 20.00 MiB free; "
             "6.70 GiB reserved in total by PyTorch)")
    final = analyze('  File "/x/exllamav2/cache.py", line 91, in create_state_tensors\n' + whole + "\n").final
    assert final is not None and not final.truncated
    frames = ("Signal (11) received.\n 0# 0x0000559334F1667D in /opt/tritonserver/bin/tritonserver\n"
              " 1# 0x00007FA5EAD8D520 in /usr/lib/x86_64-linux-gnu/libc.so.6\n")
    final = analyze(frames).final
    assert final is not None and final.truncated
