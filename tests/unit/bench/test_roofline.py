"""Any model's roofline: parameter counts, bytes and FLOPs per decode step of real public configs,
against hand calculations written out here (published totals as the cross-check)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.bottleneck import KIMI_K26, analyze
from workbench.errors import ConfigError, HostError
from workbench.gpuspecs import GPUS, gpu_for
from workbench.hosts import LocalHost
from workbench.modelarch import (
    ModelArch,
    load_config,
    parse_config,
    read_served_config,
    served_model,
)
from workbench.roofline import decode_step

CONFIGS = Path(__file__).parents[2] / "fixtures" / "bench" / "configs"
H100, B300 = GPUS["H100"], GPUS["B300"]


def arch(name: str, **kw: str) -> ModelArch:
    return load_config((CONFIGS / f"{name}.json").read_text(), name=name, **kw)


def test_llama_dense_counts_match_the_published_totals() -> None:
    a = arch("Llama-3.1-8B-Instruct")
    attn = (4096 * 4096 * 2 + 4096 * 1024 * 2) * 32  # q, o + k, v (8 KV heads of 128)
    ffn = 3 * 4096 * 14336 * 32
    head = 128256 * 4096
    assert a.params["attention"] == attn and a.params["dense_ffn"] == ffn and a.params["lm_head"] == head
    # the published 8,030,261,248 less the RMSNorm weights (65 x 4096), which this model leaves out
    assert a.total_params == 8_030_261_248 - 65 * 4096
    assert a.kv_bytes_per_token == 2 * 8 * 128 * 32 * 2 == 128 * 1024  # 128 KiB per token in bf16
    assert not a.is_moe and a.precision.compute_dtype == "bf16" and a.precision.method == "none"
    tied = arch("Llama-3.2-1B-Instruct")  # tied: the LM head is the embedding, counted once
    assert tied.params["embedding"] == 0 and tied.total_params == 1_235_814_400 - 33 * 2048


def test_dense_decode_step_on_h100_by_hand() -> None:
    a = arch("Llama-3.1-8B-Instruct")
    resident = 8_029_995_008 - 128256 * 4096  # all but the embedding table (a lookup)
    step = decode_step(a, H100, batch=1, tp=1)
    assert step.bytes == resident * 2
    assert step.t_memory_s == pytest.approx(resident * 2 / 3.35e12)  # 4.48 ms
    assert step.roofline_tok_s == pytest.approx(223.2, abs=0.1)
    assert step.flops == 2 * resident and step.bound == "HBM-bound"
    # KV: 64 requests x 2048 tokens x 128 KiB = 17.2 GB on one GPU; TP8 splits the 8 KV heads
    kv = decode_step(a, H100, batch=64, tp=1, context=2048).kv_bytes
    assert kv == 64 * 2048 * 131072
    assert decode_step(a, H100, batch=64, tp=8, context=2048).kv_bytes == kv / 8
    assert decode_step(a, H100, batch=64, tp=8, context=2048).resident_bytes == resident * 2 / 8
    # without context, intensity ~ batch FLOP/B (2 FLOPs per 2-byte weight per token): the H100 ridge
    # 989.5 / 3.35 = 295 FLOP/B puts the crossover between batch 256 and 512
    assert decode_step(a, H100, batch=256).bound == "HBM-bound"
    assert decode_step(a, H100, batch=512).bound == "compute-bound"
    assert "HBM-bound by 295" in decode_step(a, H100, batch=1).describe()


def test_gqa_heads_fewer_than_tp_are_replicated() -> None:
    a = arch("Qwen2.5-7B-Instruct")  # 4 KV heads: at TP8 each rank holds one
    assert a.kv_bytes_per_token == 2 * 4 * 128 * 28 * 2
    assert decode_step(a, H100, batch=8, tp=8, context=1000).kv_bytes == a.kv_bytes_per_token / 4 * 8 * 1000


def test_qwen3_moe_counts_and_distinct_experts() -> None:
    a = arch("Qwen3-30B-A3B")
    expert = 3 * 2048 * 768
    assert a.n_experts == 128 and a.experts_per_token == 8 and a.moe_layers == 48
    assert a.params["experts"] == expert * 128 * 48 and a.params["dense_ffn"] == 0
    assert a.params["attention"] == (2048 * 32 * 128 * 2 + 2048 * 4 * 128 * 2) * 48
    assert a.total_params == 30_531_911_680  # 30.5 B published (norms excluded)
    resident = a.params["attention"] + 2048 * 128 * 48 + 151936 * 2048
    assert a.active_params == resident + 8 * expert * 48  # 3.04 B: "A3B"
    one = decode_step(a, H100, batch=1)
    assert one.experts_per_layer == pytest.approx(8)
    assert one.expert_bytes == pytest.approx(8 * expert * 48 * 2)
    # 64 tokens pick 128 (1 - (1 - 8/128)^64) = 125.9 distinct experts per layer: almost all of them
    many = decode_step(a, H100, batch=64)
    assert many.experts_per_layer == pytest.approx(128 * (1 - (1 - 8 / 128) ** 64)) == pytest.approx(125.94, abs=0.01)
    assert many.bytes / one.bytes == pytest.approx((resident + 125.94 * expert * 48) / (resident + 8 * expert * 48),
                                                   rel=1e-3)


def test_mixtral_and_fp8_moe() -> None:
    m = arch("Mixtral-8x7B-Instruct-v0.1")
    assert m.total_params == 46_702_792_704 - 65 * 4096  # published 46.7 B
    assert m.active_params == pytest.approx(12.75e9, rel=1e-3)
    q = arch("Qwen3-235B-A22B-Instruct-2507-FP8")
    assert q.total_params == pytest.approx(235.09e9, rel=1e-3)
    fp8 = 1 + 4 / (128 * 128)  # e4m3 + an fp32 scale per 128x128 block
    assert q.precision.of("experts") == q.precision.of("attention") == pytest.approx(fp8)
    assert q.precision.of("lm_head") == 2.0 and q.precision.compute_dtype == "fp8"
    assert decode_step(q, H100, batch=1, tp=8).compute_dtype == "fp8"
    assert decode_step(q, GPUS["A100"], batch=1, tp=8).compute_dtype == "bf16"  # no FP8 tensor cores


def test_deepseek_v3_mla_moe_fp8() -> None:
    a = arch("DeepSeek-V3")
    mla = (7168 * 1536 + 1536 * 128 * 192 + 7168 * (512 + 64) + 512 * 128 * (128 + 128) + 128 * 128 * 7168)
    assert a.attention == "mla" and a.params["attention"] == mla * 61
    assert a.moe_layers == 58 and a.params["dense_ffn"] == 3 * 7168 * 18432 * 3
    assert a.params["shared_experts"] == 3 * 7168 * 2048 * 58
    assert a.total_params == pytest.approx(671e9, rel=0.002)  # published 671 B (MTP layer not counted)
    assert a.active_params == pytest.approx(36.6e9, rel=0.01)  # published 37 B
    assert a.kv_bytes_per_token == (512 + 64) * 61 * 2  # the latent and the rope key, bf16
    # the latent is replicated on every TP rank; DP attention spreads the requests instead
    h200 = GPUS["H200"]
    tp8 = decode_step(a, h200, batch=32, tp=8, context=4000)
    assert tp8.kv_bytes == (512 + 64) * 61 * 2 * 32 * 4000
    assert decode_step(a, h200, batch=32, tp=8, context=4000, dp_attention=True).kv_bytes == tp8.kv_bytes / 8
    assert load_config((CONFIGS / "DeepSeek-V3.json").read_text(), kv_dtype="fp8_e4m3").kv_bytes_per_token == 576 * 61
    # 671 B FP8 weights + bf16 embedding and head = 84 GB per GPU at TP8: not on 8 x H100 (80 GB), as in practice
    with pytest.raises(ConfigError, match=r"need 84 GB per GPU at TP8.*raise the TP size"):
        decode_step(a, H100, batch=1, tp=8)


def test_kimi_k2_and_the_seeds_k26() -> None:
    k2 = arch("Kimi-K2-Instruct")
    assert k2.total_params == pytest.approx(1.026e12, rel=0.002) and k2.active_params == pytest.approx(31.7e9, rel=0.01)
    k26 = arch("Kimi-K2.6")  # text_config of the multimodal wrapper, INT4 experts
    assert k26.layers == 61 and k26.n_experts == 384 and k26.moe_layers == 60
    assert k26.precision.of("experts") == 4.5 / 8  # 4 bits + a bf16 scale per 32
    for part in ("attention", "shared_experts", "dense_ffn", "lm_head"):  # all in the ignore list
        assert k26.precision.of(part) == 2.0, part
    assert k26.precision.compute_dtype == "bf16"  # W4A16
    spec = k26.to_model_spec()
    # the hand-written KIMI_K26 of bottleneck.py, which left the 165 M router weights out
    assert spec.expert_params == KIMI_K26.expert_params and spec.kv_bytes_per_token == KIMI_K26.kv_bytes_per_token
    assert spec.dense_params == pytest.approx(KIMI_K26.dense_params + 7168 * 384 * 60, rel=1e-3)


def test_the_seeds_hbm_bound_at_360_w_comes_from_the_config_alone() -> None:
    k26 = arch("Kimi-K2.6")
    # the seeds' point: c=64 on 8 x B300, ~3 tokens per chunk (DDTree verifying 16), 360 W, 100 % util
    v = analyze(3795.0, 64, k26.to_model_spec(), B300, 8, accept_len=3.0, tokens_per_step=16 * 64,
                context_tokens=1500, util_pct=100.0, power_w=360.0)
    assert v.label == "memory-bound" and "consistent with memory-bound" in " ".join(v.evidence)
    step = decode_step(k26, B300, batch=64, tp=8, context=1500, tokens_per_request=16)
    assert step.bound == "HBM-bound"
    words = step.against(3795.0, power_w=360.0, accept_len=3.0)
    assert "HBM-bound at 360 W" in words and "33% of the 1100 W limit" in words and "below it" in words


def test_quantization_schemes() -> None:
    awq = arch("Qwen2.5-7B-Instruct-AWQ")
    assert awq.precision.method == "awq" and awq.precision.of("attention") == pytest.approx((4 + 32 / 128) / 8)
    assert awq.precision.of("lm_head") == 2.0  # float16 head
    base = json.loads((CONFIGS / "Qwen3-8B.json").read_text())
    nvfp4 = parse_config(base | {"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}})
    assert nvfp4.precision.of("dense_ffn") == pytest.approx(4.5 / 8) and nvfp4.precision.compute_dtype == "fp4"
    assert decode_step(nvfp4, B300, batch=1).compute_dtype == "fp4"
    assert decode_step(nvfp4, H100, batch=1).compute_dtype == "fp8"  # Hopper has no FP4 tensor cores
    odd = parse_config(base | {"quantization_config": {"quant_method": "bitsandbytes"}})
    assert odd.precision.of("attention") == 2.0 and "unknown quant_method" in odd.notes[0]
    w8a8 = parse_config(base | {"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                    "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}}}, "ignore": ["lm_head"]}})
    assert w8a8.precision.of("dense_ffn") == 1.0 and w8a8.precision.of("lm_head") == 2.0
    assert w8a8.precision.compute_dtype == "fp8"


def test_bad_configs_and_gpu_names() -> None:
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        parse_config({"model_type": "bert"})
    with pytest.raises(ConfigError, match="not JSON"):
        load_config("{", source="x/config.json")
    assert gpu_for("NVIDIA B300 SXM6 AC") is B300 and gpu_for("NVIDIA H200") is GPUS["H200"]
    assert gpu_for("AMD Instinct MI300X") is GPUS["MI300X"] and gpu_for("NVIDIA L40S") is GPUS["L40S"]
    assert gpu_for("NVIDIA RTX PRO 6000 Blackwell Server Edition") is GPUS["RTX PRO 6000"]
    assert gpu_for("NVIDIA A100-SXM4-80GB") is GPUS["A100"]
    assert gpu_for("NVIDIA H100 PCIe") is None and gpu_for("NVIDIA H100 NVL") is None  # other bandwidths
    assert gpu_for("Tesla T4") is None


def test_read_served_config_on_a_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host = LocalHost("local-test")
    model_dir = tmp_path / "my models" / "Qwen3-8B"  # a space: the path is quoted
    model_dir.mkdir(parents=True)
    (model_dir / "config.json").write_text((CONFIGS / "Qwen3-8B.json").read_text())
    a = read_served_config(host, ["python3", "-m", "sglang.launch_server", "--model-path", str(model_dir),
                                  "--kv-cache-dtype", "fp8_e4m3", "--tp-size", "2"])
    assert a.name == "Qwen3-8B" and a.layers == 36 and a.kv_dtype_bytes == 1.0
    # a Hugging Face id, from the hub cache
    snap = tmp_path / "hf" / "hub" / "models--Qwen--Qwen3-30B-A3B" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text((CONFIGS / "Qwen3-30B-A3B.json").read_text())
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert read_served_config(host, ["vllm", "serve", "Qwen/Qwen3-30B-A3B", "--tensor-parallel-size", "1"]).n_experts == 128
    with pytest.raises(HostError, match=r"no config\.json for 'Qwen/Nope'"):
        read_served_config(host, ["vllm", "serve", "Qwen/Nope"])
    with pytest.raises(ConfigError, match="no model in the command line"):
        served_model(["python3", "-m", "sglang.launch_server", "--port", "1"])
    assert served_model(["x", "--model=/m/a"]) == "/m/a"
