from __future__ import annotations

from typing import Any


def spec_worker_class(algorithm: str) -> Any:
    if algorithm in ("DFLASH", "DDTREE"):
        from sglang.srt.speculative.dflash_worker import DFlashWorker

        return DFlashWorker
    if algorithm == "NGRAM":
        from sglang.srt.speculative.ngram_worker import NGRAMWorker

        return NGRAMWorker
    from sglang.srt.speculative.eagle_worker import EAGLEWorker

    return EAGLEWorker
