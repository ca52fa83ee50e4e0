"""A tiny random Llama model for the real-vLLM testbed, made locally with no hub.

The model is a ``LlamaForCausalLM`` (hidden 128, 2 layers, 4 heads / 2 KV heads,
vocab 512, 512 positions) with random weights in safetensors and a byte-level BPE
tokenizer trained here, plus a chat template, so ``/v1/chat/completions`` works.

Two halves, one file: :func:`make_tiny_model` runs under the workbench's own
Python (standard library only) and executes *this same file* as a script with
the vLLM environment's Python, which has torch, safetensors, tokenizers and
transformers. Module level imports only the standard library for that reason.
The result is deterministic for a seed and cached: a stamp file records the
seed and this file's hash, and a rebuild happens only when either changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.testbed.vllm import VllmEnv

STAMP_NAME = ".workbench-tiny-model.json"
MODEL_NAME = "tiny-llama"

#: The architecture; part of the stamp, so changing it rebuilds cached models.
CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "pad_token_id": 1,
    "torch_dtype": "float32",
}

SPECIAL_TOKENS = ["<s>", "</s>", "<unk>", "<|system|>", "<|user|>", "<|assistant|>"]

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

# Training text for the tokenizer: fixed, so the vocabulary does not depend on
# anything but this file.
_CORPUS_SEED_TEXT = (
    "The quick brown fox jumps over the lazy dog. A tiny model serves tokens "
    "for the workbench. GPU hosts run inference servers; the scheduler batches "
    "requests, the engine core prefills prompts and decodes tokens. Latency, "
    "throughput, time to first token and inter-token latency are measured. "
    "Hello world! What is the capital of France? Paris is the capital of France. "
    "0123456789 + - * / = ( ) [ ] { } < > , . ; : ' \" ! ? # $ % & @ ^ _ ~ | \\ "
)


def stamp_for(seed: int) -> dict[str, Any]:
    """What a cached model directory must record to be reused for ``seed``."""
    script = Path(__file__).read_bytes()
    return {"seed": seed, "script_sha256": hashlib.sha256(script).hexdigest()}


def is_cached(dest: Path, seed: int) -> bool:
    """True when ``dest`` holds a complete model made by this file for ``seed``."""
    try:
        recorded = json.loads((dest / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return False
    return bool(recorded == stamp_for(seed))


def default_model_dir(seed: int = 0) -> Path:
    """Where the testbed keeps the model for ``seed``: ``<cache>/models/tiny-llama-s<seed>``."""
    from workbench.testbed import paths

    return paths.cache_dir() / "models" / f"{MODEL_NAME}-s{seed}"


def make_tiny_model(dest: Path, *, seed: int = 0, env: VllmEnv | None = None) -> Path:
    """Make (or reuse) the tiny model in ``dest``; return ``dest``.

    ``env`` is the vLLM environment whose Python builds it (default:
    :func:`workbench.testbed.vllm.ensure_vllm_env`). The directory is built
    beside ``dest`` and renamed into place, so a crash leaves no half model.
    """
    dest = Path(dest)
    if is_cached(dest, seed):
        return dest
    if env is None:
        from workbench.testbed.vllm import ensure_vllm_env

        env = ensure_vllm_env()
    tmp = dest.with_name(dest.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    argv = [str(env.python), str(Path(__file__).resolve()), str(tmp), "--seed", str(seed)]
    child_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(argv, capture_output=True, text=True, env=child_env, check=False)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        from workbench.errors import WorkbenchError

        raise WorkbenchError(
            f"building the tiny model failed (exit {proc.returncode}): "
            f"{shlex.join(argv)}\n{proc.stderr[-2000:]}"
        )
    (tmp / STAMP_NAME).write_text(json.dumps(stamp_for(seed), sort_keys=True) + "\n")
    for f in tmp.iterdir():  # safetensors writes 0600; a host's service user must read it
        f.chmod(0o644)
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return dest


# --- the half that runs under the vLLM environment's Python -------------------------


def _corpus(seed_text: str) -> list[str]:
    """A few hundred lines of text built from the fixed seed text, deterministically."""
    words = seed_text.split()
    lines = []
    for i in range(400):
        step = 1 + i % 7
        lines.append(" ".join(words[(i + k * step) % len(words)] for k in range(12)))
    return [seed_text, *lines]


def _build(dest: Path, seed: int) -> None:  # pragma: no cover - runs in the vLLM env
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    dest.mkdir(parents=True)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=CONFIG["vocab_size"],
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(_CORPUS_SEED_TEXT), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="</s>",
        model_max_length=CONFIG["max_position_embeddings"],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(dest))

    fields = {k: v for k, v in CONFIG.items() if k not in ("architectures", "model_type")}
    config = LlamaConfig(**fields)
    config.architectures = CONFIG["architectures"]
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(str(dest), safe_serialization=True)


if __name__ == "__main__":  # pragma: no cover - the script half
    import argparse

    parser = argparse.ArgumentParser(description="build the tiny Llama model into DEST")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    _build(args.dest, args.seed)
    sys.exit(0)
