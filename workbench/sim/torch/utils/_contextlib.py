"""Decorator context managers (the frames real tracebacks show as ``decorate_context``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class _DecoratorContextManager:
    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        ctx_factory = self.clone

        @functools.wraps(func)
        def decorate_context(*args: Any, **kwargs: Any) -> Any:
            with ctx_factory():
                return func(*args, **kwargs)

        return decorate_context

    def clone(self) -> _DecoratorContextManager:
        return self.__class__()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
