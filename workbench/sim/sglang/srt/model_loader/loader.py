"""Model loading: build the model class from config.json and stream the checkpoint into it."""

from __future__ import annotations

from typing import Any

from sglang.srt.model_loader.weight_utils import safetensors_weights_iterator
from sglang.srt.models.deepseek_v2 import DeepseekV2ForCausalLM, DeepseekV3ForCausalLM
from sglang.srt.models.dflash import DFlashDraftModel
from sglang.srt.models.kimi_k25 import KimiK25ForConditionalGeneration

_REGISTRY: dict[str, Any] = {
    "KimiK25ForConditionalGeneration": KimiK25ForConditionalGeneration,
    "DeepseekV3ForCausalLM": DeepseekV3ForCausalLM,
    "DeepseekV2ForCausalLM": DeepseekV2ForCausalLM,
    "DFlashDraftModel": DFlashDraftModel,
}


def get_model_architecture(model_config: Any) -> tuple[Any, str]:
    for arch in model_config.architectures:
        if arch in _REGISTRY:
            return _REGISTRY[arch], arch
    if model_config.is_draft_model:
        return DFlashDraftModel, "DFlashDraftModel"
    raise ValueError(
        f"Model architectures {model_config.architectures} are not supported for now. "
        f"Supported architectures: {sorted(_REGISTRY)}"
    )


class DefaultModelLoader:
    def __init__(self, load_config: Any) -> None:
        self.load_config = load_config

    def _initialize_model(self, model_config: Any, tp_size: int, ep_size: int) -> Any:
        model_class, _ = get_model_architecture(model_config)
        return model_class(model_config.spec, tp_size=tp_size, ep_size=ep_size)

    def load_model(self, *, model_config: Any, device_config: Any) -> Any:
        lc = self.load_config
        model = self._initialize_model(model_config, lc.tp_size, lc.ep_size)
        self.load_weights_and_postprocess(model, self._get_all_weights(model), lc)
        return model

    def _get_all_weights(self, model: Any) -> Any:
        lc = self.load_config
        names = (
            [n for n, _ in model.named_parameters()] if hasattr(model, "named_parameters") else []
        )
        if hasattr(model, "language_model"):
            names = ["language_model." + n for n, _ in model.language_model.named_parameters()]
        return safetensors_weights_iterator(
            names, lc.num_shards, lc.shard_seconds, lc.show_bar, lc.on_shard
        )

    @staticmethod
    def load_weights_and_postprocess(model: Any, weights: Any, target_device: Any) -> None:
        model.load_weights(weights)


def get_model_loader(load_config: Any) -> DefaultModelLoader:
    return DefaultModelLoader(load_config)
