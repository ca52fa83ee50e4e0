"""Model configuration read from the checkpoint's config.json."""

from __future__ import annotations

from typing import Any

from sglang.srt.utils.hf_transformers_utils import get_config
from simcore.perf import ModelSpec


class ModelConfig:
    def __init__(
        self,
        model_path: str,
        trust_remote_code: bool = False,
        context_length: int | None = None,
        is_draft_model: bool = False,
    ) -> None:
        self.model_path = model_path
        self.hf_config: dict[str, Any] = get_config(model_path, trust_remote_code=trust_remote_code)
        self.spec = ModelSpec.from_config(self.hf_config)
        self.context_len = context_length or self.spec.context_length
        self.is_draft_model = is_draft_model
        self.architectures = self.hf_config.get("architectures") or [self.spec.architecture]
        self.num_hidden_layers = self.spec.num_layers
        self.hidden_size = self.spec.hidden_size
        self.vocab_size = self.spec.vocab_size
        self.is_generation = True

    @staticmethod
    def from_server_args(
        server_args: Any, model_path: str | None = None, is_draft_model: bool = False
    ) -> ModelConfig:
        return ModelConfig(
            model_path or server_args.model_path,
            trust_remote_code=server_args.trust_remote_code,
            context_length=server_args.context_length if not is_draft_model else None,
            is_draft_model=is_draft_model,
        )
