"""Run the model with cuda graph (capture at startup, replay while serving)."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

import torch
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from simcore import faultpoint, gpuview
from simcore.bars import tqdm_line

logger = logging.getLogger(__name__)

CUDA_GRAPH_CAPTURE_FAILED_MSG = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


def get_batch_sizes_to_capture(model_runner: Any) -> list[int]:
    server_args = model_runner.server_args
    max_bs = server_args.cuda_graph_max_bs
    capture_bs = server_args.cuda_graph_bs
    if capture_bs is None:
        if server_args.speculative_algorithm is None:
            capture_bs = [
                1,
                2,
                4,
                8,
                12,
                *list(range(16, 257, 8)),
                *list(range(272, 512, 16)),
                *list(range(512, max_bs + 1, 32)),
            ]
        else:
            capture_bs = (
                list(range(1, 9))
                + list(range(10, 33, 2))
                + list(range(40, 64, 8))
                + list(range(80, 161, 16))
                + list(range(192, max_bs + 1, 32))
            )
    return sorted({bs for bs in capture_bs if bs <= max_bs})


@contextlib.contextmanager
def model_capture_mode() -> Iterator[None]:
    yield


@contextlib.contextmanager
def graph_capture() -> Iterator[None]:
    yield


class CudaGraphRunner:
    """A CudaGraphRunner runs the forward pass of a model with cuda graph and torch.compile."""

    def __init__(self, model_runner: Any) -> None:
        self.model_runner = model_runner
        self.is_draft = model_runner.is_draft_worker
        self.capture_bs = get_batch_sizes_to_capture(model_runner)
        self.max_bs = max(self.capture_bs)
        if model_runner.tp_rank == 0 and not self.is_draft:
            logger.info(f"Capture cuda graph bs {self.capture_bs}")
        try:
            with model_capture_mode():
                self.capture()
        except RuntimeError as e:
            raise Exception(  # noqa: B904 - chained implicitly, as SGLang does
                f"Capture cuda graph failed: {e}\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}"
            )

    def can_run(self, forward_batch: ForwardBatch) -> bool:
        return forward_batch.batch_size <= self.max_bs and not faultpoint.pending()

    def capture(self) -> None:
        sim = self.model_runner.sim
        show = self.model_runner.tp_rank == 0 and not self.model_runner.dp_rank
        total_s = (
            sim.times.draft_capture
            if self.is_draft
            else sim.times.capture_per_bs * len(self.capture_bs)
        )
        per_bs = total_s / len(self.capture_bs)
        graph_bytes = (0.6 if self.is_draft else 2.9) * 1024**3

        def _capture_one_stream(stream_idx: int | None = None) -> None:
            capture_range = list(reversed(self.capture_bs))
            start = time.monotonic()
            desc, done = "Capturing batches", 0
            try:
                for i, bs in enumerate(capture_range):
                    avail_mem = gpuview.avail_gb()
                    desc = f"Capturing batches ({bs=} {avail_mem=:.2f} GB)"
                    self.capture_one_batch_size(bs, self.model_runner.model.forward, stream_idx)
                    sim.work(per_bs)
                    sim.add_memory(graph_bytes / len(capture_range))
                    done = i + 1
                    if show and done < len(capture_range):
                        sys.stderr.write(
                            "\r"
                            + tqdm_line(desc, done, len(capture_range), time.monotonic() - start)
                        )
            finally:
                if show:
                    sys.stderr.write(
                        "\r"
                        + tqdm_line(desc, done, len(capture_range), time.monotonic() - start)
                        + "\n"
                    )

        with graph_capture():
            _capture_one_stream()

    def capture_one_batch_size(self, bs: int, forward: Any, stream_idx: int | None = None) -> Any:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self.model_runner._dummy_run(bs)
        return graph, out

    def replay(self, forward_batch: ForwardBatch, **kwargs: Any) -> Any:
        from sglang.srt.models.deepseek_v2 import LogitsProcessorOutput

        return LogitsProcessorOutput(torch.empty(forward_batch.num_tokens, 1, dtype=torch.float32))
