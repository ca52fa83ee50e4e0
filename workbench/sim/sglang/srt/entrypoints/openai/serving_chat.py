"""/v1/chat/completions."""

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


class OpenAIServingChat:
    def __init__(self, tokenizer_manager: TokenizerManager) -> None:
        self.tokenizer_manager = tokenizer_manager

    def handle_request(self, body: dict[str, Any]) -> JSONResponse | StreamingResponse:
        f = Fields(body)
        messages = f.required("messages")
        if messages is not None and not isinstance(messages, list):
            f._err("list_type", "messages", "Input should be a valid list", messages)
        max_tokens = f.int_("max_completion_tokens") or f.int_("max_tokens")
        stream = f.bool_("stream")
        ignore_eos = f.bool_("ignore_eos")
        f.float_("temperature")
        f.float_("top_p")
        f.raise_if_any()
        if not messages:
            return error_response("Messages cannot be empty.")
        model = body.get("model") or "default"
        opts = body.get("stream_options") or {}
        include_usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
        prompt_tokens = synth.chat_prompt_tokens([m for m in messages if isinstance(m, dict)])
        tm = self.tokenizer_manager
        try:
            state = tm.generate(
                prompt_tokens, max_tokens, ignore_eos, (dumps(messages), max_tokens)
            )
        except ValueError as e:
            return error_response(str(e))
        except SchedulerDied as e:
            return error_response(f"Internal server error: {e}", "InternalServerError", 500)
        rid = uuid.uuid4().hex
        created = int(time.time())
        if stream:
            return StreamingResponse(
                self._stream(state, rid, created, model, prompt_tokens, include_usage),
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
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": "".join(text),
                            "reasoning_content": None,
                            "tool_calls": None,
                        },
                        "logprobs": None,
                        "finish_reason": finish,
                        "matched_stop": EOS_TOKEN_ID if finish == "stop" else None,
                    }
                ],
                "usage": usage(prompt_tokens, state.out_len),
                "metadata": {"weight_version": "default"},
            },
        )

    def _stream(
        self,
        state: Any,
        rid: str,
        created: int,
        model: str,
        prompt_tokens: int,
        include_usage: bool,
    ) -> Iterator[str]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            choice = {
                "index": 0,
                "delta": {
                    "role": None,
                    "content": None,
                    "reasoning_content": None,
                    "tool_calls": None,
                    **delta,
                },
                "logprobs": None,
                "finish_reason": finish,
                "matched_stop": EOS_TOKEN_ID if finish == "stop" else None,
            }
            return (
                "data: "
                + dumps(
                    {
                        "id": rid,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": model,
                        "choices": [choice],
                        "usage": None,
                    }
                )
                + "\n\n"
            )

        first = True
        while True:
            item = state.q.get()
            if item is None:
                yield (
                    "data: "
                    + dumps(
                        {
                            "error": {
                                "object": "error",
                                "message": "Internal server error",
                                "type": "InternalServerError",
                                "param": None,
                                "code": 500,
                            }
                        }
                    )
                    + "\n\n"
                )
                break
            n, finish = item
            if first:
                yield chunk({"role": "assistant", "content": ""})
                first = False
            if n:
                yield chunk({"content": state.text.next_pieces(n)})
            if finish is not None:
                yield chunk({}, finish)
                break
        if include_usage:
            yield (
                "data: "
                + dumps(
                    {
                        "id": rid,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": model,
                        "choices": [],
                        "usage": usage(prompt_tokens, state.out_len),
                    }
                )
                + "\n\n"
            )
        yield "data: [DONE]\n\n"
