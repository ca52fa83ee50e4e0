"""Mechanisms added after held-out 14 was measured (issue 15, thirteenth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.phases import timeline
from workbench.tracebacks import analyze


def test_vllm_v0s_capture_banner_places_a_cut_engine_traceback_in_graph_capture() -> None:
    """vllm#3764: v0.4's "# GPU blocks" line, then its "Capturing the model for CUDA graphs. ..." banner, then a
    traceback cut in the executor's construction (which profiles, allocates and captures)."""
    text = ("INFO 04-01 08:19:20 gpu_executor.py:94] # GPU blocks: 33910, # CPU blocks: 7281\n"
            "INFO 04-01 08:19:23 model_runner.py:791] Capturing the model for CUDA graphs. This may lead to unexpected "
            "consequences if the model is not static. To run the model in eager mode, set 'enforce_eager=True' or use "
            "'--enforce-eager' in the CLI.\n"
            "Traceback (most recent call last):\n"
            '  File "/home/u/vllm_test.py", line 11, in <module>\n'
            '    llm = LLM(model="facebook/opt-125m")\n'
            '  File "/home/u/envs/vllm/lib/python3.9/site-packages/vllm/engine/llm_engine.py", line 111, in __init__\n'
            "    self.model_executor = executor_class(model_config, cache_config,\n"
            '  File "/ho\n')
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "cuda_graph_capture"
    rows = timeline("INFO 04-01 08:19:23 model_runner.py:791] Capturing the model for CUDA graphs. This may lead "
                    "to unexpected consequences if the model is not static.\n")
    assert [r["phase"] for r in rows] == ["cuda_graph_capture"]


