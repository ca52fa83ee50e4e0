"""A served model's architecture from its Hugging Face ``config.json``: what a decode step reads.

``parse_config(cfg)`` understands the families people serve with SGLang and vLLM — dense
(Llama, Qwen2/2.5/3, Mistral), MoE (Mixtral's ``num_local_experts``, Qwen's ``num_experts`` with
``moe_intermediate_size`` and shared experts, DeepSeek's ``n_routed_experts`` /
``n_shared_experts`` / ``first_k_dense_replace``) and MLA attention (``kv_lora_rank``,
``q_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``); a multimodal
wrapper's ``text_config`` is read in its place. Weights' bytes per parameter come from
``quantization_config`` (``fp8`` blocks, ``compressed-tensors`` groups with their ``ignore``
list, AWQ/GPTQ, ``mxfp4``, ModelOpt FP8/NVFP4) or ``torch_dtype``; the tensor-core dtype the
matmuls run in from the activations' format (W4A16 kernels compute in BF16).

Parameters are counted per component (attention, dense FFN, shared and routed experts, router,
LM head) so a step's bytes can be split by what stays resident, what the routing selects, and the
KV cache. ``arch.to_model_spec()`` gives the ``bottleneck.ModelSpec`` of the measured-point
analysis; ``workbench.roofline`` turns an architecture into bytes and FLOPs per decode step.

``read_served_config(host, argv)`` finds the model of a server command line (``--model-path``,
``--model``, ``vllm serve MODEL``) and reads its ``config.json`` on the host (a directory, or a
Hugging Face id in the host's hub cache).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from workbench.bottleneck import ModelSpec
from workbench.errors import ConfigError, HostError

DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "half": 2.0, "float32": 4.0, "float": 4.0, "float8_e4m3fn": 1.0}
# component -> a representative module name, matched against quantization "ignore" lists
MODULES = {
    "attention": "model.layers.1.self_attn.q_proj",
    "dense_ffn": "model.layers.0.mlp.gate_proj",
    "shared_experts": "model.layers.1.mlp.shared_experts.gate_proj",
    "experts": "model.layers.1.mlp.experts.0.gate_proj",
    "router": "model.layers.1.mlp.gate",
    "lm_head": "lm_head",
}


@dataclass(frozen=True)
class Precision:
    """Bytes per parameter of each component, and the dtype the matmuls run in."""

    bytes_per_param: dict[str, float]
    compute_dtype: str
    method: str  # "none" (torch_dtype), "fp8", "compressed-tensors", ...

    def of(self, component: str) -> float:
        return self.bytes_per_param[component]


@dataclass(frozen=True)
class ModelArch:
    """One model's shape, parameter counts by component (all layers), precision and KV cache."""

    name: str
    model_type: str
    layers: int
    hidden: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    attention: str  # "gqa" or "mla"
    params: dict[str, float]  # attention, dense_ffn, shared_experts, experts (all routed), router, lm_head, embedding
    n_experts: int
    experts_per_token: int
    moe_layers: int
    precision: Precision
    kv_bytes_per_token: float  # all layers, at the KV dtype
    kv_dtype_bytes: float
    mla: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def expert_params(self) -> float:
        """One routed expert, summed over the MoE layers."""
        return self.params["experts"] / self.n_experts if self.n_experts else 0.0

    @property
    def resident_params(self) -> float:
        """Read by every decode step whatever the routing: all but the routed experts and the embedding."""
        return sum(v for k, v in self.params.items() if k not in ("experts", "embedding"))

    @property
    def active_params(self) -> float:
        """Parameters one token multiplies through (the embedding is a lookup)."""
        return self.resident_params + self.experts_per_token * self.expert_params

    @property
    def total_params(self) -> float:
        return sum(self.params.values())

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights at their stored precision (the embedding at the dense dtype)."""
        return sum(v * self._bytes(k) for k, v in self.params.items())

    def _bytes(self, component: str) -> float:
        return self.precision.of("lm_head" if component == "embedding" else component)

    @property
    def resident_bytes(self) -> float:
        return sum(v * self._bytes(k) for k, v in self.params.items() if k not in ("experts", "embedding"))

    def to_model_spec(self) -> ModelSpec:
        """The ``bottleneck.ModelSpec`` of this model (resident weights at their mean bytes/param)."""
        return ModelSpec(
            self.name, dense_params=self.resident_params,
            dense_bytes_per_param=self.resident_bytes / self.resident_params,
            expert_params=self.expert_params, n_experts=self.n_experts, experts_per_token=self.experts_per_token,
            expert_bytes_per_param=self.precision.of("experts") if self.n_experts else 0.0,
            kv_bytes_per_token=self.kv_bytes_per_token, compute_dtype=self.precision.compute_dtype)


def _int(cfg: dict[str, Any], *keys: str, default: int | None = None) -> int:
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    if default is None:
        raise ConfigError(f"config.json has none of {', '.join(keys)}: not a decoder config this roofline knows")
    return default


def text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The language model's config: ``text_config`` of a multimodal wrapper, else ``cfg`` itself
    (a wrapper's ``quantization_config`` / ``torch_dtype`` apply when the text part has none)."""
    inner = cfg.get("text_config") or cfg.get("language_config") or cfg.get("llm_config")
    if not isinstance(inner, dict):
        return cfg
    out = dict(inner)
    for k in ("quantization_config", "torch_dtype", "dtype"):
        if k not in out and k in cfg:
            out[k] = cfg[k]
    return out


