"""Kimi K2.5 / K2.6 (vision tower + DeepSeek-V3 language model)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sglang.srt.managers.mm_utils import general_mm_embed_routine
from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM
from torch import nn


class KimiK25ForConditionalGeneration(nn.Module):
    def __init__(self, config: Any, tp_size: int = 1, ep_size: int = 1) -> None:
        super().__init__()
        self.config = config
        self.language_model = DeepseekV3ForCausalLM(config, tp_size=tp_size, ep_size=ep_size)

    def get_image_feature(self, items: list[Any]) -> Any:
        raise NotImplementedError

    def forward(
        self,
        input_ids: Any,
        positions: Any,
        forward_batch: Any,
        get_embedding: bool = False,
        pp_proxy_tensors: Any = None,
    ) -> Any:
        hidden_states = general_mm_embed_routine(
            input_ids=input_ids,
            forward_batch=forward_batch,
            language_model=self.language_model,
            data_embedding_funcs={"image": self.get_image_feature},
            positions=positions,
            pp_proxy_tensors=pp_proxy_tensors,
        )
        return hidden_states

    def load_weights(self, weights: Iterable[tuple[str, Any]]) -> None:
        def stream_language_weights() -> Iterator[tuple[str, Any]]:
            for name, loaded_weight in weights:
                if "vision_tower" in name or "mm_projector" in name:
                    continue
                yield name.replace("language_model.", ""), loaded_weight

        self.language_model.load_weights(stream_language_weights())


EntryClass = [KimiK25ForConditionalGeneration]
