"""Periodic batch statistics (the ``Prefill batch.`` / ``Decode batch.`` lines and gauges)."""

from __future__ import annotations

import logging
import time
from typing import Any

logger = logging.getLogger("sglang.srt.managers.scheduler")


class SchedulerMetricsMixin:
    def init_metrics(self) -> None:
        self.last_decode_stats_tic = time.perf_counter()
        self.num_generated_tokens = 0
        self.forward_ct_decode = 0
        self.spec_num_accepted = 0
        self.spec_num_verify = 0
        self.cum_spec_accept_length = 0
        self.cum_spec_accept_count = 0
        self.last_gen_throughput = 0.0
        self.last_spec_accept_length = 0.0

    def log_prefill_stats(self: Any, batch: Any) -> None:
        logger.info(
            f"Prefill batch. #new-seq: {len(batch.reqs)}, #new-token: {batch.extend_tokens}, "
            f"#cached-token: 0, token usage: {self.token_usage():.2f}, "
            f"#running-req: {len(self.running)}, #queue-req: {len(self.waiting)}, "
        )

    def log_decode_stats(self: Any, can_run_cuda_graph: bool) -> None:
        gap = time.perf_counter() - self.last_decode_stats_tic
        self.last_decode_stats_tic = time.perf_counter()
        self.last_gen_throughput = self.num_generated_tokens / gap if gap > 0 else 0.0
        self.num_generated_tokens = 0
        msg = (
            f"Decode batch. #running-req: {len(self.running)}, #token: {self.num_used_tokens()}, "
            f"token usage: {self.token_usage():.2f}, "
        )
        if self.spec_algorithm is not None:
            self.last_spec_accept_length = (
                self.spec_num_accepted / self.spec_num_verify if self.spec_num_verify else 1.0
            )
            self.spec_num_accepted = self.spec_num_verify = 0
            msg += f"accept len: {self.last_spec_accept_length:.2f}, "
        msg += (
            f"cuda graph: {can_run_cuda_graph}, gen throughput (token/s): "
            f"{self.last_gen_throughput:.2f}, #queue-req: {len(self.waiting)}, "
        )
        logger.info(msg)

    def stats_snapshot(self: Any) -> dict[str, Any]:
        return {
            "num_running_reqs": len(self.running),
            "num_queue_reqs": len(self.waiting),
            "num_used_tokens": self.num_used_tokens(),
            "token_usage": self.token_usage(),
            "gen_throughput": self.last_gen_throughput,
            "spec_accept_length": self.last_spec_accept_length,
            "avg_spec_accept_length": (
                self.cum_spec_accept_length / self.cum_spec_accept_count
                if self.cum_spec_accept_count
                else None
            ),
            "cuda_graph": self.last_cuda_graph,
            "max_total_num_tokens": self.max_total_num_tokens,
        }