def _ignored(name: str, ignore: Sequence[str]) -> bool:
    for pat in ignore:
        if pat.startswith("re:"):
            if re.match(pat[3:], name):
                return True
        elif name == pat or name.endswith("." + pat) or pat == name.rsplit(".", 1)[-1]:
            return True
    return False


def precision_of(cfg: dict[str, Any], kv_dtype: str | None = None) -> tuple[Precision, list[str]]:
    """Bytes per parameter of each component and the compute dtype, with notes on assumptions."""
    base = DTYPE_BYTES.get(str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"), 2.0)
    q = cfg.get("quantization_config")
    notes: list[str] = []
    per = dict.fromkeys(MODULES, base)
    compute = "bf16"
    if not isinstance(q, dict):
        return Precision(per, compute, "none"), notes
    method = str(q.get("quant_method", "")).lower()
    quantized = {c: not _ignored(m, [str(x) for x in q.get("ignore") or q.get("modules_to_not_convert") or []])
                 for c, m in MODULES.items()}
    quantized["router"] = False  # routers stay in high precision in every scheme here
    if method not in ("compressed-tensors", "modelopt"):  # fp8 blocks, AWQ, GPTQ keep the LM head as is
        quantized["lm_head"] = False
    if method == "fp8":  # DeepSeek / Kimi K2 block FP8: e4m3 weights, one fp32 scale per block
        block = q.get("weight_block_size") or [128, 128]
        bits = 8 + 32 / (int(block[0]) * int(block[1]))
        compute = "fp8"
    elif method == "compressed-tensors":
        groups = list((q.get("config_groups") or {}).values())
        w = (groups[0].get("weights") or {}) if groups else {}
        nbits, gsize = int(w.get("num_bits", 8)), w.get("group_size")
        bits = nbits + (16 / int(gsize) if gsize else 0.0)
        acts = (groups[0].get("input_activations") or {}) if groups else {}
        compute = "fp8" if acts and int(acts.get("num_bits", 16)) == 8 else "bf16"
        if nbits == 4 and w.get("type") == "float":
            compute = "fp4" if acts else "bf16"
    elif method in ("awq", "gptq"):
        nbits = int(q.get("bits") or q.get("w_bit") or 4)
        gsize = int(q.get("group_size") or q.get("q_group_size") or 128)
        bits = nbits + 32 / gsize  # an fp16 scale and a packed zero point per group
    elif method == "mxfp4":  # gpt-oss: MoE experts in MXFP4 (an e8m0 scale per 32), the rest as torch_dtype
        bits = 4 + 8 / 32
        quantized = {c: c == "experts" for c in MODULES}
    elif method == "modelopt":
        algo = str(q.get("quant_algo", "")).upper()
        bits, compute = (4 + 8 / 16, "fp4") if "FP4" in algo else (8.0, "fp8")
    else:
        notes.append(f"unknown quant_method {method!r}: weights counted at torch_dtype")
        return Precision(per, compute, method or "unknown"), notes
    for c in MODULES:
        if quantized[c]:
            per[c] = bits / 8
    if kv_dtype:
        notes.append(f"KV cache in {kv_dtype}")
    return Precision(per, compute, method), notes


def parse_config(cfg: dict[str, Any], *, name: str = "", kv_dtype: str | None = None) -> ModelArch:
    """The architecture of a Hugging Face ``config.json`` (already decoded).

    ``kv_dtype``: the server's KV cache dtype (``fp8_e4m3`` -> 1 byte), default the model's dtype.
    """
    t = text_config(cfg)
    layers, hidden = _int(t, "num_hidden_layers", "n_layer", "num_layers"), _int(t, "hidden_size", "d_model", "n_embd")
    heads = _int(t, "num_attention_heads", "n_head")
    kv_heads = _int(t, "num_key_value_heads", "multi_query_group_num", default=heads)
    head_dim = _int(t, "head_dim", default=hidden // heads)
    vocab = _int(t, "vocab_size")
    precision, notes = precision_of(t, kv_dtype)
    kv_bytes = 1.0 if kv_dtype and "fp8" in kv_dtype else DTYPE_BYTES.get(str(t.get("torch_dtype", "bfloat16")), 2.0)

    n_experts = _int(t, "n_routed_experts", "num_local_experts", "num_experts", default=0)
    top_k = _int(t, "num_experts_per_tok", "num_experts_per_token", "moe_topk", default=0) if n_experts else 0
    inter = _int(t, "intermediate_size", "ffn_dim", default=4 * hidden)
    moe_inter = _int(t, "moe_intermediate_size", default=inter) if n_experts else 0
    if n_experts:
        first_dense = _int(t, "first_k_dense_replace", default=0)
        sparse_step = _int(t, "decoder_sparse_step", "moe_layer_freq", default=1) or 1
        only_mlp = set(t.get("mlp_only_layers") or [])
        moe_layers = sum(1 for i in range(layers)
                         if i >= first_dense and i not in only_mlp and (i + 1) % sparse_step == 0)
    else:
        moe_layers = 0
    dense_layers = layers - moe_layers
    shared_inter = _int(t, "n_shared_experts", default=0) * moe_inter or _int(t, "shared_expert_intermediate_size",
                                                                            default=0)

    mla: dict[str, int] = {}
    if t.get("kv_lora_rank"):
        mla = {k: _int(t, k, default=0) for k in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
                                                   "qk_nope_head_dim", "v_head_dim")}
        qk = mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]
        q = hidden * mla["q_lora_rank"] + mla["q_lora_rank"] * heads * qk if mla["q_lora_rank"] else hidden * heads * qk
        attn = (q + hidden * (mla["kv_lora_rank"] + mla["qk_rope_head_dim"])
                + mla["kv_lora_rank"] * heads * (mla["qk_nope_head_dim"] + mla["v_head_dim"])
                + heads * mla["v_head_dim"] * hidden)
        # SGLang and vLLM cache the compressed latent and the rope key: one vector per token per layer
        kv_per_layer = mla["kv_lora_rank"] + mla["qk_rope_head_dim"]
    else:
        attn = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
        kv_per_layer = 2 * kv_heads * head_dim
    tied = bool(t.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False)))
    params = {
        "attention": float(attn * layers),
        "dense_ffn": float(3 * hidden * inter * dense_layers),
        "shared_experts": float(3 * hidden * shared_inter * moe_layers),
        "experts": float(3 * hidden * moe_inter * n_experts * moe_layers),
        "router": float(hidden * n_experts * moe_layers),
        # a tied LM head reads the embedding matrix: counted once, as the head
        "lm_head": float(vocab * hidden),
        "embedding": 0.0 if tied else float(vocab * hidden),
    }
    return ModelArch(
        name=name or str(t.get("model_type") or "model"), model_type=str(t.get("model_type", "")),
        layers=layers, hidden=hidden, vocab=vocab, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        attention="mla" if mla else "gqa", params=params, n_experts=n_experts, experts_per_token=top_k,
        moe_layers=moe_layers, precision=precision, kv_bytes_per_token=kv_per_layer * layers * kv_bytes,
        kv_dtype_bytes=kv_bytes, mla=mla, notes=tuple(notes))


