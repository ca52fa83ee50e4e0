"""Roofline arithmetic for decode: what bounds a measured tokens/s, with the evidence.

For one operating point (measured output tok/s at a batch of concurrent requests) and a model
and GPU description, the decode step is modelled as: read every dense weight once, read each
*distinct* routed expert the step's tokens select once (uniform routing: n(1-(1-k/n)^T)
experts per layer for T tokens), read each request's KV cache; do 2 FLOPs per active parameter
per token. Then:

- arithmetic intensity I = FLOPs / bytes per step; ridge = peak FLOP/s / peak bytes/s;
- achieved bandwidth = bytes per step x steps/s, as a fraction of the peak (all GPUs);
- the bandwidth roofline = the tok/s the step would reach at peak bandwidth, and headroom =
  roofline / measured.

Label (in this order): **launch-bound** when the GPUs were idle a large share of the time
(NVML ``utilization.gpu`` < ``IDLE_UTIL_PCT``: no kernel running, so the host side is the
limit); **communication-bound** when a profile says collectives take >= half the step
(``comm_fraction``); **compute-bound** when I >= ridge; else **memory-bound** (the bandwidth
roof is the binding one). Power and utilization only corroborate: ``utilization.gpu`` means
"a kernel was running", not a bandwidth fraction, and 100 % at low power fits memory-bound
kernels as well as spinning collectives.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from workbench.gpuspecs import GPUS, GpuSpec

__all__ = ["COMM_FRACTION", "FAR_FROM_ROOF", "GPUS", "IDLE_UTIL_PCT", "KIMI_K26", "GpuSpec", "ModelSpec", "Verdict",
           "analyze", "analyze_results", "distinct_experts"]

IDLE_UTIL_PCT = 60.0
COMM_FRACTION = 0.5
FAR_FROM_ROOF = 0.5  # below this fraction of the roof, say what else the step is spending time on


@dataclass(frozen=True)
class ModelSpec:
    """What a decode step reads: dense weights, routed experts (MoE), KV cache per token of context."""

    name: str
    dense_params: float  # read every step: attention, shared experts, dense FFNs, LM head
    dense_bytes_per_param: float
    expert_params: float = 0.0  # one routed expert, summed over all MoE layers
    n_experts: int = 0  # routed experts per layer
    experts_per_token: int = 0
    expert_bytes_per_param: float = 0.0
    kv_bytes_per_token: float = 0.0  # all layers
    compute_dtype: str = "bf16"  # the tensor-core dtype the matmuls run in (W4A16 kernels: bf16)

    @property
    def active_params(self) -> float:
        return self.dense_params + self.experts_per_token * self.expert_params

    @property
    def total_params(self) -> float:
        return self.dense_params + self.n_experts * self.expert_params


# Kimi K2.6 (Kimi K2 architecture; config.json: hidden 7168, 61 layers, 1 dense + 60 MoE, 384 routed
# experts of intermediate 2048, top-8, 1 shared expert, MLA kv_lora_rank 512 + rope 64, vocab 163840).
# One expert = 3 x 7168 x 2048 = 44.0 M params per layer; routed experts in INT4 (QAT, group 32 with
# a bf16 scale: 4.5 bits), the rest bf16. Active = 10.4 B dense + 8 x 2.64 B = 31.5 B; total 1.03 T.
KIMI_K26 = ModelSpec(
    "Kimi K2.6 (INT4 experts)",
    dense_params=6.17e9 + 2.64e9 + 0.40e9 + 1.17e9,  # MLA attention + shared experts + dense FFN + LM head
    dense_bytes_per_param=2.0,
    expert_params=3 * 7168 * 2048 * 60,
    n_experts=384, experts_per_token=8, expert_bytes_per_param=4.5 / 8,
    kv_bytes_per_token=(512 + 64) * 2 * 61,
)


def distinct_experts(n: int, k: int, tokens: float) -> float:
    """Expected distinct experts per layer that ``tokens`` tokens select, each picking ``k`` of ``n``."""
    return n * (1 - (1 - k / n) ** tokens) if n else 0.0


@dataclass
class Verdict:
    label: str
    tok_s: float
    steps_per_s: float
    bytes_per_step: float
    flops_per_step: float
    intensity: float
    ridge: float
    bw_fraction: float
    compute_fraction: float
    roofline_tok_s: float
    headroom: float
    evidence: list[str] = field(default_factory=list)

    @property
    def summary(self) -> str:
        """One line: the label and how far from the roofline, e.g. for a notebook cell."""
        return (f"{self.label} at {self.tok_s:.0f} tok/s: {self.bw_fraction:.1%} of peak HBM bandwidth, "
                f"{self.headroom:.1f}x below the roofline ({self.roofline_tok_s:.0f} tok/s)")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["summary"] = self.summary
        d["evidence"] = " | ".join(self.evidence)
        return d


def analyze(tok_s: float, batch: int, model: ModelSpec, gpu: GpuSpec, n_gpus: int, *,
            accept_len: float = 1.0, tokens_per_step: float | None = None, context_tokens: float = 0.0,
            util_pct: float | None = None, power_w: float | None = None, comm_fraction: float | None = None) -> Verdict:
    """Classify one decode operating point; ``tok_s`` is total output tok/s over ``batch`` requests.

    ``accept_len``: output tokens per request per step (1 without speculation). ``tokens_per_step``:
    tokens the target model runs per step (default batch x accept_len; a draft tree verifies more).
    ``util_pct`` / ``power_w``: per-GPU means over the window (corroboration only).
    """
    out_per_step = batch * accept_len
    verified = tokens_per_step if tokens_per_step is not None else out_per_step
    steps = tok_s / out_per_step
    experts = distinct_experts(model.n_experts, model.experts_per_token, verified)
    nbytes = (model.dense_params * model.dense_bytes_per_param
              + experts * model.expert_params * model.expert_bytes_per_param
              + model.kv_bytes_per_token * context_tokens * batch)
    flops = 2 * model.active_params * verified
    peak_bw, peak_flops = gpu.hbm_bytes_per_s * n_gpus, gpu.flops(model.compute_dtype) * n_gpus
    bw_frac, c_frac = nbytes * steps / peak_bw, flops * steps / peak_flops
    intensity, ridge = flops / nbytes, peak_flops / peak_bw
    roof = min(peak_bw / nbytes, peak_flops / flops) * out_per_step
    ev = [f"arithmetic intensity {intensity:.1f} FLOP/B vs ridge {ridge:.0f} FLOP/B ({gpu.compute_dtype(model.compute_dtype)})",
          f"{nbytes / 1e9:.1f} GB read per step ({experts:.0f} experts/layer) x {steps:.1f} steps/s = "
          f"{bw_frac:.1%} of {n_gpus} x {gpu.hbm_bytes_per_s / 1e12:.2f} TB/s",
          f"compute {c_frac:.2%} of peak"]
    if util_pct is not None and util_pct < IDLE_UTIL_PCT:
        label = "launch-bound"
        ev.insert(0, f"GPUs busy only {util_pct:.0f}% of the time (< {IDLE_UTIL_PCT:.0f}%): the host side leaves them idle")
    elif comm_fraction is not None and comm_fraction >= COMM_FRACTION:
        label = "communication-bound"
        ev.insert(0, f"collectives take {comm_fraction:.0%} of the step (profile)")
    elif intensity >= ridge:
        label = "compute-bound"
    else:
        label = "memory-bound"
    if label == "memory-bound" and bw_frac < FAR_FROM_ROOF:
        ev.append(f"{roof / tok_s:.1f}x below the bandwidth roofline ({roof:.0f} tok/s): the rest of each step is "
                  "overhead (small kernels, collectives, sync); DCGM DRAM_ACTIVE / NVLink bytes would tell which")
    if power_w is not None:
        pf = power_w / gpu.power_limit_w
        busy = f" at {util_pct:.0f}% util" if util_pct is not None else ""
        if label == "memory-bound" and pf < 0.6:
            ev.append(f"power {power_w:.0f} W = {pf:.0%} of {gpu.power_limit_w:.0f} W{busy}: consistent with memory-bound "
                      "kernels (compute-bound ones run near the power limit)")
        else:
            ev.append(f"power {power_w:.0f} W = {pf:.0%} of {gpu.power_limit_w:.0f} W{busy}")
    return Verdict(label, tok_s, steps, nbytes, flops, intensity, ridge, bw_frac, c_frac, roof, roof / tok_s, ev)


def analyze_results(results: pd.DataFrame, model: ModelSpec, gpu: GpuSpec, n_gpus: int, *,
                    accept_len: float | None = None, tree_tokens: float | None = None) -> pd.DataFrame:
    """``analyze`` every row of a sweep's results (joined with telemetry when available).

    Accept length per row: ``accept_len``, else the server's ``spec_accept_length``, else the
    client's ``tokens_per_chunk``. ``tree_tokens``: tokens verified per request per step.
    """
    rows = []
    for _, r in results.iterrows():
        acc = accept_len or r.get("spec_accept_length") or r.get("tokens_per_chunk") or 1.0
        batch = int(r["concurrency"])
        v = analyze(float(r["output_throughput"]), batch, model, gpu, n_gpus, accept_len=float(acc),
                    tokens_per_step=tree_tokens * batch if tree_tokens else None,
                    context_tokens=float(r.get("input_len", 0) + r.get("output_len", 0) / 2),
                    util_pct=_num(r.get("gpu_util_pct")), power_w=_num(r.get("gpu_power_w")))
        rows.append(v.to_dict())
    return pd.concat([results.reset_index(drop=True), pd.DataFrame(rows).add_prefix("roof_")], axis=1)


def _num(x: Any) -> float | None:
    return None if x is None or pd.isna(x) else float(x)
