"""Mechanisms added after held-out 12 was measured (issue 15, eleventh round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.phases import known_phase, timeline, track
from workbench.tracebacks import analyze


def test_a_c10d_store_socket_timeout_places_a_cut_start_up_stack_in_nccl_init() -> None:
    """sglang#7478 and ms-swift#3343: TCPStore's 'waitForInput ... timed out after 1800000ms' (with or without
    '[rankN]:'), then a start-up traceback cut before any frame names the step."""
    for prefix in ("[rank1]:", ""):
        text = (prefix + "[W623 15:37:01.824135523 socket.cpp:485] [c10d] waitForInput: socket SocketImpl(fd=100, "
                "addr=[node-0]:43590, remote=[node-0]:20000) timed out after 1800000ms\n"
                "[2025-06-23 15:37:01 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
                '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2546, in '
                "run_scheduler_process\n"
                "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)\n"
                '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 312, in __init__\n'
                "    self.tp_worker = TpWorkerClass(\n")
        rc = analyze(text).root_cause
        assert rc is not None and rc.phase == "nccl_init", prefix
    # forwards only: a store timeout while serving does not pull the timeline back
    rows = timeline("[2025-06-23 15:30:00] Decode batch. #running-req: 1\n"
                    "[W623 15:37:01.824135523 socket.cpp:485] [c10d] The client socket has timed out after 600000ms "
                    "while trying to connect to (node-0, 20000).\n")
    assert [r["phase"] for r in rows] == ["serving"]


def test_lmdeploys_loading_weights_line_places_a_cut_cli_traceback_in_weight_loading() -> None:
    """lmdeploy#2104: 'INFO - loading weights - "pytorch_model-00001-of-00003.bin"', then the CLI's traceback
    cut inside Engine.from_pretrained."""
    text = ('2024-09-05 08:43:29,394 - lmdeploy - INFO - loading weights.\n'
            '2024-09-05 08:43:29,395 - lmdeploy - INFO - loading weights - "pytorch_model-00001-of-00003.bin"\n'
            "Traceback (most recent call last):\n"
            '  File "/envs/v6/lib/python3.10/site-packages/lmdeploy/cli/entrypoint.py", line 36, in run\n'
            "    args.run(args)\n"
            '  File "/envs/v6/lib/python3.10/site-packages/lmdeploy/pytorch/chat.py", line 70, in run_chat\n'
            "    tm_model = Engine.from_pretrained(model_path,\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "weight_loading"


def test_a_vllm_line_after_a_bare_application_startup_complete_makes_it_serving() -> None:
    """vllm#17430: uvicorn's bare 'Application startup complete.' comes before any vLLM-shaped line; the chat
    template line and the worker's start_worker_execution_loop failure after it show a vLLM server serving."""
    p = "(VllmWorkerProcess pid=2481307) ERROR 04-30 10:38:21 [multiproc_worker_utils.py:238] "
    text = ("INFO:     Waiting for application startup.\n"
            "INFO:     Application startup complete.\n"
            "INFO 04-30 10:38:21 [chat_utils.py:397] Detected the chat template content format to be 'string'.\n"
            + p + "Exception in worker VllmWorkerProcess while processing method start_worker_execution_loop.\n"
            + p + "Traceback (most recent call last):\n"
            + p + '  File "/envs/vllm/lib/python3.12/site-packages/triton/language/core.py", line 35, in wrapper\n'
            + p + "    return fn(*args, **kwargs)\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "serving"
    rows = timeline(text)
    assert rows[0]["phase"] == "serving" and rows[0]["line_no"] == 2
    # SGLang's lines keep it warmup
    rows = timeline("INFO:     Application startup complete.\n"
                    "[2025-06-23 15:37:01] INFO:     127.0.0.1:40000 - \"GET /get_model_info HTTP/1.1\" 200 OK\n")
    assert rows[0]["phase"] == "warmup"


def test_spdlogs_lower_case_bracketed_level_is_read_and_an_error_record_is_the_failure() -> None:
    """tt-inference-server#2753: a C++ server logging with spdlog's default pattern
    ('[time] [logger] [error] message'); no traceback, only its error records."""
    from workbench.logformats import parse_line

    line = ("[2026-04-03 15:47:21.586738] [tt-media-server] [error] [BoostIpcQueue] Failed to open existing queue: "
            "tt_warmup_signals")
    parsed = parse_line(line)
    assert parsed.level == "ERROR" and parsed.message.startswith("[BoostIpcQueue] Failed to open")
    assert parse_line("[2026-04-03 15:47:20.000001] [tt-media-server] [info] [Worker] started").level == "INFO"
    text = (line + "\n[2026-04-03 15:47:21.586749] [tt-media-server] [error] [SingleProcessWorker] Worker 0 failed "
            "to signal warmup: Failed to open existing queue: tt_warmup_signals\n")
    rc = analyze(text).root_cause
    assert rc is not None and "Failed to open existing queue" in rc.message and rc.phase == "warmup"


def test_a_line_of_prose_opening_a_quote_with_an_exception_line_is_a_failure() -> None:
    """sglang#10408 and sglang#4602: the exception line opens a backtick quote that closes on a later
    line; SGLang's scheduler raises these while building a batch, so the phase is serving."""
    text = ("The error message when it crashes\n"
            "`RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for "
            "`--max-running-requests`. self.req_to_token_pool.available_size()=1, num_reqs=2,\n"
            "`\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError"
    assert rc.message.startswith("alloc_req_slots runs out of memory") and rc.phase == "serving"
    text = ("However, an allocation attempt for 148 tokens fails\n"
            "`RuntimeError: Decode out of memory. Try to lower your batch size.\n"
            "Try to allocate 148 tokens.\n"
            "self.tree_cache.evictable_size()=0`\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "serving"
    assert rc.message.startswith("Decode out of memory")
    # a code span that is not an exception line, and a fence, stay prose
    assert analyze("`ValueError` is raised when the `--tp` flag is wrong\n```\npip install sglang\n```\n"
                   ).root_cause is None


def test_a_sentence_naming_the_error_its_next_line_quotes_is_a_failure_placing_workers_is_start_up() -> None:
    """vllm#2406: 'I keep getting the following ValueError:', a blank line, then the message alone in
    backticks; Ray's placement of the engine's workers happens at start-up (OpenRLHF#732 quotes the same
    error as a bare line)."""
    text = ("I am trying to run a distributed (multi-node) inference server with vLLM using ray, but I keep getting "
            "the following ValueError:\n\n"
            "`Ray does not allocate any GPUs on the driver node. Consider adjusting the Ray placement group or "
            "running the driver on a GPU node.`\n"
            "I'm not sure how exactly to resolve this.\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.exception_type == "ValueError" and rc.phase == "startup_other"
    assert rc.message.startswith("Ray does not allocate any GPUs on the driver node")
    # a quoted command after a sentence that names no error stays prose
    assert analyze("I launched it with the following command:\n`python -m vllm.entrypoints.openai.api_server "
                   "--model x`\n").root_cause is None


def test_sglangs_no_room_for_the_kv_cache_words_place_a_bare_line_in_kv_cache_alloc() -> None:
    """sglang#4330: the bare 'RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.'
    in an issue's prose (raised by the memory pool sizing)."""
    rc = analyze("With speculative decoding the server exits:\n"
                 "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n").root_cause
    assert rc is not None and rc.exception_type == "RuntimeError" and rc.phase == "kv_cache_alloc"


def test_vllms_warning_that_it_could_not_pickle_a_failed_executions_input_names_the_failure() -> None:
    """vllm#10389: v0's 'Writing input of failed execution' INFO, then a WARNING 'Failed to pickle inputs of
    failed execution: CUDA error: an illegal memory access was encountered' and no error-level record."""
    text = ("INFO 11-16 10:37:50 metrics.py:449] Avg prompt throughput: 5941.0 tokens/s, Running: 3 reqs\n"
            "INFO 11-16 10:37:53 model_runner_base.py:120] Writing input of failed execution to "
            "/tmp/err_execute_model_input_20241116-103753.pkl...\n"
            "WARNING 11-16 10:37:53 model_runner_base.py:143] Failed to pickle inputs of failed execution: "
            "CUDA error: an illegal memory access was encountered\n")
    rc = analyze(text).root_cause
    assert rc is not None and "illegal memory access" in rc.message and rc.phase == "serving"
    # other warnings naming a CUDA error stay warnings
    assert analyze("WARNING 11-16 10:37:53 utils.py:1] Retrying after CUDA error: out of memory\n").root_cause is None


def test_unprefixed_progress_bars_tell_the_phase_of_a_server_whose_own_lines_told_none() -> None:
    """unsloth#3366: docker compose's 'gemma-vllm-server  | ' prefix, the shard progress bars without it (their
    carriage returns ate it), the 0% bar glued to the ERROR record whose traceback is cut in the engine's
    constructor: nothing of the server's own said a phase, the bars say it was loading its weights."""
    p = "gemma-vllm-server  | "
    text = (p + "INFO 09-24 02:53:51 [weight_utils.py:349] No model.safetensors.index.json found in remote.\n"
            "Loading safetensors checkpoint shards: 100% 1/1 [00:00<00:00,  2.29it/s]\n"
            "Loading safetensors checkpoint shards:   0% 0/1 [00:00<?, ?it/s]ERROR 09-24 02:53:53 [engine.py:467] \n"
            + p + "Traceback (most recent call last):\n"
            + p + '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/multiprocessing/engine.py", line 455, '
            "in run_mp_engine\n"
            + p + "    engine = MQLLMEngine.from_vllm_config(\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "weight_loading"
    # the lines stay nobody's in the timeline (in a log of two services they may be the other's), and a
    # server whose own lines told its phase keeps it
    trackers = track(text)
    assert set(trackers) == {"|gemma-vllm-server", "|"}
    assert known_phase(trackers["|gemma-vllm-server"], trackers) == "weight_loading"
    trackers = track("b  | INFO 09-24 02:53:51 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000\n"
                     "Loading safetensors checkpoint shards: 100% 1/1\n")
    assert known_phase(trackers["|b"], trackers) == "serving"


def test_sglangs_capture_failure_words_in_a_fence_beat_the_prose_after_it() -> None:
    """sglang#35557: 'Capture cuda graph failed: Assertion error' in a Markdown fence (the paste lost the
    exception's type), then a sentence quoting 'scheduler died during initialization'; the engine's own
    words count as the exception line they were, and came first."""
    text = ("It fails late, after a full weight load.\n\n"
            "```\n"
            "Capture cuda graph failed: Assertion error\n"
            "(/deepgemm/csrc/apis/../jit_kernels/impls/../heuristics/../../utils/layout.hpp:57):\n"
            "ab.scalar_type() == kPackedFP4 and arch_major == 10\n"
            "```\n\n"
            "`arch_major == 10` is SM100 (Blackwell). On SM90 the scheduler then dies (`Rank 0 scheduler died "
            "during initialization`).\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.message.startswith("Capture cuda graph failed") and rc.phase == "cuda_graph_capture"


def test_a_traceback_inside_logfmt_records_is_read_from_their_msg() -> None:
    """docker/model-runner#611: the runner logs vLLM's stderr as logrus records, each line in msg="..." with
    its quotes escaped; the traceback is cut in the CLI's subparser_init (start-up)."""
    from workbench.logformats import parse_line

    def rec(text: str) -> str:
        return 'time="2026-01-29T14:55:54Z" level=info msg="' + text.replace('"', '\\"') + '" component=vllm\n'

    text = ('Traceback (most recent call last):" component=vllm\n'
            + rec('  File "/opt/vllm-env/bin/vllm", line 10, in <module>') + rec("    sys.exit(main())")
            + rec('  File "/opt/vllm-env/lib/python3.12/site-packages/vllm/entrypoints/cli/main.py", line 66, in main')
            + rec("    cmd.subparser_init(subparsers).set_defaults(dispatch_function=cmd.cmd)")
            + rec('  File "/opt/vllm-env/lib/python3.12/site-packages/vllm/entrypoints/cli/serve.py", line 72, in '
                  "subparser_init")
            + rec("    serve_parser = make_arg_parser(serve_parser)"))
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "startup_other"
    # the wrapped line is parsed as itself: its own prefix, its own level
    parsed = parse_line(rec("INFO 01-29 14:55:54 [api_server.py:1] hello").rstrip("\n"))
    assert parsed.message == "hello" and parsed.level == "INFO" and parsed.format == "vllm"
