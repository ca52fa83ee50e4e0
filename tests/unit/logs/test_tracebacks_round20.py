"""Mechanisms added after held-out 20 was measured (issue 15, nineteenth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

import io

from workbench.logformats import parse_line
from workbench.phases import decide_phase
from workbench.tracebacks import analyze
from workbench.tracebacks.diagnose import analyze_stream

_WATCHDOG = ("rank0]:[E811 01:10:50.482336908 ProcessGroupNCCL.cpp:1515] [PG 3 Rank 0] Process group watchdog thread "
             "terminated with exception: CUDA error: an illegal memory access was encountered/s, output: 240.71 toks/s]\n"
             "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
             "be incorrect.\n"
             "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
             "\n"
             "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent call "
             "first):\n"
             "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7b39e1177f86 in "
             "/envs/x/lib/python3.10/site-packages/torch/lib/libc10.so)\n")


def test_a_window_cut_one_character_into_torchs_rank_prefix_keeps_its_rank() -> None:
    """vllm#7161 (v0.5.3, TP 2): the paste began at "rank0]:" and the watchdog's line is glued to LLM.generate's
    progress bar ("... encountered/s, output: 240.71 toks/s]"): an offline engine generating."""
    for a in (analyze(_WATCHDOG), analyze_stream(io.BytesIO(_WATCHDOG.encode()))):
        rc = a.root_cause
        assert rc is not None and "an illegal memory access was encountered" in rc.message
        assert rc.ranks == ("rank0",) and rc.phase == "serving"
    assert parse_line("rank3]: Traceback (most recent call last):").rank == "rank3"
    # only at the line's start: the word inside a message is not a prefix
    assert parse_line("ERROR lost rank3]: x").rank is None
    # without the progress bar nothing says the engine was generating
    rc = analyze(_WATCHDOG.replace("/s, output: 240.71 toks/s]", "")).root_cause
    assert rc is not None and rc.phase != "serving"


_JUPYTER = (
    "    125 self.request_counter = Counter()\n"
    "\n"
    "File [~/miniconda3/envs/qwen_env/lib/python3.11/site-packages/vllm/engine/llm_engine.py:292](http://1xx.xx.xx.xx:"
    "xxx/lab/tree/llm/miniconda3/envs/qwen_env/lib/python3.11/site-packages/vllm/engine/llm_engine.py#line=291), in "
    "LLMEngine.from_engine_args(cls, engine_args, usage_context)\n"
    "    289     executor_class = GPUExecutor\n"
    "--> 292 engine = cls(\n"
    "    293     **engine_config.to_dict(),\n"
    "    294     executor_class=executor_class,\n"
    "    297 )\n"
    "\n"
    "File [~/miniconda3/envs/qwen_env/lib/python3.11/site-packages/vllm/engine/llm_engine.py:172](http://1xx.xx.xx.xx:"
    "xxx/lab/tree/llm/miniconda3/envs/qwen_env/lib/python3.11/site-packages/vllm/engine/llm_engine.py#line=171), in "
    "LLMEngine.__init__(self, model_config, cache_config, parallel_config, scheduler_config)\n"
    "    160 self.model_executor = executor_class(\n"
    "    161     model_config=model_config,\n"
    "   (...)\n"
)


def test_jupyterlabs_linked_ipython_frames_are_a_traceback_cut_at_both_ends() -> None:
    """Qwen3#458: IPython 8's "File [path:N](link), in f(args)" frames as JupyterLab renders them, the paste cut
    above the first frame and inside the last."""
    a = analyze(_JUPYTER)
    rc = a.root_cause
    assert rc is not None and rc.exception_type is None and rc.phase == "startup_other"
    assert a.final is not None and a.final.truncated
    tb = a.tracebacks[0]
    assert [f.function for f in tb.frames] == ["LLMEngine.from_engine_args", "LLMEngine.__init__"]
    assert tb.frames[0].line == 292


_H = "(APIServer pid=92) ERROR 08-15 11:20:19 [serving.py:825] "
_STREAM = "".join(_H + x + "\n" for x in (
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", line 660, in output_handler',
    "    outputs = await engine_core.get_output_async()",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core_client.py", line 1061, in get_output_async',
    "    raise self._format_exception(outputs) from None",
    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root "
    "cause.",
    "Error in chat completion stream generator.",
))


def test_logger_exceptions_next_record_under_the_same_header_ends_the_message_and_a_log_ending_on_it_is_cut() -> None:
    """spark-vllm-docker#348: vLLM's serving logs "Error in chat completion stream generator." then the stack, every
    line under one header; the paste ended on the next request's record, its stack never printed."""
    a = analyze(_STREAM)
    rc = a.root_cause
    assert rc is not None and rc.exception_type == "vllm.v1.engine.exceptions.EngineDeadError"
    assert rc.message.endswith("for the root cause.") and rc.phase == "serving"
    assert a.final is not None and a.final.truncated
    # the record's own stack following: the message is still the exception's alone
    more = analyze(_STREAM + _H + "Traceback (most recent call last):\n").root_cause
    assert more is not None and more.message.endswith("for the root cause.")
    # a second line of the exception's message that is not a record's announcement: the log ends complete
    done = analyze(_STREAM.replace("Error in chat completion stream generator.", "Please check the server."))
    assert done.final is not None and not done.final.truncated


def test_weights_the_checkpoint_did_not_fill_are_a_weight_loading_failure() -> None:
    """vllm#25993 (GLM-4.6 with an MTP draft): the loader's check that the checkpoint filled every parameter,
    quoted in prose."""
    text = ("vllm serve GLM-4.6\n--tensor-parallel-size 8\n\ngives error:\n"
            "ValueError: Following weights were not initialized from checkpoint: {'model.embed_tokens.weight', "
            "'model.layers.92.shared_head.head.weight'\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "ValueError" and rc.phase == "weight_loading"


_XINFERENCE = (
    "[2025-07-30 20:00:39] Received sigquit from a child process. It usually means the child failed.\n"
    "2025-07-30 20:00:39,414 xinference.core.worker 142 ERROR    Failed to load model qwen32B-0\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/xinference/core/worker.py", line 1114, in launch_builtin_model\n'
    "    await model_ref.load()\n"
    '  File "/usr/local/lib/python3.10/dist-packages/xoscar/backends/context.py", line 262, in send\n'
    "    return self._process_result_message(result)\n"
    '  File "xoscar/core.pyx", line 526, in xoscar.core._BaseActor.__on_receive__\n'
    "    async with self._lock:\n"
)


def test_a_platforms_failed_to_load_model_over_its_launch_frames_is_the_start_not_the_weights() -> None:
    """xinference#3874: the worker's "Failed to load model <uid>" over launch_builtin_model -> the model actor's
    load(), which builds the whole engine (SGLang's child died with SIGQUIT): a start-up failure."""
    rc = analyze(_XINFERENCE).root_cause
    assert rc is not None and rc.phase == "startup_other"
    # the same words with no stack, or naming what failed in the weights, still read as loading them
    assert decide_phase((), ("Faild to load model, CUDA failed with error out of memory",)) == "weight_loading"
    frames = [("/x/xinference/core/worker.py", "launch_builtin_model", None)]
    assert decide_phase(frames, ("Failed to load model m-0",)) == "startup_other"
    assert decide_phase(frames, ("Failed to load model m-0: weights were not initialized from checkpoint",)) \
        == "weight_loading"
