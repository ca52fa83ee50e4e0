from __future__ import annotations

from typing import Any, NamedTuple


class StandardDispatchOutput(NamedTuple):
    hidden_states: Any
    topk_ids: Any
    topk_weights: Any


class StandardDispatcher:
    def __init__(self, moe_ep_size: int, num_local_experts: int) -> None:
        self.moe_ep_size = moe_ep_size
        self.num_local_experts = num_local_experts

    def dispatch(self, hidden_states: Any, topk_output: Any) -> StandardDispatchOutput:
        topk_ids = topk_output.topk_ids
        topk_weights = topk_output.topk_weights
        if self.moe_ep_size > 1:
            topk_ids = topk_ids.view(-1, topk_ids.shape[-1])
        return StandardDispatchOutput(hidden_states, topk_ids, topk_weights)

    def combine(self, hidden_states: Any) -> Any:
        return hidden_states
