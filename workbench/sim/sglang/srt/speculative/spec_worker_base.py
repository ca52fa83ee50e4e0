"""Shared speculative-decoding worker: draft with a small model, verify with the target."""

from __future__ import annotations

from typing import Any

from sglang.srt.managers.tp_worker import GenerationBatchResult, TpModelWorker
from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode


class SpecWorkerBase:
    def __init__(
        self,
        server_args: Any,
        gpu_id: int,
        tp_rank: int,
        dp_rank: int | None,
        moe_ep_rank: int,
        nccl_port: int,
        target_worker: TpModelWorker,
        sim: Any,
    ) -> None:
        self.server_args = server_args
        self.target_worker = target_worker
        self.num_draft_tokens = server_args.speculative_num_draft_tokens
        self.draft_worker = TpModelWorker(
            server_args,
            gpu_id,
            tp_rank,
            moe_ep_rank,
            0,
            dp_rank,
            nccl_port,
            is_draft_worker=True,
            sim=sim,
        )
        self.draft_model_runner = self.draft_worker.model_runner

    def forward_batch_generation(self, batch: Any) -> GenerationBatchResult:
        if batch.forward_mode.is_extend():
            batch_result = self.target_worker.forward_batch_generation(batch)
            self.forward_draft_extend(batch)
            return batch_result
        spec_info = self.draft(batch)
        return self.verify(batch, spec_info)

    def forward_draft_extend(self, batch: Any) -> None:
        forward_batch = ForwardBatch(
            ForwardMode.DRAFT_EXTEND, batch.batch_size, batch.num_tokens(False)
        )
        self.draft_model_runner.forward(forward_batch)

    def draft(self, batch: Any) -> Any:
        forward_batch = ForwardBatch(
            ForwardMode.DECODE, batch.batch_size, batch.batch_size * self.num_draft_tokens
        )
        return self.draft_model_runner.forward(forward_batch)

    def verify(self, batch: Any, spec_info: Any) -> GenerationBatchResult:
        batch_result = self.target_worker.forward_batch_generation(batch, is_verify=True)
        next_token_ids = self.target_worker.model_runner.sample(batch_result.logits_output, batch)
        batch_result.next_token_ids = next_token_ids
        return batch_result
