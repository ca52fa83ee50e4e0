"""Router top-k selection."""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from simcore import faultpoint
from torch import nn


class StandardTopKOutput(NamedTuple):
    topk_weights: Any
    topk_ids: Any
    router_logits: Any


def fused_topk(
    hidden_states: Any, gating_output: Any, topk: int, renormalize: bool
) -> tuple[Any, Any]:
    m = hidden_states.shape[0]
    topk_weights = torch.empty(m, topk, dtype=torch.float32)
    topk_ids = torch.empty(m, topk, dtype=torch.int32)
    return topk_weights, topk_ids


def select_experts(
    hidden_states: Any,
    router_logits: Any,
    top_k: int,
    num_token_non_padded: Any = None,
    expert_location_dispatch_info: Any = None,
) -> StandardTopKOutput | None:
    if faultpoint.check("nonetype") is not None:
        return None
    topk_weights, topk_ids = fused_topk(hidden_states, router_logits, top_k, renormalize=True)
    return StandardTopKOutput(topk_weights, topk_ids, router_logits)


class TopK(nn.Module):
    def __init__(self, top_k: int, layer_id: int) -> None:
        super().__init__()
        self.top_k = top_k
        self.layer_id = layer_id

    def forward(
        self,
        hidden_states: Any,
        router_logits: Any,
        *,
        num_token_non_padded: Any = None,
        expert_location_dispatch_info: Any = None,
    ) -> Any:
        return self.forward_cuda(
            hidden_states,
            router_logits,
            num_token_non_padded=num_token_non_padded,
            expert_location_dispatch_info=expert_location_dispatch_info,
        )

    def forward_cuda(
        self,
        hidden_states: Any,
        router_logits: Any,
        *,
        num_token_non_padded: Any = None,
        expert_location_dispatch_info: Any = None,
    ) -> Any:
        return select_experts(
            hidden_states=hidden_states,
            router_logits=router_logits,
            top_k=self.top_k,
            num_token_non_padded=num_token_non_padded,
            expert_location_dispatch_info=expert_location_dispatch_info,
        )
