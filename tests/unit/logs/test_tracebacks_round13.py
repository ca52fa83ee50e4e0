"""Mechanisms added after held-out 13 was measured (issue 15, twelfth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.phases import timeline
from workbench.tracebacks import analyze


def test_a_programs_warming_up_banner_places_a_native_abort_in_warmup() -> None:
    """FastCosyVoice#12: the program's own "🔥 Warming up model ..." banner and a synthesis of a warm-up text,
    then a C++ ``terminate called ... TllmException`` with no Python frame."""
    text = ("🔥 Warming up model (TRT-LLM doesn't require long warmup)...\n"
            "2026-01-18 23:02:11,243 INFO Synthesizing: Short model warmup.\n"
            "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
            "  what():  [TensorRT-LLM][ERROR] CUDA runtime error in cudaOccupancyMaxActiveBlocksPerMultiprocessor("
            "&num_blocks_per_sm, mmha::masked_multihead_attention_kernel<T>, 0): no kernel image is available for "
            "execution on the device (../tensorrt_llm/kernels/decoderMaskedMultiheadAttentionLaunch.h:274)\n"
            "1       0x7eba47e6ef29 /venv/lib/python3.10/site-packages/tensorrt_llm/libs/libdecoder_attention_0.so"
            "(+0x26ef29) [0x7eba47e6ef29]\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "warmup"
    # vLLM's sampler warm-up line moves the timeline the same way
    rows = timeline("INFO 05-01 10:00:00 [gpu_model_runner.py:2100] Warming up sampler with 256 dummy requests.\n")
    assert [r["phase"] for r in rows] == ["warmup"]


def test_an_openai_request_id_in_a_connectors_line_places_a_cut_worker_stack_in_serving() -> None:
    """LMCache#1471: the KV connector's per-request lines ("Storing KV cache ... for request cmpl-...") in the
    workers' output, then one worker's "WorkerProc hit an exception." and a traceback cut at worker_busy_loop
    (which runs start-up RPCs and serving steps alike)."""
    text = ("(VllmWorker TP5 pid=435) [2025-08-29 19:59:50,131] LMCache INFO: Storing KV cache for 389 out of 78213 "
            "tokens (skip_leading_tokens=77824) for request cmpl-e79ea8c062494f8abb42a8084eef2bb2-0 "
            "(vllm_v1_adapter.py:929:lmcache.integration.vllm.vllm_v1_adapter)\n"
            "(VllmWorker TP3 pid=433) ERROR 08-29 19:59:50 [multiproc_executor.py:596] WorkerProc hit an exception.\n"
            "(VllmWorker TP3 pid=433) ERROR 08-29 19:59:50 [multiproc_executor.py:596] Traceback (most recent call "
            "last):\n"
            '(VllmWorker TP3 pid=433) ERROR 08-29 19:59:50 [multiproc_executor.py:596]   File "/opt/venv/lib/'
            'python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 591, in worker_busy_loop\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "serving"
    assert [r["phase"] for r in timeline("INFO 01-01 00:00:00 handled chatcmpl-0a1b2c3d4e5f in 2.1 s\n")] == ["serving"]


def test_a_dead_engine_error_raised_to_a_request_is_serving() -> None:
    """vllm#15039: vLLM v0's one-line record of MQEngineDeadError ("Engine loop is not running", the OOM's repr
    inside), no frame; v1's EngineDeadError likewise."""
    text = ("ERROR 03-19 10:55:18 [serving_chat.py:677] vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is "
            "not running. Inspect the stacktrace to find the original error: OutOfMemoryError('CUDA out of memory. "
            "Tried to allocate 128.00 MiB. GPU 0 has a total capacity of 79.33 GiB of which 16.00 MiB is free.').\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "serving" and "CUDA out of memory" in rc.message
    v1 = ("(APIServer pid=1) ERROR 01-08 17:16:15 [serving_chat.py:1278] vllm.v1.engine.exceptions.EngineDeadError: "
          "EngineCore encountered an issue. See stack trace (above) for the root cause.\n")
    rc = analyze(v1).root_cause
    assert rc is not None and rc.phase == "serving"


def test_a_workers_initialize_method_in_the_wrapper_line_is_start_up() -> None:
    """dynamo#331: vLLM v0's "Exception in worker VllmWorkerProcess while processing method initialize_nixl." (a
    record of its own before the traceback, so read last, after the stack, its words and the timeline told
    nothing) and a NotImplementedError raised in run_method: a component's set-up method, run before serving."""
    p = "(VllmWorkerProcess pid=765974) ERROR 03-21 05:31:41 multiproc_worker_utils.py:242] "
    text = ("ERROR 03-21 05:31:41 multiproc_worker_utils.py:242] Exception in worker VllmWorkerProcess while processing "
            "method initialize_nixl.\n"
            + p + "Traceback (most recent call last):\n"
            + p + '  File "/venv/lib/python3.12/site-packages/vllm/utils.py", line 2216, in run_method\n'
            + p + '    raise NotImplementedError(f"Method {method!r} is not"\n'
            + p + "NotImplementedError: Method 'initialize_nixl' is not implemented.\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "NotImplementedError" and rc.phase == "startup_other"


def test_a_missing_library_and_prose_about_creation_place_a_bare_exception_at_start_up() -> None:
    """dynamo#3054: a fenced frame whose function name the paste cut ("in>") and "RuntimeError: NIXL is not
    available"; dynamo#6671: "crashes during NIXL agent creation" in the prose, then a fenced TensorRT-LLM
    assertion with no frame."""
    text = ("When starting the Dynamo prefill and decode workers, the process fails with the following error:\n"
            "```\n"
            'File "/venv/lib/python3.11/site-packages/vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", '
            "line 426, in>\n"
            '    raise RuntimeError("NIXL is not available")\n'
            "RuntimeError: NIXL is not available\n"
            "```\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "startup_other"
    text = ("## Bug Description\n\n"
            "TRT-LLM disaggregated inference crashes during NIXL agent creation (`createNixlTransferAgent`) when using "
            "the Dynamo v0.9.0 TRT-LLM runtime container.\n\n"
            "```\n"
            "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: status == NIXL_SUCCESS\n"
            "(../tensorrt_llm/executor/cache_transmission/nixl_utils/transferAgent.cpp:416)\n"
            "```\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "startup_other"


def test_a_log_ending_after_a_chain_marker_has_its_final_exception_cut_off() -> None:
    """vllm#21050: a CalledProcessError, then "The above exception was the direct cause of the following
    exception:" and a record cut after its timestamp: the exception the marker announced is missing."""
    p = "ERROR 07-16 18:40:10 [registry.py:379] "
    text = (p + "Error in inspecting model architecture 'Qwen2_5_VLForConditionalGeneration'\n"
            + p + "Traceback (most recent call last):\n"
            + p + '  File "/lib/python3.12/subprocess.py", line 502, in check_returncode\n'
            + p + "    raise CalledProcessError(self.returncode, self.args, self.stdout,\n"
            + p + "subprocess.CalledProcessError: Command '['/bin/python', '-m', 'vllm.model_executor.models.registry']'"
            " returned non-zero exit status 1.\n"
            + p + "\n"
            + p + "The above exception was the direct cause of the following exception:\n"
            "ERROR 07-16 18:40\n")
    a = analyze(text)
    assert a.root_cause is not None and a.root_cause.exception_type == "subprocess.CalledProcessError"
    assert a.final is not None and a.final.truncated
    assert a.final.last_complete is not None and a.final.last_complete[0] == "subprocess.CalledProcessError"
    # the exception the marker announced, printed: the final is whole
    whole = text.replace("ERROR 07-16 18:40\n", p + "Traceback (most recent call last):\n"
                         + p + '  File "/vllm/config.py", line 9, in inspect\n'
                         + p + "    raise ValueError('Model architectures failed to be inspected')\n"
                         + p + "ValueError: Model architectures failed to be inspected\n")
    final = analyze(whole).final
    assert final is not None and not final.truncated and final.exception_type == "ValueError"


def test_an_exception_a_sentence_names_after_a_verb_of_getting_it_is_a_bare_exception() -> None:
    """GLM-V#8: the issue's prose names the error mid-sentence, unquoted ("... but i got TypeError:
    Glm4vProcessor.__init__() got multiple values for argument 'tokenizer', vllm transformers are ...")."""
    text = ("### System Info / 系統信息\n\n"
            "i run vllm serve like this \"vllm serve THUDM-GLM-4.1V-9B-Thinking --limit-mm-per-prompt '{\"image\":32}' "
            "--allowed-local-media-path /\" but i got TypeError: Glm4vProcessor.__init__() got multiple values for "
            "argument 'tokenizer', vllm transformers are install like requirments.txt\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "TypeError"
    assert "got multiple values for argument 'tokenizer'" in rc.message
    # a log record's words are not prose: an INFO line that mentions an error class is no failure
    assert analyze("INFO 01-01 00:00:00 [x.py:1] retry policy: got TimeoutError: will retry in 5 s\n").root_cause is None


def test_a_constructors_argument_mismatch_with_no_frame_is_start_up() -> None:
    """GLM-V#8 (a library version mismatch): "TypeError: Glm4vProcessor.__init__() got multiple values for argument
    'tokenizer'" alone, no frame and no timeline: components being built, so start-up."""
    for message in ("Glm4vProcessor.__init__() got multiple values for argument 'tokenizer'",
                    "LlamaAttention.__init__() got an unexpected keyword argument 'rope_scaling'"):
        rc = analyze(f"TypeError: {message}\n").root_cause
        assert rc is not None and rc.exception_type == "TypeError" and rc.phase == "startup_other", message
