"""KV cache pools (MLA: one latent vector per token per layer, replicated across TP ranks)."""

from __future__ import annotations

import logging
from typing import Any

import torch

logger = logging.getLogger(__name__)


class MLATokenToKVPool:
    def __init__(
        self,
        size: int,
        page_size: int,
        dtype: Any,
        kv_lora_rank: int,
        qk_rope_head_dim: int,
        layer_num: int,
        device: str = "cuda",
    ) -> None:
        self.size = size
        self.page_size = page_size
        self.dtype = dtype
        self.kv_lora_rank = kv_lora_rank
        self.qk_rope_head_dim = qk_rope_head_dim
        self.layer_num = layer_num
        self.device = device
        self._create_buffers()
        kv_size = self.get_kv_size_bytes()
        logger.info(f"KV Cache is allocated. #tokens: {size}, KV size: {kv_size / 1024**3:.2f} GB")

    def _create_buffers(self) -> None:
        self.kv_buffer = [
            torch.zeros(
                (self.size + self.page_size, 1, self.kv_lora_rank + self.qk_rope_head_dim),
                dtype=self.dtype,
                device=self.device,
            )
            for _ in range(self.layer_num)
        ]

    def get_kv_size_bytes(self) -> int:
        width = self.kv_lora_rank + self.qk_rope_head_dim
        return (self.size + self.page_size) * width * self.dtype.itemsize * self.layer_num
