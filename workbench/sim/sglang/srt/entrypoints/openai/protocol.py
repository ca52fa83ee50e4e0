"""Request validation (pydantic-style errors) and response envelopes of the OpenAI adapter."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class JSONResponse:
    status: int
    content: Any
    content_type: str = "application/json"


@dataclass
class StreamingResponse:
    chunks: Iterator[str]
    on_close: Callable[[], None] | None = None
    content_type: str = "text/event-stream; charset=utf-8"


class RequestValidationError(Exception):
    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(errors)
        self._errors = errors

    def errors(self) -> list[dict[str, Any]]:
        return self._errors


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def error_response(
    message: str, err_type: str = "BadRequestError", status_code: int = 400
) -> JSONResponse:
    return JSONResponse(
        status_code,
        {
            "object": "error",
            "message": message,
            "type": err_type,
            "param": None,
            "code": status_code,
        },
    )


def validation_error_response(exc: RequestValidationError) -> JSONResponse:
    """SGLang overrides FastAPI's 422 with 400 and this message shape."""
    exc_str = str(exc)
    errors_str = str(exc.errors())
    message = f"{exc_str} {errors_str}" if errors_str and errors_str != exc_str else exc_str
    return JSONResponse(
        400,
        {"object": "error", "message": message, "type": "Bad Request", "param": None, "code": 400},
    )


def parse_body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw.decode("utf-8") if raw else "")
    except UnicodeDecodeError:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": ("body", 0),
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": "Invalid UTF-8"},
                }
            ]
        ) from None
    except json.JSONDecodeError as e:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": ("body", e.pos),
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": e.msg},
                }
            ]
        ) from None
    if not isinstance(body, dict):
        raise RequestValidationError(
            [
                {
                    "type": "model_attributes_type",
                    "loc": ("body",),
                    "msg": "Input should be a valid dictionary or object to extract fields from",
                    "input": body,
                }
            ]
        )
    return body


class Fields:
    """Collects pydantic-like errors while reading typed fields from a JSON body."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.errors: list[dict[str, Any]] = []

    def _err(self, kind: str, key: str, msg: str, value: Any) -> None:
        self.errors.append({"type": kind, "loc": ("body", key), "msg": msg, "input": value})

    def required(self, key: str) -> Any:
        if key not in self.body:
            self._err("missing", key, "Field required", self.body)
        return self.body.get(key)

    def int_(self, key: str, default: int | None = None) -> int | None:
        v = self.body.get(key, default)
        if v is None or (isinstance(v, int) and not isinstance(v, bool)):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str) and v.strip().lstrip("-").isdigit():
            return int(v)
        kind, msg = (
            ("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
            if isinstance(v, str)
            else ("int_type", "Input should be a valid integer")
        )
        self._err(kind, key, msg, v)
        return default

    def float_(self, key: str, default: float | None = None) -> float | None:
        v = self.body.get(key, default)
        if v is None or (isinstance(v, int | float) and not isinstance(v, bool)):
            return v
        self._err("float_type", key, "Input should be a valid number", v)
        return default

    def bool_(self, key: str, default: bool = False) -> bool:
        v = self.body.get(key, default)
        if isinstance(v, bool):
            return v
        if v in (0, 1):
            return bool(v)
        self._err(
            "bool_parsing", key, "Input should be a valid boolean, unable to interpret input", v
        )
        return default

    def raise_if_any(self) -> None:
        if self.errors:
            raise RequestValidationError(self.errors)


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
    }