def load_config(text: str, *, name: str = "", kv_dtype: str | None = None, source: str = "config.json") -> ModelArch:
    """``parse_config`` of a ``config.json``'s text; a clear error if it is not one."""
    try:
        cfg = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{source} is not JSON: {exc}") from None
    if not isinstance(cfg, dict):
        raise ConfigError(f"{source} is not a JSON object")
    return parse_config(cfg, name=name, kv_dtype=kv_dtype)


class _Host(Protocol):
    name: str

    def run(self, cmd: Any, *, timeout: float = 60, check: bool = False, input: str | None = None) -> Any: ...


MODEL_FLAGS = ("--model-path", "--model", "--model-name-or-path")
KV_DTYPE_FLAGS = ("--kv-cache-dtype",)


def _flag(argv: Sequence[str], flags: Sequence[str]) -> str | None:
    for i, a in enumerate(argv):
        for f in flags:
            if a == f and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(f + "="):
                return a.split("=", 1)[1]
    return None


def served_model(argv: Sequence[str]) -> str:
    """The model path or id of a server command line (SGLang ``--model-path``, vLLM ``serve MODEL``)."""
    found = _flag(argv, MODEL_FLAGS)
    if found:
        return found
    if "serve" in argv:
        rest = argv[argv.index("serve") + 1:]
        if rest and not rest[0].startswith("-"):
            return rest[0]
    raise ConfigError(f"no model in the command line ({shlex.join(argv)[:200]}): give --model-path or `serve MODEL`")


