"""ModelRunner runs the forward passes of the models."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

import torch
from sglang.srt.distributed.parallel_state import (
    get_tp_group,
    init_distributed_environment,
    initialize_model_parallel,
)
from sglang.srt.mem_cache.memory_pool import MLATokenToKVPool
from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner
from sglang.srt.model_executor.forward_batch_info import (
    CaptureHiddenMode,
    ForwardBatch,
    ForwardMode,
)
from sglang.srt.model_loader.loader import get_model_loader
from simcore import gpuview

logger = logging.getLogger(__name__)
GiB = 1024**3
NUM_CHECKPOINT_SHARDS = 64


@dataclass
class LoadConfig:
    tp_size: int
    ep_size: int
    num_shards: int
    shard_seconds: float
    show_bar: bool
    on_shard: Any


@dataclass
class ModelRunnerOutput:
    logits_output: Any
    can_run_graph: bool


def empty_context() -> contextlib.nullcontext[None]:
    return contextlib.nullcontext()


class ModelRunner:
    """ModelRunner runs the forward passes of the models."""

    def __init__(
        self,
        model_config: Any,
        mem_fraction_static: float,
        gpu_id: int,
        tp_rank: int,
        tp_size: int,
        moe_ep_rank: int,
        moe_ep_size: int,
        pp_rank: int,
        pp_size: int,
        nccl_port: int,
        server_args: Any,
        dp_rank: int | None = None,
        is_draft_worker: bool = False,
        sim: Any = None,
    ) -> None:
        self.model_config = model_config
        self.mem_fraction_static = mem_fraction_static
        self.gpu_id = gpu_id
        self.tp_rank = tp_rank
        self.tp_size = tp_size
        self.moe_ep_rank = moe_ep_rank
        self.moe_ep_size = moe_ep_size
        self.pp_rank = pp_rank
        self.pp_size = pp_size
        self.dp_rank = dp_rank
        self.dist_port = nccl_port
        self.server_args = server_args
        self.is_draft_worker = is_draft_worker
        self.spec_algorithm = server_args.speculative_algorithm
        self.sim = sim
        self.graph_runner: CudaGraphRunner | None = None
        self.graph_mem_usage = 0.0
        if not is_draft_worker:
            min_per_gpu_memory = self.init_torch_distributed()
        else:
            self.tp_group = get_tp_group()
            min_per_gpu_memory = gpuview.avail_gb()
        self.initialize(min_per_gpu_memory)

    def init_torch_distributed(self) -> float:
        tic = time.perf_counter()
        logger.info("Init torch distributed begin.")
        self.sim.enter_phase("nccl_init")
        torch.cuda.set_device(self.gpu_id)
        if self.server_args.dist_init_addr:
            dist_init_method = f"tcp://{self.server_args.dist_init_addr}"
        else:
            dist_init_method = f"tcp://127.0.0.1:{self.dist_port}"
        init_distributed_environment(
            world_size=self.tp_size * self.pp_size,
            rank=self.tp_size * self.pp_rank + self.tp_rank,
            distributed_init_method=dist_init_method,
            local_rank=self.gpu_id,
        )
        initialize_model_parallel(
            tensor_model_parallel_size=self.tp_size,
            expert_model_parallel_size=self.moe_ep_size,
            rank=self.tp_rank,
            local_rank=self.gpu_id,
            barrier=self.sim.collective,
        )
        self.tp_group = get_tp_group()
        self.sim.work(self.sim.times.nccl_init)
        self.sim.set_memory(0.79 * GiB)
        self.sim.collective()
        self.sim.joined()
        logger.info(
            f"Init torch distributed ends. elapsed={time.perf_counter() - tic:.2f} s, "
            f"mem usage={gpuview.used() / GiB:.2f} GB"
        )
        return gpuview.avail_gb()

    def initialize(self, min_per_gpu_memory: float) -> None:
        self.load_model()
        self.init_memory_pool(min_per_gpu_memory)
        self.init_device_graphs()

    def load_model(self) -> None:
        tic = time.perf_counter()
        if not self.is_draft_worker:
            self.sim.enter_phase("weight_loading")
        before_avail = gpuview.avail_gb()
        logger.info(f"Load weight begin. avail mem={before_avail:.2f} GB")
        spec = self.model_config.spec
        if self.is_draft_worker:
            weight_bytes = 2.0 * spec.dense_params / self.tp_size
            num_shards, seconds = 1, self.sim.times.draft_weights
        else:
            weight_bytes = spec.weight_bytes_per_gpu(self.tp_size)
            num_shards, seconds = NUM_CHECKPOINT_SHARDS, self.sim.times.weight_loading
        load_config = LoadConfig(
            tp_size=self.tp_size,
            ep_size=self.moe_ep_size,
            num_shards=num_shards,
            shard_seconds=seconds / num_shards,
            show_bar=self.tp_rank == 0 and not self.dp_rank,
            on_shard=lambda _i: self.sim.add_memory(weight_bytes / num_shards),
        )
        self.loader = get_model_loader(load_config)
        self.model = self.loader.load_model(model_config=self.model_config, device_config=None)
        self.sim.collective()
        after_avail = gpuview.avail_gb()
        self.weight_load_mem_usage = before_avail - after_avail
        logger.info(
            f"Load weight end. elapsed={time.perf_counter() - tic:.2f} s, "
            f"type={type(self.model).__name__}, dtype=torch.bfloat16, "
            f"avail mem={after_avail:.2f} GB, mem usage={self.weight_load_mem_usage:.2f} GB."
        )

    def profile_max_num_token(self, total_gpu_memory: float) -> int:
        available = gpuview.avail_gb()
        cell_size = self.model_config.spec.kv_bytes_per_token
        rest_memory = available - total_gpu_memory * (1 - self.mem_fraction_static)
        return max(int(rest_memory * GiB // cell_size), 0)

    def init_memory_pool(self, total_gpu_memory: float) -> None:
        if not self.is_draft_worker:
            self.sim.enter_phase("kv_cache_alloc")
            self.max_total_num_tokens = self.profile_max_num_token(total_gpu_memory)
            if self.server_args.max_total_tokens is not None:
                self.max_total_num_tokens = min(
                    self.max_total_num_tokens, self.server_args.max_total_tokens
                )
        else:
            self.max_total_num_tokens = 4096 * 64
        if self.max_total_num_tokens <= 0:
            raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")
        spec = self.model_config.spec
        self.token_to_kv_pool = MLATokenToKVPool(
            size=self.max_total_num_tokens,
            page_size=self.server_args.page_size,
            dtype=torch.bfloat16,
            kv_lora_rank=spec.kv_lora_rank or 512,
            qk_rope_head_dim=spec.qk_rope_head_dim or 64,
            layer_num=spec.num_layers,
        )
        self.sim.work(self.sim.times.kv_cache_alloc * (0.1 if self.is_draft_worker else 1.0))
        self.sim.add_memory(self.token_to_kv_pool.get_kv_size_bytes())
        self.sim.collective()
        logger.info(f"Memory pool end. avail mem={gpuview.avail_gb():.2f} GB")

    def init_device_graphs(self) -> None:
        self.graph_runner = None
        if self.server_args.disable_cuda_graph:
            return
        if not self.is_draft_worker:
            self.sim.enter_phase("cuda_graph_capture")
        tic = time.perf_counter()
        before_mem = gpuview.avail_gb()
        kind = "draft cuda graph" if self.is_draft_worker else "cuda graph"
        logger.info(
            f"Capture {kind} begin. This can take up to several minutes. avail mem={before_mem:.2f} GB"
        )
        self.graph_runner = CudaGraphRunner(self)
        self.sim.collective()
        after_mem = gpuview.avail_gb()
        self.graph_mem_usage = before_mem - after_mem
        logger.info(
            f"Capture {kind} end. Time elapsed: {time.perf_counter() - tic:.2f} s. "
            f"mem usage={self.graph_mem_usage:.2f} GB. avail mem={after_mem:.2f} GB."
        )

    def _dummy_run(self, batch_size: int, run_ctx: Any = None) -> Any:
        """Run a dummy forward pass for warmup/profiling (and graph capture)."""
        capture_forward_mode = ForwardMode.DECODE
        capture_hidden_mode = CaptureHiddenMode.NULL
        num_tokens_per_bs = 1
        if self.spec_algorithm is not None:
            if self.is_draft_worker:
                num_tokens_per_bs = self.server_args.speculative_num_draft_tokens
            else:
                capture_forward_mode = ForwardMode.TARGET_VERIFY
                num_tokens_per_bs = self.server_args.speculative_num_draft_tokens
                capture_hidden_mode = CaptureHiddenMode.FULL
        num_tokens = batch_size * num_tokens_per_bs
        forward_batch = ForwardBatch(
            forward_mode=capture_forward_mode,
            batch_size=batch_size,
            num_tokens=num_tokens,
            capture_hidden_mode=capture_hidden_mode,
        )

        def run_once() -> Any:
            kwargs: dict[str, Any] = {}
            logits_output_or_pp_proxy_tensors = self.model.forward(
                forward_batch.input_ids,
                forward_batch.positions,
                forward_batch,
                **kwargs,
            )
            return logits_output_or_pp_proxy_tensors

        torch.cuda.synchronize()
        self.tp_group.barrier()
        with torch.inference_mode(), run_ctx or empty_context():
            return run_once()

    def forward_decode(self, forward_batch: ForwardBatch) -> Any:
        return self.model.forward(forward_batch.input_ids, forward_batch.positions, forward_batch)

    def forward_extend(self, forward_batch: ForwardBatch) -> Any:
        return self.model.forward(forward_batch.input_ids, forward_batch.positions, forward_batch)

    def forward(self, forward_batch: ForwardBatch) -> ModelRunnerOutput:
        can_run_graph = bool(
            forward_batch.forward_mode.is_cuda_graph()
            and self.graph_runner
            and self.graph_runner.can_run(forward_batch)
        )
        if can_run_graph:
            assert self.graph_runner is not None
            ret = self.graph_runner.replay(forward_batch)
            return ModelRunnerOutput(logits_output=ret, can_run_graph=can_run_graph)
        if forward_batch.forward_mode.is_extend():
            ret = self.forward_extend(forward_batch)
        else:
            ret = self.forward_decode(forward_batch)
        return ModelRunnerOutput(logits_output=ret, can_run_graph=can_run_graph)

    def sample(self, logits_output: Any, forward_batch: ForwardBatch) -> Any:
        return torch.argmax(logits_output.next_token_logits, dim=-1)
