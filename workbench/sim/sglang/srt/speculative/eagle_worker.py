"""EAGLE / EAGLE3 / NEXTN / STANDALONE speculative decoding."""

from sglang.srt.speculative.spec_worker_base import SpecWorkerBase


class EAGLEWorker(SpecWorkerBase):
    pass
