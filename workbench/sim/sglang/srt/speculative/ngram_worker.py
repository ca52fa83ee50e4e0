"""N-gram (prompt lookup) speculative decoding."""

from sglang.srt.speculative.spec_worker_base import SpecWorkerBase


class NGRAMWorker(SpecWorkerBase):
    pass
