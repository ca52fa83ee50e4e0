"""Mechanisms added after held-out 13 was measured (issue 15, twelfth round), each on lines taken
from the shapes of real logs (the corpus part and thread say which)."""

from __future__ import annotations

from workbench.phases import timeline
from workbench.tracebacks import analyze


def test_a_programs_warming_up_banner_places_a_native_abort_in_warmup() -> None:
    """FastCosyVoice#12: the program's own "🔥 Warming up model ..." banner and a synthesis of a warm-up text,
    then a C++ ``terminate called ... TllmException`` with no Python frame."""
    text = ("🔥 Warming up model (TRT-LLM doesn't require long warmup)...\n"
            "2026-01-18 23:02:11,243 INFO Synthesizing: Short model warmup.\n"
            "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
            "  what():  [TensorRT-LLM][ERROR] CUDA runtime error in cudaOccupancyMaxActiveBlocksPerMultiprocessor("
            "&num_blocks_per_sm, mmha::masked_multihead_attention_kernel<T>, 0): no kernel image is available for "
            "execution on the device (../tensorrt_llm/kernels/decoderMaskedMultiheadAttentionLaunch.h:274)\n"
            "1       0x7eba47e6ef29 /venv/lib/python3.10/site-packages/tensorrt_llm/libs/libdecoder_attention_0.so"
            "(+0x26ef29) [0x7eba47e6ef29]\n")
    rc = analyze(text).root_cause
    assert rc is not None and rc.phase == "warmup"
    # vLLM's sampler warm-up line moves the timeline the same way
    rows = timeline("INFO 05-01 10:00:00 [gpu_model_runner.py:2100] Warming up sampler with 256 dummy requests.\n")
    assert [r["phase"] for r in rows] == ["warmup"]
