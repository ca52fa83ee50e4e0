"""Performance model: step times of a TP/EP-sharded MoE decoder on the simulated GPUs.

A decode (or verify) step costs
    t_fixed + layers * (t_layer + 2 * t_allreduce(msg))      latency floor (CUDA graphs or not)
  + bytes_read / (hbm_bandwidth * bw_efficiency)             HBM traffic: dense + touched experts + KV
  + flops / (peak_flops * mfu)                               tensor-core work
Experts touched by N tokens with top-k routing over E experts: E * (1 - (1 - k/E)^N).
Speculative decoding adds a draft pass and verifies ``num_draft_tokens`` per request; tokens
emitted per request-step follow a truncated geometric law whose mean is the accept length.
Defaults are calibrated so that Kimi K2.6 INT4 on 8x B300 gives the seeds' figures (README).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .hostcfg import GpuHost


@dataclass(frozen=True)
class ModelSpec:
    architecture: str = "KimiK25ForConditionalGeneration"
    num_layers: int = 61
    hidden_size: int = 7168
    num_experts: int = 384
    experts_per_token: int = 8
    moe_intermediate_size: int = 2048
    first_k_dense: int = 1
    vocab_size: int = 163840
    kv_lora_rank: int = 512
    qk_rope_head_dim: int = 64
    num_heads: int = 64
    context_length: int = 262144
    expert_bits: int = 4
    model_type: str = "kimi_k25"

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> ModelSpec:
        text = cfg.get("text_config", cfg)
        arch = (cfg.get("architectures") or [cls.architecture])[0]
        qcfg = text.get("quantization_config") or cfg.get("quantization_config") or {}
        bits = 16
        if qcfg:
            groups = qcfg.get("config_groups") or {}
            for g in groups.values():
                nb = (g.get("weights") or {}).get("num_bits")
                if nb:
                    bits = int(nb)
            if bits == 16 and qcfg.get("quant_method") in ("fp8", "modelopt"):
                bits = 8
        d = cls()
        return cls(
            architecture=arch,
            num_layers=int(text.get("num_hidden_layers", d.num_layers)),
            hidden_size=int(text.get("hidden_size", d.hidden_size)),
            num_experts=int(text.get("n_routed_experts", 0) or 0),
            experts_per_token=int(text.get("num_experts_per_tok", 0) or 0),
            moe_intermediate_size=int(text.get("moe_intermediate_size", 0) or 0),
            first_k_dense=int(text.get("first_k_dense_replace", 0) or 0),
            vocab_size=int(text.get("vocab_size", d.vocab_size)),
            kv_lora_rank=int(text.get("kv_lora_rank", 0) or 0),
            qk_rope_head_dim=int(text.get("qk_rope_head_dim", 0) or 0),
            num_heads=int(text.get("num_attention_heads", d.num_heads)),
            context_length=int(text.get("max_position_embeddings", d.context_length)),
            expert_bits=bits,
            model_type=str(cfg.get("model_type", text.get("model_type", ""))),
        )

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def dense_params(self) -> float:
        """Attention, shared experts, dense MLPs, embeddings and lm_head (BF16)."""
        h = self.hidden_size
        attn = 4.0 * h * h * 0.49  # MLA projections (q_a/q_b/kv_a/kv_b/o), ~0.49 of 4h^2 for K2
        shared = 3.0 * h * max(self.moe_intermediate_size, 1) if self.is_moe else 0.0
        dense_mlp = 3.0 * h * (9 * max(self.moe_intermediate_size, h // 4))
        return (
            self.num_layers * (attn + shared)
            + self.first_k_dense * dense_mlp
            + 2.0 * self.vocab_size * h
        )

    @property
    def expert_params(self) -> float:
        if not self.is_moe:
            return 0.0
        moe_layers = self.num_layers - self.first_k_dense
        return moe_layers * self.num_experts * 3.0 * self.hidden_size * self.moe_intermediate_size

    @property
    def kv_bytes_per_token(self) -> int:
        """MLA latent cache (BF16), replicated on every TP rank."""
        width = (self.kv_lora_rank + self.qk_rope_head_dim) or (2 * self.hidden_size // 8)
        return self.num_layers * width * 2

    def weight_bytes_per_gpu(self, tp: int) -> float:
        expert_bytes = self.expert_params * (self.expert_bits / 8.0) * 1.03  # + group scales
        return (2.0 * self.dense_params + expert_bytes) / tp


@dataclass(frozen=True)
class Tuning:
    """Calibration constants (see README, 'Performance model')."""

    t_fixed_ms: float = 0.42
    t_layer_us: float = 70.10
    t_layer_eager_us: float = 135.0
    allreduce_latency_us: float = 14.0
    allreduce_bus_gbps: float = 450.0
    nvls_latency_factor: float = 0.90
    nvls_bw_factor: float = 1.15
    fusion_layer_factor: float = 0.97
    bw_efficiency: float = 0.50
    peak_tflops: float = 2250.0
    mfu: float = 0.1638
    draft_fixed_ms: float = 0.812
    draft_per_token_us: float = 9.0
    spec_overhead_ms: float = 0.25
    ep_a2a_factor: float = 1.6
    prefill_mfu: float = 0.45
    jitter: float = 0.012


SPEC_ACCEPT = {
    # algorithm: per-position acceptance probability of a draft token
    "EAGLE": 0.70,
    "NEXTN": 0.70,
    "EAGLE3": 0.76,
    "STANDALONE": 0.62,
    "NGRAM": 0.38,
    "DFLASH": 0.715,
    "DDTREE": 0.7415,
}
SPEC_DEFAULT_DRAFT_TOKENS = {
    "EAGLE": 4,
    "NEXTN": 4,
    "EAGLE3": 4,
    "STANDALONE": 4,
    "NGRAM": 8,
    "DFLASH": 16,
    "DDTREE": 16,
}


@dataclass(frozen=True)
class Deployment:
    tp: int = 8
    ep: int = 1
    dp: int = 1
    nvls: bool = False
    allreduce_fusion: bool = False
    cuda_graph: bool = True
    cuda_graph_max_bs: int = 256
    spec_algorithm: str | None = None
    spec_num_draft_tokens: int = 0
    spec_num_steps: int = 0


def expected_accept_length(algorithm: str, num_draft_tokens: int, num_steps: int = 0) -> float:
    """Mean tokens emitted per verify step (bonus token included)."""
    a = SPEC_ACCEPT.get(algorithm.upper(), 0.6)
    depth = num_draft_tokens if algorithm.upper() in ("DFLASH", "DDTREE", "NGRAM") else num_steps
    depth = max(1, depth or num_draft_tokens or 1)
    return sum(a**i for i in range(depth + 1))


class PerfModel:
    """Step-time calculator for one deployment on one host."""

    def __init__(
        self, model: ModelSpec, host: GpuHost, dep: Deployment, tuning: Tuning | None = None
    ):
        self.model = model
        self.host = host
        self.dep = dep
        self.t = tuning or Tuning()
        tp = max(dep.tp, 1)
        self.dense_bytes = 2.0 * model.dense_params / tp
        bits = model.expert_bits / 8.0 * 1.03
        self.expert_bytes = model.expert_params * bits / tp
        self.bw = host.hbm_bandwidth_gbps * 1e9 * self.t.bw_efficiency
        self.active_params_per_token = (
            model.dense_params
            + (model.expert_params / max(model.num_experts, 1)) * model.experts_per_token
        ) / tp
        if dep.spec_algorithm:
            self.accept_length = expected_accept_length(
                dep.spec_algorithm, dep.spec_num_draft_tokens, dep.spec_num_steps
            )
            self.accept_p = SPEC_ACCEPT.get(dep.spec_algorithm.upper(), 0.6)
        else:
            self.accept_length = 1.0
            self.accept_p = 0.0

    # -- pieces -------------------------------------------------------------------------------
    def touched_fraction(self, tokens: int) -> float:
        m = self.model
        if not m.is_moe:
            return 1.0
        p = m.experts_per_token / m.num_experts
        frac = 1.0 - (1.0 - p) ** max(tokens, 1)
        if self.dep.ep > 1:
            # the slowest EP rank reads its local experts; imbalance at small token counts
            frac = min(1.0, frac * (1.0 + 1.5 / math.sqrt(max(tokens, 1))))
        return frac

    def allreduce_s(self, tokens: int) -> float:
        t = self.t
        if self.dep.tp <= 1:
            return 0.0
        lat = t.allreduce_latency_us * 1e-6
        bw = t.allreduce_bus_gbps * 1e9
        if self.dep.nvls:
            lat *= t.nvls_latency_factor
            bw *= t.nvls_bw_factor
        n = self.dep.tp
        msg = tokens * self.model.hidden_size * 2.0
        one = lat + 2.0 * (n - 1) / n * msg / bw
        if self.dep.ep > 1:
            one *= t.ep_a2a_factor
        return one

    def forward_s(self, tokens: int, kv_tokens: int, graph: bool) -> float:
        """Target-model forward over ``tokens`` new tokens reading ``kv_tokens`` cached tokens."""
        t, m = self.t, self.model
        layer = (t.t_layer_us if graph else t.t_layer_eager_us) * 1e-6
        if self.dep.allreduce_fusion:
            layer *= t.fusion_layer_factor
        latency = t.t_fixed_ms * 1e-3 + m.num_layers * (layer + 2.0 * self.allreduce_s(tokens))
        bytes_read = (
            self.dense_bytes
            + self.expert_bytes * self.touched_fraction(tokens)
            + m.kv_bytes_per_token * kv_tokens
        )
        flops = 2.0 * self.active_params_per_token * tokens
        return latency + bytes_read / self.bw + flops / (t.peak_tflops * 1e12 * t.mfu)

    # -- public -------------------------------------------------------------------------------
    def uses_graph(self, batch_size: int) -> bool:
        return self.dep.cuda_graph and batch_size <= self.dep.cuda_graph_max_bs

    def decode_step_s(self, batch_size: int, kv_tokens: int) -> float:
        """One decode step (speculative: draft + verify) for ``batch_size`` running requests."""
        graph = self.uses_graph(batch_size)
        if not self.dep.spec_algorithm:
            return self.forward_s(batch_size, kv_tokens, graph)
        n = max(self.dep.spec_num_draft_tokens, 1)
        t = self.t
        draft = t.draft_fixed_ms * 1e-3 + batch_size * n * t.draft_per_token_us * 1e-6
        verify = self.forward_s(batch_size * n, kv_tokens, graph)
        return draft + verify + t.spec_overhead_ms * 1e-3

    def prefill_s(self, new_tokens: int, kv_tokens: int = 0) -> float:
        t = self.t
        flops = 2.0 * self.active_params_per_token * new_tokens
        base = self.forward_s(new_tokens, kv_tokens, graph=False)
        compute_extra = flops / (t.peak_tflops * 1e12) * (1.0 / t.prefill_mfu - 1.0 / t.mfu)
        return base + max(compute_extra, 0.0)

    def sample_accepted(self, rand: float, p_scale: float = 1.0) -> int:
        """Tokens emitted by one request in one verify step (>= 1), from a uniform ``rand``."""
        if not self.dep.spec_algorithm:
            return 1
        p = min(0.97, self.accept_p * p_scale)
        n = max(self.dep.spec_num_draft_tokens, 1)
        # inverse CDF of a truncated geometric: k extra tokens with prob p^k (1-p)
        if rand <= 0.0:
            return n + 1
        k = int(math.log(rand) / math.log(p)) if p > 0 else 0
        return 1 + min(k, n)

    def throughput(self, concurrency: int, ctx_tokens: int = 1500) -> float:
        """Steady-state output tokens/s at a fixed concurrency (mean accept length)."""
        step = self.decode_step_s(concurrency, concurrency * ctx_tokens)
        return concurrency * self.accept_length / step
