"""The synthetic tokenizer and the deterministic text generator.

A token is optional leading whitespace followed by one to four non-space characters (or a run of
trailing whitespace).  Generated text is built from pieces of the form ``" " + 1..4 letters``, so
re-tokenizing a completion gives back exactly the number of tokens that were generated.
"""

from __future__ import annotations

import hashlib
import re

_TOKEN_RE = re.compile(r"\s*\S{1,4}|\s+")
EOS_TOKEN_ID = 163586
CHAT_TEMPLATE_TOKENS_PER_MESSAGE = 4  # <|im_role|> role <|im_middle|> ... <|im_end|>
CHAT_TEMPLATE_TOKENS_GENERATION = 3  # <|im_assistant|>assistant<|im_middle|>

_SYLLABLES = (
    "the",
    "and",
    "of",
    "to",
    "in",
    "is",
    "it",
    "for",
    "on",
    "as",
    "with",
    "be",
    "at",
    "by",
    "this",
    "that",
    "from",
    "or",
    "an",
    "are",
    "was",
    "not",
    "can",
    "will",
    "each",
    "data",
    "gpu",
    "node",
    "rank",
    "load",
    "step",
    "mem",
    "bus",
    "link",
    "core",
    "time",
    "path",
    "ker",
    "nel",
    "tok",
    "en",
    "ser",
    "ve",
    "cach",
    "e",
    "lay",
    "er",
    "mod",
    "el",
    "moe",
)


def count_tokens(text: str) -> int:
    """Number of synthetic tokens in ``text``."""
    return sum(1 for _ in _TOKEN_RE.finditer(text))


def tokenize(text: str) -> list[str]:
    return [m.group(0) for m in _TOKEN_RE.finditer(text)]


def chat_prompt_tokens(messages: list[dict[str, object]]) -> int:
    """Prompt length of a chat request after the (Kimi-style) chat template."""
    total = CHAT_TEMPLATE_TOKENS_GENERATION
    for m in messages:
        content = m.get("content", "")
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        total += CHAT_TEMPLATE_TOKENS_PER_MESSAGE + count_tokens(str(content or ""))
    return total


def request_seed(seed: int, *parts: object) -> int:
    h = hashlib.blake2b(repr((seed, *parts)).encode(), digest_size=8)
    return int.from_bytes(h.digest(), "little")


class TextStream:
    """Deterministic token pieces for one request (like greedy decoding of a fixed model)."""

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & 0xFFFFFFFFFFFFFFFF or 0x9E3779B97F4A7C15

    def next_pieces(self, n: int) -> str:
        out = []
        s = self._state
        for _ in range(n):
            s ^= (s << 13) & 0xFFFFFFFFFFFFFFFF
            s ^= s >> 7
            s ^= (s << 17) & 0xFFFFFFFFFFFFFFFF
            out.append(" " + _SYLLABLES[s % len(_SYLLABLES)])
        self._state = s
        return "".join(out)


def natural_length(seed: int, lo: int = 48, hi: int = 900) -> int:
    """Where a request would stop on EOS when ``ignore_eos`` is off."""
    r = (seed >> 11) % 10_000 / 10_000.0
    return int(lo + (hi - lo) * r * r)
