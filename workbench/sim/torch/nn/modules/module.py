"""``nn.Module`` call plumbing, so model frames nest the way real tracebacks show them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class Module:
    def __init__(self) -> None:
        self.training = False

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        forward_call = self.forward
        return forward_call(*args, **kwargs)

    def _wrapped_call_impl(self, *args: Any, **kwargs: Any) -> Any:
        return self._call_impl(*args, **kwargs)

    __call__ = _wrapped_call_impl

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        for name, value in vars(self).items():
            full = f"{prefix}.{name}" if prefix else name
            if isinstance(value, Parameter):
                yield full, value
            elif isinstance(value, Module):
                yield from value.named_parameters(full)
            elif isinstance(value, ModuleList):
                for i, m in enumerate(value):
                    yield from m.named_parameters(f"{full}.{i}")


class ModuleList(list):
    pass


class Parameter:
    __slots__ = ("data", "weight_loader")

    def __init__(self, data: Any = None) -> None:
        self.data = data
        self.weight_loader: Any = None