def test_an_exception_line_that_is_a_sentence_of_its_own_in_prose_is_a_failure() -> None:
    """vllm#7978: a comment whose question is followed, in the same line, by the exception line."""
    text = ("Hi same issue for me. I am trying vllm with facebook/opt-125m using openai template, can someone help ? "
            "ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must provide a "
            "chat template if the tokenizer does not define one.\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "ValueError"
    assert rc.message.startswith("As of transformers v4.44, default chat template is no longer allowed")
    # the same after a full stop; an abbreviation's dot ("e.g.") or a lone name is no sentence of an exception
    rc = analyze("I tried the 0.6 wheel. RuntimeError: CUDA error: no kernel image is available\n").root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    assert analyze("Errors of this kind, e.g. ValueError: bad input, are rare.\n").root_cause is None
    assert analyze("I read about it. ValueError is raised when the value is wrong.\n").root_cause is None


def test_an_exception_line_behind_a_process_tag_with_no_pid_is_a_failure() -> None:
    """kaggle-tpu-lab#7: a fenced "(APIServer) RuntimeError: Engine core initialization failed. ..." with no pid in
    the tag, then the notebook's own phase line."""
    text = ("```\n"
            "(APIServer) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
            '[PHASE failed {"step": "server", "rc": 1}]\n'
            "```\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    assert rc.message.startswith("Engine core initialization failed") and rc.phase == "startup_other"
    # a shell prompt's environment tag is not a process's, nor is a tag before words that are no exception line
    assert analyze("(base) user@host:~$ ValueError: not a log line at all\n").root_cause is None
    assert analyze("(APIServer) Started the server on port 8000\n").root_cause is None


def test_an_architecture_the_engine_does_not_know_is_a_start_up_failure() -> None:
    """MiniMax-M1#21: the api_server command, then the bare "ValueError: Cannot find model module. 'X' is not a
    registered model in the Transformers library ..." (vLLM resolves the architecture while it builds its config)."""
    text = ("python -m vllm.entrypoints.openai.api_server \\\n--model ./MiniMax-M1-80k \\\n--trust-remote-code\n"
            "报错：\n"
            "ValueError: Cannot find model module. 'MiniMaxM1ForCausalLM' is not a registered model in the "
            "Transformers library (only relevant if the model is meant to be in Transformers) and 'AutoModel' is not "
            "present in the model config's 'auto_map' (relevant if the model is custom).\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "ValueError" and rc.phase == "startup_other"
    text = ("ValueError: Model architectures ['MiniMaxM2ForCausalLM'] are not supported for now. Supported "
            "architectures: dict_keys(['LlamaForCausalLM'])\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "startup_other"


def test_a_model_runners_constructor_under_init_device_is_not_nccl_start() -> None:
    """vllm-ascend#7276: init_device builds the NPU model runner after the process group is up; its constructor's
    ``get_attn_backend(`` raised a TypeError. vLLM's own GPU model runner is built there the same way."""
    text = ('(EngineCore pid=9748)   File "/opt/vllm/vllm/v1/worker/worker_base.py", line 312, in init_device\n'
            "(EngineCore pid=9748)     self.worker.init_device()  # type: ignore\n"
            '(EngineCore pid=9748)   File "/opt/vllm/vllm-ascend/vllm_ascend/worker/worker.py", line 322, in '
            "init_device\n"
            "(EngineCore pid=9748)     self.model_runner = NPUModelRunner(self.vllm_config, self.device)\n"
            '(EngineCore pid=9748)   File "/opt/vllm/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 292, '
            "in __init__\n"
            "(EngineCore pid=9748)     self.attn_backend = get_attn_backend(\n"
            "(EngineCore pid=9748) TypeError: get_attn_backend() got multiple values for argument 'use_mla'\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "TypeError" and rc.phase == "startup_other"
    gpu = text.replace("vllm-ascend/vllm_ascend/worker/worker.py", "vllm/v1/worker/gpu_worker.py").replace(
        "vllm-ascend/vllm_ascend/worker/model_runner_v1.py", "vllm/v1/worker/gpu_model_runner.py")
    rc = analyze(gpu).root_cause
    assert rc is not None and rc.phase == "startup_other"
    # the process group set up in the same init_device is still NCCL start
    nccl = text.split("(EngineCore pid=9748)     self.model_runner")[0] + (
        "(EngineCore pid=9748)     init_worker_distributed_environment(self.vllm_config, self.rank)\n"
        "(EngineCore pid=9748) RuntimeError: NCCL error: unhandled system error\n")
    rc = analyze(nccl).root_cause
    assert rc is not None and rc.phase == "nccl_init"


def test_a_backtick_glued_before_a_journal_record_leaves_the_record_readable() -> None:
    """MiniMax-M2#40: a paste opened by a backtick glued to its first journal record, whose pydantic error's dotted
    name a space splits ("pydantic_core._pydantic_core. ValidationError: ..."), then systemd's exit line."""
    text = ("`Nov 13 01:50:23 host vllm[62501]: (APIServer pid=62501) pydantic_core._pydantic_core. ValidationError: "
            "1 validation error for ModelConfig\n"
            "Nov 13 01:50:23 host vllm[62501]: (APIServer pid=62501)   Value error, Model architectures "
            "['MiniMaxM2ForCausalLM'] are not supported for now. Supported architectures>\n"
            "Nov 13 01:50:25 host systemd[1]: vllm-minimax.service: Main process exited, code=exited, "
            "status=1/FAILURE`\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "ValidationError"
    assert rc.message.startswith("1 validation error for ModelConfig")
    # a quoted exception line keeps its quote (and is read as one)
    rc = analyze("`RuntimeError: Decode out of memory. Try to allocate 148 tokens.`\n").root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"


def test_a_message_saying_it_failed_while_warming_up_is_a_warm_up_failure() -> None:
    """vllm#33920: the bare two-line RuntimeError vLLM raises when the sampler's warm-up runs out of memory; its
    second line's "when initializing the engine" is start-up in general, "warming up" the step."""
    text = ("```\n"
            "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests. \n"
            "Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.\n"
            "```\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "warmup"


def test_the_later_lines_of_a_multi_line_message_tell_the_phase() -> None:
    """MiniMax-M2#40: pydantic's ValidationError names the model it failed on in its first line and the reason
    (an architecture vLLM does not support: start-up) in the next."""
    text = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
            "  Value error, Model architectures ['MiniMaxM2ForCausalLM'] are not supported for now. Supported "
            "architectures: dict_keys(['LlamaForCausalLM'])\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.message.startswith("1 validation error for ModelConfig")
    assert rc.phase == "startup_other"


def test_a_failure_message_prose_quotes_as_thrown_or_announced_is_an_error_line() -> None:
    """dynamo#6734: "... the Decode worker sporadically crashes and throws the panic 'Assertion failed: emplaceDone'";
    dynamo#843: "an error occurs during request:" over a line that is one backticked message."""
    text = ("In a PD disaggregated deployment, the Decode worker sporadically crashes and throws the panic 'Assertion "
            "failed: emplaceDone'.\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.kind == "log_line" and rc.message == "Assertion failed: emplaceDone"
    text = ("When running Dynamo in disaggregation mode with 2 prefill workers and 1 or more decode workers, an error "
            "occurs during request:\n"
            "`handling callback was invoked with status -3 (Input/output error)`\n"
            "The issue happens when the prefill phase finishes and the decode worker picks up the request.\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.message == "handling callback was invoked with status -3 (Input/output error)"
    # a quote no sentence announces as an error, or prose that throws nothing quoted, is no failure
    assert analyze("Run it with the flag below:\n`--max-model-len 8192 --enforce-eager`\n").root_cause is None
    assert analyze("The server throws an error when the port is taken, which is expected.\n").root_cause is None


def test_prose_placing_a_failure_in_the_handling_of_requests_is_serving() -> None:
    """dynamo#843: "an error occurs during request:" is the sentence before the quoted message."""
    text = ("When running Dynamo in disaggregation mode with 2 prefill workers, an error occurs during request:\n"
            "`handling callback was invoked with status -3 (Input/output error)`\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "serving"
    rc = analyze("The worker crashed while processing the requests. RuntimeError: CUDA error: an illegal memory "
                 "access was encountered\n").root_cause
    assert rc is not None and rc.phase == "serving"
