"""Mechanisms added after held-out 28 (vLLM and SGLang threads) was measured once untuned (issue 15, twenty-sixth
round), each on lines written in the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.phases import decide_phase
from workbench.tracebacks import analyze


def test_a_disaggregated_kv_transfer_failure_is_serving() -> None:
    """vLLM#50765 (NIXL's "transfer failure ... 'request_id'"), SGLang#7118 (Mooncake's TCP transport "writeBody
    failed", then "Prefill transfer failed for request"), vLLM PR 10884 (the transfer engine's "Process failed for
    slice"): a request's KV cache moving between prefill and decode."""
    nixl = ("(Worker_TP1_EP1 pid=2749) ERROR 08-02 19:43:44 [worker.py:767] NIXL transfer failure: handshake_failed | "
            "Context: {'failure_type': 'handshake_failed', 'request_id': 'cmpl-1'}\n")
    mooncake = ("E0612 14:05:26.176716 1192408 tcp_transport.cpp:136] Session::writeBody failed. Error: Bad address "
                "(value: 14), total_transferred_bytes_: 0\n")
    for log in (nixl, mooncake):
        a = analyze(log)
        assert a.root_cause is not None and a.root_cause.phase == "serving", log
    # a start-up failure that only names a request id's field elsewhere is not made serving by other words
    assert decide_phase([], ["RuntimeError: NCCL error in init"]) != "serving"


def test_a_lora_adapter_loaded_for_a_batch_is_serving() -> None:
    """vLLM#3374: LRUCacheWorkerLoRAManager._apply_adapters -> add_adapter -> _load_adapter (IPython frames)."""
    frames = [("/u/vllm/lora/worker_manager.py", "_apply_adapters", "self.add_adapter(lora)"),
              ("/u/vllm/lora/worker_manager.py", "add_adapter", "lora = self._load_adapter(lora_request)")]
    assert decide_phase(frames) == "serving"


def test_an_exception_line_glued_inside_a_fence_is_read() -> None:
    """SGLang#2706: "```RuntimeError: The size of tensor a ... ```" on one line; vLLM PR 12304: "` ValueError: There
    is no module or parameter named 'embed_tokens' in LlamaForCausalLM`" (a blank after the backtick), which is the
    weight loader's; a fence with its language tag stays a fence."""
    a = analyze("I got the error:\n\n```RuntimeError: The size of tensor a (256) must match the size of tensor b (2048) "
                "at non-singleton dimension 0```\n")
    assert a.root_cause is not None and a.root_cause.exception_type == "RuntimeError"
    assert "The size of tensor a (256)" in (a.root_cause.message or "")
    a = analyze("error:\n` ValueError: There is no module or parameter named 'embed_tokens' in LlamaForCausalLM`\n")
    assert a.root_cause is not None and a.root_cause.exception_type == "ValueError"
    assert a.root_cause.phase == "weight_loading"
    assert analyze("```python\nprint('x')\n```\n").root_cause is None
