"""Checkpoint iteration (safetensors shards) and the default weight loader."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from simcore import faultpoint
from simcore.bars import shards_line

BAR_DESC = "Loading safetensors checkpoint shards"


def default_weight_loader(param: Any, loaded_weight: Any) -> None:
    param.data = loaded_weight


def safetensors_weights_iterator(
    names: list[str],
    num_shards: int,
    shard_seconds: float,
    show_bar: bool,
    on_shard: Callable[[int], None],
) -> Iterator[tuple[str, Any]]:
    """Yield (name, tensor) shard by shard; rank 0 draws SGLang's shard bar on stderr."""
    per_shard = max(1, -(-len(names) // num_shards))
    bad = faultpoint.check("weight_key_error")
    bad_shard = max(1, int(num_shards * 0.37)) if bad is not None else -1
    start = time.monotonic()
    if show_bar:
        sys.stderr.write(shards_line(BAR_DESC, 0, num_shards, 0.0) + "\n")
    for shard in range(num_shards):
        time.sleep(shard_seconds)
        on_shard(shard)
        for name in names[shard * per_shard : (shard + 1) * per_shard]:
            yield name, None
        if shard == bad_shard and bad is not None:
            yield bad["name"], None
        if show_bar:
            line = shards_line(BAR_DESC, shard + 1, num_shards, time.monotonic() - start)
            sys.stderr.write(line + "\n")
