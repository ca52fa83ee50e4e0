"""/v1/completions."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

from sglang.srt.entrypoints.openai.protocol import (
    Fields,
    JSONResponse,
    StreamingResponse,
    dumps,
    error_response,
    usage,
)
from sglang.srt.managers.tokenizer_manager import SchedulerDied, TokenizerManager
from simcore import tokenizer as synth
from simcore.tokenizer import EOS_TOKEN_ID


def prompt_length(prompt: Any) -> int | None:
    if isinstance(prompt, str):
        return synth.count_tokens(prompt)
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return len(prompt)
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        return synth.count_tokens(prompt[0])
    return None


class OpenAIServingCompletion:
    def __init__(self, tokenizer_manager: TokenizerManager) -> None:
        self.tokenizer_manager = tokenizer_manager

    def handle_request(self, body: dict[str, Any]) -> JSONResponse | StreamingResponse:
        f = Fields(body)
        prompt = f.required("prompt")
        max_tokens = f.int_("max_tokens", 16)
        stream = f.bool_("stream")
        ignore_eos = f.bool_("ignore_eos")
        f.float_("temperature")
        f.raise_if_any()
        input_len = prompt_length(prompt)
        if input_len is None:
            return error_response("prompt must be a string, a list with one string, or token ids.")
        model = body.get("model") or "default"
        opts = body.get("stream_options") or {}
        include_usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
        tm = self.tokenizer_manager
        try:
            state = tm.generate(input_len, max_tokens, ignore_eos, (dumps(prompt), max_tokens))
        except ValueError as e:
            return error_response(str(e))
        except SchedulerDied as e:
            return error_response(f"Internal server error: {e}", "InternalServerError", 500)
        rid = uuid.uuid4().hex
        created = int(time.time())
        if stream:
            return StreamingResponse(
                self._stream(state, rid, created, model, input_len, include_usage),
                on_close=lambda: tm.abort(state),
            )
        text = []
        while True:
            item = state.q.get()
            if item is None:
                return error_response(
                    "Internal server error: scheduler died", "InternalServerError", 500
                )
            n, finish = item
            text.append(state.text.next_pieces(n))
            if finish is not None:
                break
        return JSONResponse(
            200,
            {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "text": "".join(text),
                        "logprobs": None,
                        "finish_reason": finish,
                        "matched_stop": EOS_TOKEN_ID if finish == "stop" else None,
                    }
                ],
                "usage": usage(input_len, state.out_len),
                "metadata": {"weight_version": "default"},
            },
        )

    def _stream(
        self, state: Any, rid: str, created: int, model: str, input_len: int, include_usage: bool
    ) -> Iterator[str]:
        while True:
            item = state.q.get()
            if item is None:
                break
            n, finish = item
            choice = {
                "index": 0,
                "text": state.text.next_pieces(n),
                "logprobs": None,
                "finish_reason": finish,
                "matched_stop": EOS_TOKEN_ID if finish == "stop" else None,
            }
            yield (
                "data: "
                + dumps(
                    {
                        "id": rid,
                        "object": "text_completion",
                        "created": created,
                        "model": model,
                        "choices": [choice],
                        "usage": None,
                    }
                )
                + "\n\n"
            )
            if finish is not None:
                break
        if include_usage:
            yield (
                "data: "
                + dumps(
                    {
                        "id": rid,
                        "object": "text_completion",
                        "created": created,
                        "model": model,
                        "choices": [],
                        "usage": usage(input_len, state.out_len),
                    }
                )
                + "\n\n"
            )
        yield "data: [DONE]\n\n"