def config_command(model: str) -> str:
    """A shell command printing the model's config.json: ``MODEL/config.json`` for a directory,
    else the newest snapshot of the Hugging Face id in the hub cache (``$HF_HOME`` or ~/.cache)."""
    q = shlex.quote(model)
    hub = "models--" + model.replace("/", "--")
    return (f"if [ -f {q}/config.json ]; then cat {q}/config.json; exit 0; fi; "
            f'for d in "${{HF_HUB_CACHE:-${{HF_HOME:-$HOME/.cache/huggingface}}/hub}}"/{shlex.quote(hub)}/snapshots/*/; '
            f'do if [ -f "$d"config.json ]; then cat "$d"config.json; exit 0; fi; done; exit 44')


def read_served_config(host: _Host, argv: Sequence[str], *, timeout: float = 30.0) -> ModelArch:
    """The architecture of the model a server command line serves, read from ``host``."""
    model = served_model(argv)
    res = host.run(config_command(model), timeout=timeout)
    if res.exited == 44:
        raise HostError(f"no config.json for {model!r} on {host.name} (not a directory with one, nor in the "
                        "Hugging Face cache)", host=host.name, result=res)
    if res.exited != 0:
        raise HostError(f"reading {model!r}'s config.json on {host.name} failed (exit {res.exited})",
                        host=host.name, result=res)
    return load_config(res.stdout, name=model.rstrip("/").rsplit("/", 1)[-1], kv_dtype=_flag(argv, KV_DTYPE_FLAGS),
                       source=f"{host.name}:{model}/config.json")
