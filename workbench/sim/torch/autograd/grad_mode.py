from __future__ import annotations

from torch.utils._contextlib import _DecoratorContextManager


class no_grad(_DecoratorContextManager):
    pass


class inference_mode(_DecoratorContextManager):
    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
