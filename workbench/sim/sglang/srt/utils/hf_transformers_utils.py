"""Model config loading (what transformers' AutoConfig does for a local checkpoint)."""

from __future__ import annotations

import json
import os
from typing import Any


def get_config(
    model: str, trust_remote_code: bool = False, revision: str | None = None
) -> dict[str, Any]:
    if not os.path.isdir(model):
        raise OSError(
            f"Incorrect path_or_model_id: '{model}'. Please provide either the path to a local "
            "folder or the repo_id of a model on the Hub."
        )
    path = os.path.join(model, "config.json")
    if not os.path.isfile(path):
        raise OSError(
            f"{model} does not appear to have a file named config.json. Checkout "
            f"'https://huggingface.co/{model}/tree/None' for available files."
        )
    with open(path) as f:
        config: dict[str, Any] = json.load(f)
    if config.get("auto_map") and not trust_remote_code:
        raise ValueError(
            f"The repository {model} contains custom code which must be executed to correctly load "
            "the model. You can inspect the repository content at "
            f"https://hf.co/{model} .\n You can inspect the repository content at "
            f"https://hf.co/{model}.\nPlease pass the argument `trust_remote_code=True` to allow "
            "custom code to be run."
        )
    return config
