"""Multimodal embedding routing (text-only requests go straight to the language model)."""

from __future__ import annotations

from typing import Any


def general_mm_embed_routine(
    input_ids: Any,
    forward_batch: Any,
    language_model: Any,
    data_embedding_funcs: dict[Any, Any] | None = None,
    positions: Any = None,
    **kwargs: Any,
) -> Any:
    inputs_embeds = None
    if not forward_batch.forward_mode.is_decode() and forward_batch.contains_mm_inputs():
        inputs_embeds = language_model.get_input_embeddings()(input_ids)
        input_ids = None
    hidden_states = language_model(
        input_ids=input_ids,
        forward_batch=forward_batch,
        input_embeds=inputs_embeds,
        positions=positions,
        **kwargs,
    )
    return hidden_states
