"""The pure parts of workbench.testbed.tiny_model: stamp, cache check, corpus, config."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.testbed import tiny_model as t


def test_stamp_names_seed_and_script() -> None:
    s = t.stamp_for(3)
    assert s["seed"] == 3
    assert len(s["script_sha256"]) == 64
    assert t.stamp_for(3) == s != t.stamp_for(4)


def test_is_cached_needs_the_matching_stamp(tmp_path: Path) -> None:
    assert not t.is_cached(tmp_path, 0)
    (tmp_path / t.STAMP_NAME).write_text("not json")
    assert not t.is_cached(tmp_path, 0)
    (tmp_path / t.STAMP_NAME).write_text(json.dumps(t.stamp_for(0)))
    assert t.is_cached(tmp_path, 0)
    assert not t.is_cached(tmp_path, 1)


def test_cached_model_is_reused_without_building(tmp_path: Path) -> None:
    (tmp_path / t.STAMP_NAME).write_text(json.dumps(t.stamp_for(0)))
    # env=None would build the vLLM env; a cache hit must return before that.
    assert t.make_tiny_model(tmp_path, seed=0) == tmp_path


def test_corpus_is_fixed() -> None:
    a, b = t._corpus(t._CORPUS_SEED_TEXT), t._corpus(t._CORPUS_SEED_TEXT)
    assert a == b and len(a) == 401


def test_config_is_the_agreed_tiny_llama() -> None:
    c = t.CONFIG
    assert (c["hidden_size"], c["num_hidden_layers"]) == (128, 2)
    assert (c["num_attention_heads"], c["num_key_value_heads"]) == (4, 2)
    assert (c["vocab_size"], c["max_position_embeddings"]) == (512, 512)
    assert c["architectures"] == ["LlamaForCausalLM"]
