"""DeepSeek-V2/V3 architecture (MLA attention + routed MoE), the language model of Kimi K2.x."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from sglang.srt.distributed.parallel_state import tensor_model_parallel_all_reduce
from sglang.srt.layers.moe.fused_moe_triton.layer import FusedMoE
from sglang.srt.layers.moe.topk import TopK
from sglang.srt.model_loader.weight_utils import default_weight_loader
from torch import nn


class LogitsProcessorOutput:
    def __init__(self, next_token_logits: Any) -> None:
        self.next_token_logits = next_token_logits


class DeepseekV2MLP(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int, tp_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.tp_size = tp_size

    def forward(
        self,
        x: Any,
        forward_batch: Any = None,
        should_allreduce_fusion: bool = False,
        use_reduce_scatter: bool = False,
    ) -> Any:
        if self.tp_size > 1 and not should_allreduce_fusion:
            x = tensor_model_parallel_all_reduce(x)
        return x


class DeepseekV2MoE(nn.Module):
    def __init__(self, config: Any, layer_id: int, tp_size: int, ep_size: int) -> None:
        super().__init__()
        self.tp_size = tp_size
        self.layer_id = layer_id
        self.topk = TopK(top_k=config.experts_per_token, layer_id=layer_id)
        self.experts = FusedMoE(
            num_experts=config.num_experts,
            top_k=config.experts_per_token,
            hidden_size=config.hidden_size,
            intermediate_size=config.moe_intermediate_size,
            layer_id=layer_id,
            moe_ep_size=ep_size,
            moe_tp_size=tp_size // max(ep_size, 1),
        )

    def forward(
        self,
        hidden_states: Any,
        forward_batch: Any = None,
        should_allreduce_fusion: bool = False,
        use_reduce_scatter: bool = False,
    ) -> Any:
        return self.forward_normal(hidden_states, should_allreduce_fusion, use_reduce_scatter)

    def forward_normal(
        self,
        hidden_states: Any,
        should_allreduce_fusion: bool = False,
        use_reduce_scatter: bool = False,
    ) -> Any:
        router_logits = torch.empty(
            hidden_states.shape[0], self.experts.num_experts, dtype=torch.float32
        )
        topk_output = self.topk(hidden_states, router_logits)
        final_hidden_states = self.experts(hidden_states, topk_output)
        if self.tp_size > 1 and not should_allreduce_fusion and not use_reduce_scatter:
            final_hidden_states = tensor_model_parallel_all_reduce(final_hidden_states)
        return final_hidden_states


class DeepseekV2AttentionMLA(nn.Module):
    def __init__(self, config: Any, layer_id: int, tp_size: int) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.num_local_heads = max(config.num_heads // tp_size, 1)
        self.kv_lora_rank = config.kv_lora_rank or 512
        self.qk_nope_head_dim = 128
        self.qk_rope_head_dim = config.qk_rope_head_dim or 64
        self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
        self.w_kc = torch.Tensor(
            (self.num_local_heads, self.qk_nope_head_dim, self.kv_lora_rank), torch.bfloat16
        )

    def forward(
        self, positions: Any, hidden_states: Any, forward_batch: Any, zero_allocator: Any = None
    ) -> Any:
        s = self.forward_prepare(
            positions=positions,
            hidden_states=hidden_states,
            forward_batch=forward_batch,
            zero_allocator=zero_allocator,
        )
        return self.forward_core(s)

    def forward_prepare(
        self, positions: Any, hidden_states: Any, forward_batch: Any, zero_allocator: Any = None
    ) -> Any:
        return self.forward_absorb_prepare(positions, hidden_states, forward_batch, zero_allocator)

    def forward_absorb_prepare(
        self, positions: Any, hidden_states: Any, forward_batch: Any, zero_allocator: Any
    ) -> Any:
        q = hidden_states.view(-1, self.num_local_heads, self.qk_head_dim)
        q_nope, q_pe = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_nope_out = torch.bmm(q_nope.transpose(0, 1), self.w_kc)
        q_nope_out = q_nope_out.transpose(0, 1)
        return q_pe, q_nope_out, forward_batch

    def forward_core(self, intermediate_state: Any) -> Any:
        _q_pe, q_nope_out, _forward_batch = intermediate_state
        return torch.empty(q_nope_out.shape[0], self.num_local_heads * 128, dtype=torch.bfloat16)


class DeepseekV2DecoderLayer(nn.Module):
    def __init__(self, config: Any, layer_id: int, tp_size: int, ep_size: int) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.self_attn = DeepseekV2AttentionMLA(config, layer_id, tp_size)
        self.is_layer_sparse = config.is_moe and layer_id >= config.first_k_dense
        self.mlp: nn.Module
        if self.is_layer_sparse:
            self.mlp = DeepseekV2MoE(config, layer_id, tp_size, ep_size)
        else:
            self.mlp = DeepseekV2MLP(config.hidden_size, config.moe_intermediate_size * 9, tp_size)

    def forward(
        self,
        positions: Any,
        hidden_states: Any,
        forward_batch: Any,
        residual: Any,
        zero_allocator: Any = None,
    ) -> tuple[Any, Any]:
        hidden_states = self.self_attn(
            positions=positions,
            hidden_states=hidden_states,
            forward_batch=forward_batch,
            zero_allocator=zero_allocator,
        )
        hidden_states = self.mlp(hidden_states, forward_batch)
        return hidden_states, residual


class DeepseekV2Model(nn.Module):
    def __init__(self, config: Any, tp_size: int, ep_size: int) -> None:
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(
            DeepseekV2DecoderLayer(config, i, tp_size, ep_size) for i in range(config.num_layers)
        )
        self.start_layer = 0
        self.end_layer = config.num_layers

    def forward(
        self,
        input_ids: Any,
        positions: Any,
        forward_batch: Any,
        input_embeds: Any = None,
        pp_proxy_tensors: Any = None,
    ) -> Any:
        num_tokens = forward_batch.num_tokens
        hidden_states = torch.empty(num_tokens, self.config.hidden_size, dtype=torch.bfloat16)
        residual = None
        zero_allocator = None
        for i in range(self.start_layer, self.end_layer):
            layer = self.layers[i]
            hidden_states, residual = layer(
                positions, hidden_states, forward_batch, residual, zero_allocator
            )
        return hidden_states


class DeepseekV2ForCausalLM(nn.Module):
    def __init__(self, config: Any, tp_size: int = 1, ep_size: int = 1) -> None:
        super().__init__()
        self.config = config
        self.tp_size = tp_size
        self.model = DeepseekV2Model(config, tp_size, ep_size)
        self._params = _expected_params(config)

    def forward(
        self,
        input_ids: Any,
        positions: Any,
        forward_batch: Any,
        input_embeds: Any = None,
        pp_proxy_tensors: Any = None,
    ) -> LogitsProcessorOutput:
        hidden_states = self.model(
            input_ids, positions, forward_batch, input_embeds, pp_proxy_tensors
        )
        return LogitsProcessorOutput(
            torch.empty(hidden_states.shape[0], self.config.vocab_size, dtype=torch.float32)
        )

    def named_parameters(self, prefix: str = "") -> Any:
        return iter(self._params.items())

    def load_weights(self, weights: Iterable[tuple[str, Any]], is_nextn: bool = False) -> None:
        params_dict = dict(self.named_parameters())
        loaded_params = set()
        for name, loaded_weight in weights:
            if "rotary_emb.inv_freq" in name:
                continue
            if ".experts." in name and self.config.is_moe:
                expert_id = (
                    int(name.split(".experts.")[1].split(".")[0])
                    if name.split(".experts.")[1][0].isdigit()
                    else 0
                )
                param = params_dict[name]
                layer_id = int(name.split(".")[2])
                self.model.layers[layer_id].mlp.experts.weight_loader(
                    param, loaded_weight, name, shard_id="w13", expert_id=expert_id
                )
            else:
                param = params_dict[name]
                weight_loader = getattr(param, "weight_loader", None) or default_weight_loader
                weight_loader(param, loaded_weight)
            loaded_params.add(name)


class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
    pass


def _expected_params(config: Any) -> dict[str, nn.Parameter]:
    names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    for i in range(config.num_layers):
        p = f"model.layers.{i}"
        names += [f"{p}.self_attn.kv_a_proj_with_mqa.weight", f"{p}.self_attn.o_proj.weight"]
        if config.is_moe and i >= config.first_k_dense:
            names += [f"{p}.mlp.experts.0.w13_weight_packed", f"{p}.mlp.gate.weight"]
        else:
            names += [f"{p}.mlp.gate_up_proj.weight", f"{p}.mlp.down_proj.weight"]
    return {n: nn.Parameter() for n in names}


EntryClass = [DeepseekV2ForCausalLM, DeepseekV3ForCausalLM]
