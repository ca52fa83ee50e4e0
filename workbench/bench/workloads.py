"""Dataset workloads: ShareGPT-format JSON and custom JSONL files turned into ``LoadSpec.dataset`` items.

An item is what ``loadcore.request_for`` sends: ``{"prompt": str}`` or ``{"messages": [...]}``,
with ``output_len`` (tokens) when the file gives one, or ``output_words`` (the words of the
recorded reply, turned into tokens with the server's own calibration, since no tokenizer is
downloaded). Formats:

- **ShareGPT** (``[{"id", "conversations": [{"from": "human"|"gpt"|"system", "value"}]}]``, the
  file ``vllm bench serve --dataset-name sharegpt`` and SGLang's ``bench_serving`` read): the first
  human turn is the prompt (after a system turn, if any, which becomes the system message in chat),
  the gpt turn after it sets the output length; conversations without such a pair are skipped,
  as both tools do.
- **custom JSONL**: one JSON object per line with ``prompt`` (text) or ``messages`` (chat, a list of
  ``{"role", "content"}``) and optionally ``output_len``; the same objects in a JSON list also work.

``load_workload(path, count=n, seed=s)`` shuffles with the seed and keeps ``n`` items (cycled by the
load generator when it needs more), so only what a run uses is shipped to the host.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from workbench.bench.loadcore import check_item
from workbench.errors import ConfigError

FORMATS = ("auto", "sharegpt", "jsonl")
HUMAN, GPT, SYSTEM = {"human", "user"}, {"gpt", "assistant", "chatgpt", "bard", "bing"}, {"system"}


def sharegpt_items(data: Any, *, chat: bool, source: str = "ShareGPT") -> list[dict[str, Any]]:
    """One item per conversation that has a human turn followed by a gpt turn."""
    if not isinstance(data, list):
        raise ConfigError(f"{source}: a ShareGPT file is a JSON list of conversations, not {type(data).__name__}")
    items = []
    for conv in data:
        turns = conv.get("conversations") if isinstance(conv, dict) else None
        if not isinstance(turns, list):
            continue
        system = ""
        for i, turn in enumerate(turns[:-1]):
            who, text = str(turn.get("from", "")).lower(), turn.get("value")
            if who in SYSTEM and isinstance(text, str):
                system = text
                continue
            reply = turns[i + 1]
            answer = reply.get("value")
            if who in HUMAN and str(reply.get("from", "")).lower() in GPT and isinstance(text, str) and text.strip() \
                    and isinstance(answer, str) and answer.split():
                item: dict[str, Any]
                if chat and system:
                    item = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": text}]}
                else:
                    item = {"prompt": text}
                items.append(item | {"output_words": len(answer.split())})
                break
    return items


def jsonl_items(text: str, *, source: str = "JSONL") -> list[dict[str, Any]]:
    """The objects of a JSONL file (blank lines skipped); a bad line is named in the error."""
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{source} line {n} is not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ConfigError(f"{source} line {n}: expected an object with 'prompt' or 'messages'")
        items.append(_custom(obj, f"{source} line {n}"))
    return items


def _custom(obj: dict[str, Any], where: str) -> dict[str, Any]:
    item = {k: obj[k] for k in ("prompt", "messages", "output_len") if k in obj and obj[k] is not None}
    try:
        check_item(item, where, "chat")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return item


def detect(path: Path, text: str) -> str:
    """``sharegpt`` or ``jsonl`` from the file's content (a JSON list whose items hold ``conversations``)."""
    head = text.lstrip()[:1]
    if head == "[":
        return "sharegpt" if '"conversations"' in text[:100_000] else "jsonl-list"
    if path.suffix == ".json" and head == "{" and "\n{" not in text.strip():
        raise ConfigError(f"{path}: one JSON object, not a dataset (a ShareGPT list or JSONL lines)")
    return "jsonl"


def load_workload(path: str | Path, *, count: int | None = None, seed: int = 0, fmt: str = "auto",
                  chat: bool = False, output_len: int | None = None) -> list[dict[str, Any]]:
    """Items of the dataset at ``path`` (shuffled with ``seed``, the first ``count`` kept).

    ``chat``: the run uses the chat API (a ShareGPT system turn becomes a system message; items with
    ``messages`` need it). ``output_len``: a fixed output length for every item, as vLLM's
    ``--sharegpt-output-len``.
    """
    if fmt not in FORMATS:
        raise ConfigError(f"dataset format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the dataset {p}: {exc.strerror or exc}") from None
    kind = detect(p, text) if fmt == "auto" else fmt
    if kind in ("sharegpt", "jsonl-list"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{p} is not valid JSON: {exc}") from None
        if kind == "sharegpt":
            items = sharegpt_items(data, chat=chat, source=str(p))
        elif isinstance(data, list) and all(isinstance(o, dict) for o in data):
            items = [_custom(o, f"{p} item {n}") for n, o in enumerate(data)]
        else:
            raise ConfigError(f"{p}: a JSON list of objects with 'prompt' or 'messages' expected")
    else:
        items = jsonl_items(text, source=str(p))
    if not items:
        raise ConfigError(f"{p} holds no usable requests (format {kind})")
    if not chat and any("messages" in it for it in items):
        raise ConfigError(f"{p} holds chat 'messages': run it with the chat API (--api chat)")
    if output_len is not None:
        if output_len < 1:
            raise ConfigError(f"output_len must be >= 1, not {output_len}")
        items = [{k: v for k, v in it.items() if k != "output_words"} | {"output_len": output_len} for it in items]
    random.Random(seed).shuffle(items)
    return items[:count] if count else items
