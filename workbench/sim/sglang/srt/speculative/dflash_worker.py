"""DFlash / DDTree speculative decoding: block-diffusion drafts verified as a token tree."""

from sglang.srt.speculative.spec_worker_base import SpecWorkerBase


class DFlashWorker(SpecWorkerBase):
    pass
