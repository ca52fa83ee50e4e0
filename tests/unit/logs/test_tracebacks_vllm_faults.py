"""Phases of failures whose step is known: real vLLM-CPU starts with a fault injected into one function of a step
(``bench/vllm_faults.py``, logs in tests/fixtures/captured/faults/), and the words that name a step in a failure's
own line — HCCL connecting its ranks, torch's store waiting for them, a request dropped or a captured graph replayed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.tracebacks import analyze

FAULTS = Path(__file__).resolve().parents[2] / "fixtures" / "captured" / "faults"
INDEX = json.loads((FAULTS / "index.json").read_text())


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
