"""Bytes and FLOPs of one decode step of any model on any GPU of the table, and the bound, in words.

``decode_step(arch, gpu, batch=64, tp=8, context=2000)`` models one step of ``batch`` requests
(each verifying ``tokens_per_request`` tokens: 1, or a speculative tree's size) over ``tp`` GPUs:

- bytes per GPU = resident weights / tp (attention, dense FFN, shared experts, router, LM head,
  sharded by tensor or expert parallelism alike) + the *distinct* routed experts the step's tokens
  select (uniform routing: n(1-(1-k/n)^T) per layer) / tp + the KV cache the batch reads: GQA heads
  are split across ranks (at least one head each), MLA's latent is replicated on every rank unless
  ``dp_attention`` (SGLang's ``--enable-dp-attention``) gives each rank its own requests;
- FLOPs per GPU = (2 x active parameters + attention over the context) x tokens / tp; MLA attention
  counted in its absorbed form (scores against the latent and rope key, values from the latent);
- time at peak bandwidth vs time at peak dense FLOP/s in the weights' compute dtype: the larger is
  the bound (**HBM-bound** or **compute-bound**), and its tokens/s the roofline.

``step.describe()`` says it in words; ``step.against(tok_s, power_w=...)`` places a measured point
under the roof ("HBM-bound at 360 W": a fraction of the roofline, power against the board limit).
Deliberately left out: kernel launch gaps, collectives, prefill interleaving — what makes the
measured point fall short of the roof, which ``workbench.bottleneck`` labels from telemetry.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from workbench.bottleneck import distinct_experts
from workbench.errors import ConfigError
from workbench.gpuspecs import GpuSpec
from workbench.modelarch import ModelArch

LOW_POWER_FRACTION = 0.6  # below this share of the power limit, a busy GPU is not compute-bound


@dataclass(frozen=True)
class DecodeStep:
    """One modelled decode step; byte and FLOP figures are per GPU."""

    model: str
    gpu: str
    tp: int
    batch: int
    context: float
    tokens_per_request: float
    resident_bytes: float
    expert_bytes: float
    experts_per_layer: float
    kv_bytes: float
    flops: float
    hbm_bytes_per_s: float
    peak_flops: float
    compute_dtype: str
    power_limit_w: float

    @property
    def bytes(self) -> float:
        return self.resident_bytes + self.expert_bytes + self.kv_bytes

    @property
    def t_memory_s(self) -> float:
        return self.bytes / self.hbm_bytes_per_s

    @property
    def t_compute_s(self) -> float:
        return self.flops / self.peak_flops

    @property
    def step_s(self) -> float:
        return max(self.t_memory_s, self.t_compute_s)

    @property
    def bound(self) -> str:
        return "HBM-bound" if self.t_memory_s >= self.t_compute_s else "compute-bound"

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def ridge(self) -> float:
        return self.peak_flops / self.hbm_bytes_per_s

    @property
    def roofline_tok_s(self) -> float:
        """Output tokens/s of all requests at the roof (one accepted token per request per step)."""
        return self.batch / self.step_s

    @property
    def per_request_tok_s(self) -> float:
        return 1 / self.step_s

    def describe(self) -> str:
        """The step in words: what it reads and computes, the bound and by how much."""
        ratio = self.t_memory_s / self.t_compute_s if self.bound == "HBM-bound" else self.t_compute_s / self.t_memory_s
        experts = (f", routed experts {self.expert_bytes / 1e9:.2f} GB ({self.experts_per_layer:.0f} distinct per layer)"
                   if self.expert_bytes else "")
        return (f"{self.model} on {self.tp} x {self.gpu}, batch {self.batch}, context {self.context:.0f}: each decode "
                f"step reads {self.bytes / 1e9:.2f} GB per GPU (weights {self.resident_bytes / 1e9:.2f} GB{experts}, "
                f"KV cache {self.kv_bytes / 1e9:.2f} GB) and computes {self.flops / 1e12:.3f} TFLOP per GPU: "
                f"{self.t_memory_s * 1e3:.2f} ms at {self.hbm_bytes_per_s / 1e12:.2f} TB/s against "
                f"{self.t_compute_s * 1e3:.3f} ms at {self.peak_flops / 1e12:.0f} TFLOP/s {self.compute_dtype}. "
                f"{self.bound} by {ratio:.1f}x (intensity {self.intensity:.0f} FLOP/B, ridge {self.ridge:.0f}); "
                f"roofline {self.roofline_tok_s:,.0f} tok/s, {self.per_request_tok_s:,.0f} tok/s per request.")

    def against(self, tok_s: float, *, power_w: float | None = None, accept_len: float = 1.0) -> str:
        """A measured output tok/s (and mean power per GPU) against this step's roof, in words.

        ``accept_len``: output tokens per request per step (speculative decoding), which moves the
        roof up by that factor for the same bytes.
        """
        roof = self.roofline_tok_s * accept_len
        frac = tok_s / roof
        words = (f"measured {tok_s:,.0f} tok/s = {frac:.0%} of the {self.bound} roofline ({roof:,.0f} tok/s"
                 + (f" at {accept_len:.2f} tokens per step" if accept_len != 1 else "") + ")")
        if frac < 1:
            words += f", {1 / frac:.1f}x below it"
        if power_w is not None:
            pf = power_w / self.power_limit_w
            words += f"; {power_w:.0f} W = {pf:.0%} of the {self.power_limit_w:.0f} W limit"
            if self.bound == "HBM-bound" and pf < LOW_POWER_FRACTION:
                words += (f": {self.bound} at {power_w:.0f} W, as memory-bound kernels run (compute-bound ones "
                          "draw near the limit)")
        return words

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(bytes=self.bytes, t_memory_s=self.t_memory_s, t_compute_s=self.t_compute_s, bound=self.bound,
                 intensity=self.intensity, ridge=self.ridge, roofline_tok_s=self.roofline_tok_s,
                 words=self.describe())
        return d


def kv_bytes_per_token_per_gpu(arch: ModelArch, tp: int, *, dp_attention: bool = False) -> float:
    """KV bytes per context token that one GPU reads (all layers)."""
    if arch.attention == "mla":
        return arch.kv_bytes_per_token / tp if dp_attention else arch.kv_bytes_per_token
    return arch.kv_bytes_per_token * max(1 / tp, 1 / arch.kv_heads)


def attention_flops_per_token(arch: ModelArch, context: float) -> float:
    """FLOPs of attention for one new token over ``context`` cached tokens, all layers (all heads)."""
    if arch.attention == "mla":
        r, rope = arch.mla["kv_lora_rank"], arch.mla["qk_rope_head_dim"]
        return 2 * arch.heads * (r + rope + r) * context * arch.layers
    return 4 * arch.heads * arch.head_dim * context * arch.layers


def decode_step(arch: ModelArch, gpu: GpuSpec, *, batch: int, tp: int = 1, context: float = 0.0,
                tokens_per_request: float = 1.0, dp_attention: bool = False) -> DecodeStep:
    """Model one decode step (see the module's docstring)."""
    if batch < 1 or tp < 1 or context < 0 or tokens_per_request < 1:
        raise ConfigError(f"need batch >= 1, tp >= 1, context >= 0, tokens_per_request >= 1; got {batch}, {tp}, "
                          f"{context}, {tokens_per_request}")
    weights_gb = arch.weight_bytes / tp / 1e9
    if weights_gb > gpu.memory_gb:
        raise ConfigError(f"{arch.name}'s weights need {weights_gb:.0f} GB per GPU at TP{tp}, more than a "
                          f"{gpu.name}'s {gpu.memory_gb:.0f} GB: raise the TP size")
    tokens = batch * tokens_per_request
    per_layer = distinct_experts(arch.n_experts, arch.experts_per_token, tokens)
    expert_bytes = per_layer * arch.expert_params * arch.precision.of("experts") / tp if arch.n_experts else 0.0
    kv = kv_bytes_per_token_per_gpu(arch, tp, dp_attention=dp_attention) * context * batch
    flops = (2 * arch.active_params + attention_flops_per_token(arch, context)) * tokens / tp
    dtype = gpu.compute_dtype(arch.precision.compute_dtype)
    return DecodeStep(arch.name, gpu.name, tp, batch, context, tokens_per_request, arch.resident_bytes / tp,
                      expert_bytes, per_layer, kv, flops, gpu.hbm_bytes_per_s, gpu.flops(dtype), dtype,
                      gpu.power_limit_w)


TP_FLAGS = ("--tp-size", "--tp", "--tensor-parallel-size", "-tp")
DRAFT_FLAGS = ("--speculative-num-draft-tokens",)


def _flag_int(argv: list[str], flags: tuple[str, ...]) -> int | None:
    for i, a in enumerate(argv):
        for f in flags:
            value = None
            if a == f and i + 1 < len(argv):
                value = argv[i + 1]
            elif a.startswith(f + "="):
                value = a.split("=", 1)[1]
            if value is not None:
                try:
                    return int(value)
                except ValueError:
                    raise ConfigError(f"{f} {value!r} is not an integer") from None
    return None


def served_shape(argv: list[str]) -> tuple[int, int | None]:
    """(tensor-parallel size, draft tokens verified per step or None) of a server command line."""
    return _flag_int(argv, TP_FLAGS) or 1, _flag_int(argv, DRAFT_FLAGS)


def against_results(results: Any, arch: ModelArch, gpu: GpuSpec, tp: int, *,
                    tokens_per_request: float | None = None) -> list[dict[str, Any]]:
    """Each sweep row against its decode step's roof: batch = the point's concurrency (achieved, for
    rate points), context = mean prompt tokens + half the mean output, accepted tokens per step =
    ``tokens_per_chunk``; power from joined telemetry (``gpu_power_w``) when present."""
    out = []
    for _, r in results.iterrows():
        tok_s, n = _num(r.get("output_throughput")), _num(r.get("completed"))
        if not tok_s or not n:
            continue
        open_loop = _num(r.get("rate")) is not None
        batch = max(1, round((_num(r.get("concurrency_achieved")) if open_loop else _num(r.get("concurrency"))) or 1))
        context = (_num(r.get("total_input_tokens")) or 0) / n + (_num(r.get("total_output_tokens")) or 0) / n / 2
        accept = _num(r.get("tokens_per_chunk")) or 1.0
        step = decode_step(arch, gpu, batch=batch, tp=tp, context=context,
                           tokens_per_request=max(tokens_per_request or accept, 1.0))
        roof = step.roofline_tok_s * accept
        out.append({"concurrency": r.get("concurrency"), "rate": r.get("rate"), "repeat": r.get("repeat"),
                    "batch": batch, "bound": step.bound, "roofline_tok_s": roof, "fraction_of_roof": tok_s / roof,
                    "bytes_per_gpu": step.bytes,
                    "words": step.against(tok_s, power_w=_num(r.get("gpu_power_w")), accept_len=accept)})
    return out


def _num(x: Any) -> float | None:
    """``x`` as a float, or None when missing or NaN."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v
