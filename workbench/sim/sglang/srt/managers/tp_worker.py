"""A tensor parallel worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode
from sglang.srt.model_executor.model_runner import ModelRunner


@dataclass
class GenerationBatchResult:
    logits_output: Any = None
    next_token_ids: Any = None
    can_run_cuda_graph: bool = False
    accept_lengths: list[int] | None = None


class TpModelWorker:
    """A tensor parallel worker."""

    def __init__(
        self,
        server_args: Any,
        gpu_id: int,
        tp_rank: int,
        moe_ep_rank: int,
        pp_rank: int,
        dp_rank: int | None,
        nccl_port: int,
        is_draft_worker: bool = False,
        sim: Any = None,
    ) -> None:
        self.server_args = server_args
        self.tp_rank = tp_rank
        self.model_config = ModelConfig.from_server_args(
            server_args,
            model_path=(server_args.speculative_draft_model_path if is_draft_worker else None),
            is_draft_model=is_draft_worker,
        )
        self.model_runner = ModelRunner(
            model_config=self.model_config,
            mem_fraction_static=server_args.mem_fraction_static,
            gpu_id=gpu_id,
            tp_rank=tp_rank,
            tp_size=server_args.tp_size,
            moe_ep_rank=moe_ep_rank,
            moe_ep_size=server_args.ep_size,
            pp_rank=pp_rank,
            pp_size=server_args.pp_size,
            nccl_port=nccl_port,
            server_args=server_args,
            dp_rank=dp_rank,
            is_draft_worker=is_draft_worker,
            sim=sim,
        )
        self.max_total_num_tokens = self.model_runner.max_total_num_tokens

    def forward_batch_generation(
        self, model_worker_batch: Any, is_verify: bool = False
    ) -> GenerationBatchResult:
        forward_batch = ForwardBatch(
            forward_mode=ForwardMode.TARGET_VERIFY
            if is_verify
            else model_worker_batch.forward_mode,
            batch_size=model_worker_batch.batch_size,
            num_tokens=model_worker_batch.num_tokens(is_verify),
            seq_lens_sum=model_worker_batch.seq_lens_sum,
        )
        out = self.model_runner.forward(forward_batch)
        logits_output, can_run_cuda_graph = out.logits_output, out.can_run_graph
        if is_verify:
            return GenerationBatchResult(
                logits_output=logits_output, can_run_cuda_graph=can_run_cuda_graph
            )
        next_token_ids = self.model_runner.sample(logits_output, forward_batch)
        return GenerationBatchResult(
            logits_output=logits_output,
            next_token_ids=next_token_ids,
            can_run_cuda_graph=can_run_cuda_graph,
        )
