"""DFlash block-diffusion draft model (one forward proposes a block of draft tokens)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from sglang.srt.models.deepseek_v2 import LogitsProcessorOutput
from torch import nn


class DFlashDraftModel(nn.Module):
    def __init__(self, config: Any, tp_size: int = 1, ep_size: int = 1) -> None:
        super().__init__()
        self.config = config

    def forward(self, input_ids: Any, positions: Any, forward_batch: Any, **kwargs: Any) -> Any:
        return LogitsProcessorOutput(
            torch.empty(forward_batch.num_tokens, self.config.vocab_size, dtype=torch.float32)
        )

    def load_weights(self, weights: Iterable[tuple[str, Any]]) -> None:
        for _name, _w in weights:
            pass


EntryClass = [DFlashDraftModel]
