"""Fused MoE layer (expert weights, EP dispatch, grouped GEMM)."""

from __future__ import annotations

from typing import Any

import torch
from sglang.srt.layers.moe.token_dispatcher.standard import StandardDispatcher
from torch import nn


class FusedMoE(nn.Module):
    def __init__(
        self,
        num_experts: int,
        top_k: int,
        hidden_size: int,
        intermediate_size: int,
        layer_id: int,
        moe_ep_size: int = 1,
        moe_tp_size: int = 1,
    ) -> None:
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.hidden_size = hidden_size
        self.layer_id = layer_id
        self.moe_ep_size = moe_ep_size
        self.num_local_experts = num_experts // max(moe_ep_size, 1)
        self.intermediate_size_per_partition = intermediate_size // max(moe_tp_size, 1)
        self.dispatcher = StandardDispatcher(moe_ep_size, self.num_local_experts)

    def weight_loader(
        self, param: Any, loaded_weight: Any, weight_name: str, shard_id: str, expert_id: int
    ) -> None:
        param.data = torch.empty(
            (
                self.num_local_experts,
                2 * self.intermediate_size_per_partition,
                self.hidden_size // 2,
            ),
            dtype=torch.uint8,
        )

    def forward(self, hidden_states: Any, topk_output: Any) -> Any:
        dispatch_output = self.dispatcher.dispatch(
            hidden_states=hidden_states, topk_output=topk_output
        )
        intermediate_cache = torch.empty(
            (
                dispatch_output.hidden_states.shape[0],
                self.top_k,
                2 * self.intermediate_size_per_partition,
            ),
            dtype=torch.bfloat16,
        )
        del intermediate_cache
        return self.dispatcher.combine(hidden_states=dispatch_output.hidden_states)
