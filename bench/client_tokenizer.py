"""Write a word-level tokenizer directory for the load tools that insist on one.

``python bench/client_tokenizer.py DIR``. One token per word of ``loadcore.WORDS``, the word
``tok`` that the fixed-schedule server streams, and the numbers 0-4095, so the tools' token
counts equal the fixed server's (one token per whitespace-separated word). Plain JSON in the
``tokenizers`` format; loads with ``transformers.AutoTokenizer.from_pretrained(DIR)``.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workbench.bench.loadcore import WORDS


def write(directory: str) -> Path:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    words = ["[UNK]", "<s>", "</s>", "tok", *dict.fromkeys(WORDS), *map(str, range(4096))]
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for t in ("[UNK]", "<s>", "</s>")],
        "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": False},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }
    (out / "tokenizer.json").write_text(json.dumps(tokenizer))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "bos_token": "<s>",
        "eos_token": "</s>", "model_max_length": 1 << 20, "chat_template": "{% for m in messages %}{{ m['content'] }} {% endfor %}"}))
    return out


if __name__ == "__main__":
    print(write(sys.argv[1] if len(sys.argv) > 1 else "/tmp/wb-tok"))
