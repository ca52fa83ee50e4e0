"""A scheduler that manages a tensor parallel GPU worker (one process per rank)."""

from __future__ import annotations

import logging
import multiprocessing
import os
import random
import signal
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from sglang.srt.managers.scheduler_metrics_mixin import SchedulerMetricsMixin
from sglang.srt.managers.tp_worker import TpModelWorker
from sglang.srt.model_executor.forward_batch_info import ForwardMode
from sglang.srt.speculative.spec_info import spec_worker_class
from sglang.srt.utils import (
    configure_logger,
    get_exception_traceback,
    kill_itself_when_parent_died,
    set_process_title,
)
from simcore import faultpoint
from simcore.perf import Deployment, PerfModel

logger = logging.getLogger(__name__)
LOAD_PUBLISH_S = 0.25
STATS_PUBLISH_S = 0.5
OVERLAP_SLACK_S = 0.005


@dataclass
class Req:
    rid: int
    input_len: int
    max_new_tokens: int
    stop_at: int | None
    rng: random.Random
    p_scale: float
    is_warmup: bool = False
    out_len: int = 0
    u: float = -1.0

    def next_uniform(self) -> float:
        """Golden-ratio sequence from a per-request start: geometric marginals, low variance."""
        if self.u < 0:
            self.u = self.rng.random()
        self.u = (self.u + 0.6180339887498949) % 1.0
        return self.u

    @property
    def target_len(self) -> int:
        return (
            self.max_new_tokens if self.stop_at is None else min(self.max_new_tokens, self.stop_at)
        )


@dataclass
class ScheduleBatch:
    forward_mode: ForwardMode
    reqs: list[Req] = field(default_factory=list)
    extend_tokens: int = 0
    is_strike: bool = False
    num_draft_tokens: int = 1

    @property
    def batch_size(self) -> int:
        return max(len(self.reqs), 1)

    @property
    def seq_lens_sum(self) -> int:
        return sum(r.input_len + r.out_len for r in self.reqs)

    def num_tokens(self, is_verify: bool) -> int:
        if self.forward_mode.is_extend():
            return max(self.extend_tokens, 1)
        return self.batch_size * (self.num_draft_tokens if is_verify else 1)


class Scheduler(SchedulerMetricsMixin):
    """A scheduler that manages a tensor parallel GPU worker."""

    def __init__(
        self,
        server_args: Any,
        port_args: Any,
        gpu_id: int,
        tp_rank: int,
        moe_ep_rank: int,
        pp_rank: int,
        dp_rank: int | None,
        sim: Any,
        strike: Any,
    ) -> None:
        self.server_args = server_args
        self.port_args = port_args
        self.gpu_id = gpu_id
        self.tp_rank = tp_rank
        self.moe_ep_rank = moe_ep_rank
        self.pp_rank = pp_rank
        self.dp_rank = dp_rank
        self.sim = sim
        self.strike = strike
        self.is_leader = tp_rank == 0 and pp_rank == 0
        self.spec_algorithm = server_args.speculative_algorithm
        self.init_model_worker()
        self.max_total_num_tokens = self.tp_worker.max_total_num_tokens
        self.context_len = self.tp_worker.model_config.context_len
        self.max_req_input_len = min(self.context_len - 1, self.max_total_num_tokens - 1)
        self.max_running_requests = server_args.max_running_requests or min(
            4096, max(self.max_total_num_tokens // 2, 1)
        )
        self.running: list[Req] = []
        self.waiting: list[Req] = []
        self.init_metrics()
        self.init_simulated_gpu()
        if tp_rank == 0:
            logger.info(
                f"max_total_num_tokens={self.max_total_num_tokens}, "
                f"chunked_prefill_size={server_args.chunked_prefill_size}, "
                f"max_prefill_tokens={server_args.max_prefill_tokens}, "
                f"max_running_requests={self.max_running_requests}, "
                f"context_len={self.context_len}, "
                f"available_gpu_mem={self.sim_avail_gb():.2f} GB"
            )

    def init_model_worker(self) -> None:
        sa = self.server_args
        self.tp_worker = TpModelWorker(
            sa,
            self.gpu_id,
            self.tp_rank,
            self.moe_ep_rank,
            self.pp_rank,
            self.dp_rank,
            self.port_args.nccl_port,
            sim=self.sim,
        )
        self.model_worker: Any = self.tp_worker
        if self.spec_algorithm is not None:
            worker_cls = spec_worker_class(self.spec_algorithm)
            self.model_worker = worker_cls(
                sa,
                self.gpu_id,
                self.tp_rank,
                self.dp_rank,
                self.moe_ep_rank,
                self.port_args.nccl_port,
                target_worker=self.tp_worker,
                sim=self.sim,
            )

    def init_simulated_gpu(self) -> None:
        sa = self.server_args
        runner = self.tp_worker.model_runner
        dep = Deployment(
            tp=sa.tp_size,
            ep=sa.ep_size,
            dp=sa.dp_size,
            nvls=sa.enable_nccl_nvls,
            allreduce_fusion=sa.enable_flashinfer_allreduce_fusion,
            cuda_graph=not sa.disable_cuda_graph,
            cuda_graph_max_bs=runner.graph_runner.max_bs if runner.graph_runner else 0,
            spec_algorithm=self.spec_algorithm,
            spec_num_draft_tokens=sa.speculative_num_draft_tokens or 0,
            spec_num_steps=sa.speculative_num_steps or 0,
        )
        self.perf = PerfModel(self.tp_worker.model_config.spec, self.sim.host, dep)
        self.jitter = random.Random(sa.sim_seed * 7919 + self.tp_rank)
        self.speed = max(sa.sim_speed, 1e-6)
        self.gpu_busy_until = 0.0
        self.busy_acc = 0.0
        self.last_load_pub = self.last_stats_pub = time.monotonic()
        self.last_cuda_graph = True
        self.num_requests = 0
        self.serving_start: float | None = None
        self.pending_batch: ScheduleBatch | None = None
        self.leader_conn = self.port_args.leader_conn
        self.follower_conns = self.port_args.follower_conns

    def sim_avail_gb(self) -> float:
        from simcore import gpuview

        return gpuview.avail_gb()

    # ---- shared loop ----------------------------------------------------------------------
    @torch.no_grad()
    def event_loop_overlap(self) -> None:
        """The scheduler loop: receive, schedule, run one batch, process its result."""
        while True:
            recv_reqs = self.recv_requests()
            self.process_input_requests(recv_reqs)
            batch = self.get_next_batch_to_run()
            if batch:
                batch_result = self.run_batch(batch)
                self.process_batch_result(batch, batch_result)
            else:
                self.self_check_during_idle()

    def start_serving(self) -> None:
        warm = not self.server_args.skip_server_warmup
        self.set_phase("warmup" if warm else "serving")

    def set_phase(self, phase: str) -> None:
        faultpoint.set_phase(phase)
        if phase == "serving":
            self.serving_start = time.monotonic()
        if self.is_leader:
            self.broadcast(("phase", phase))

    def broadcast(self, msg: Any) -> None:
        for conn in self.follower_conns:
            conn.send(msg)

    def recv_requests(self) -> list[Any]:
        conn = self.leader_conn
        if not self.is_leader:
            return [conn.recv()]
        idle = not self.running and not self.waiting
        msgs = []
        if conn.poll(LOAD_PUBLISH_S if idle else 0):
            msgs.append(conn.recv())
            while conn.poll():
                msgs.append(conn.recv())
        return msgs

    def process_input_requests(self, recv_reqs: list[Any]) -> None:
        for msg in recv_reqs:
            kind = msg[0]
            if kind == "req":
                _, rid, input_len, max_new, stop_at, seed, is_warmup = msg
                rng = random.Random(seed)
                self.waiting.append(
                    Req(rid, input_len, max_new, stop_at, rng, rng.uniform(0.985, 1.015), is_warmup)
                )
                if not is_warmup:
                    self.num_requests += 1
            elif kind == "abort":
                self.running = [r for r in self.running if r.rid != msg[1]]
                self.waiting = [r for r in self.waiting if r.rid != msg[1]]
            elif kind == "load":
                self.sim.publish_load(*msg[1:])
            elif kind == "phase":
                self.set_phase(msg[1])
            elif kind == "batch":
                self.pending_batch = ScheduleBatch(
                    ForwardMode(msg[1]),
                    extend_tokens=msg[2],
                    is_strike=True,
                    num_draft_tokens=msg[3],
                )

    def get_next_batch_to_run(self) -> ScheduleBatch | None:
        if not self.is_leader:
            batch, self.pending_batch = self.pending_batch, None
            if batch is not None and faultpoint.armed() is None:
                self.sim.hang()
            if batch is not None:
                faultpoint.fire()
            return batch
        batch = self.get_new_batch_prefill() or self.get_decode_batch()
        if batch is not None and self.strike_due(batch):
            batch.is_strike = True
            self.broadcast(
                ("batch", int(batch.forward_mode), batch.extend_tokens, batch.num_draft_tokens)
            )
            if faultpoint.armed() is None:
                self.sim.hang()
            faultpoint.fire()
        return batch

    def strike_due(self, batch: ScheduleBatch) -> bool:
        s = self.strike
        if s is None or s.phase != faultpoint.phase():
            return False
        if s.phase == "warmup":
            return any(r.is_warmup for r in batch.reqs)
        start = self.serving_start or time.monotonic()
        return (
            time.monotonic() - start >= s.fault.after_seconds
            and self.num_requests >= s.fault.after_requests
        )

    def get_new_batch_prefill(self) -> ScheduleBatch | None:
        if not self.waiting:
            return None
        budget = max(self.server_args.chunked_prefill_size, 1)
        room = self.max_running_requests - len(self.running)
        used = self.num_used_tokens()
        batch = ScheduleBatch(ForwardMode.EXTEND, num_draft_tokens=self.num_draft_tokens())
        while self.waiting and room > 0:
            req = self.waiting[0]
            if batch.reqs and batch.extend_tokens + req.input_len > budget:
                break
            if used + req.input_len + req.target_len > self.max_total_num_tokens and (
                self.running or batch.reqs
            ):
                break
            self.waiting.pop(0)
            batch.reqs.append(req)
            batch.extend_tokens += req.input_len
            used += req.input_len
            room -= 1
        if not batch.reqs:
            return None
        self.log_prefill_stats(batch)
        return batch

    def get_decode_batch(self) -> ScheduleBatch | None:
        if not self.running:
            return None
        return ScheduleBatch(
            ForwardMode.DECODE, list(self.running), num_draft_tokens=self.num_draft_tokens()
        )

    def num_draft_tokens(self) -> int:
        return self.server_args.speculative_num_draft_tokens or 1

    def run_batch(self, batch: ScheduleBatch) -> Any:
        if not batch.is_strike:
            self.wait_for_gpu(batch)
        return self.model_worker.forward_batch_generation(batch)

    def wait_for_gpu(self, batch: ScheduleBatch) -> None:
        """Hold the batch for the GPU time the performance model gives it."""
        kv = batch.seq_lens_sum
        if batch.forward_mode.is_extend():
            step = self.perf.prefill_s(batch.extend_tokens, kv)
        else:
            step = self.perf.decode_step_s(batch.batch_size, kv)
            self.last_cuda_graph = self.perf.uses_graph(batch.batch_size)
        step *= 1.0 + self.jitter.gauss(0.0, self.perf.t.jitter)
        step = max(step, 0.0) / self.speed
        now = time.monotonic()
        # overlap scheduling: CPU work for this batch ran while the previous one was on the GPU
        start = self.gpu_busy_until if now - self.gpu_busy_until < OVERLAP_SLACK_S else now
        self.gpu_busy_until = start + step
        self.busy_acc += step
        delay = self.gpu_busy_until - now
        if delay > 0:
            time.sleep(delay)

    def process_batch_result(self, batch: ScheduleBatch, result: Any) -> None:
        next_token_ids = result.next_token_ids.tolist()
        if not self.is_leader:
            return
        del next_token_ids
        outputs = []
        if batch.forward_mode.is_extend():
            for req in batch.reqs:
                req.out_len = 1
                self.running.append(req)
                outputs.append((req.rid, 1, self.finish_reason(req), 0))
            self.num_generated_tokens += len(batch.reqs)
        else:
            spec = self.spec_algorithm is not None
            for req in batch.reqs:
                n = self.perf.sample_accepted(req.next_uniform(), req.p_scale) if spec else 1
                if spec:
                    self.spec_num_accepted += n
                    self.spec_num_verify += 1
                    self.cum_spec_accept_length += n
                    self.cum_spec_accept_count += 1
                n = min(n, req.target_len - req.out_len)
                req.out_len += n
                # the 4th field: verify calls this step made for the request (SGLang's spec_verify_ct)
                outputs.append((req.rid, n, self.finish_reason(req), 1 if spec else 0))
                self.num_generated_tokens += n
            self.forward_ct_decode += 1
            if self.forward_ct_decode % self.server_args.decode_log_interval == 0:
                self.log_decode_stats(self.last_cuda_graph)
        finished = {rid for rid, _, fin, _ in outputs if fin is not None}
        if finished:
            for req in self.running:
                if req.rid in finished and req.is_warmup and faultpoint.phase() == "warmup":
                    self.set_phase("serving")
            self.running = [r for r in self.running if r.rid not in finished]
        self.leader_conn.send(("out", outputs))
        self.publish_periodic()

    @staticmethod
    def finish_reason(req: Req) -> str | None:
        if req.out_len < req.target_len:
            return None
        if req.stop_at is not None and req.stop_at <= req.max_new_tokens:
            return "stop"
        return "length"

    def self_check_during_idle(self) -> None:
        if self.is_leader:
            self.publish_periodic()

    def publish_periodic(self) -> None:
        now = time.monotonic()
        if now - self.last_load_pub >= LOAD_PUBLISH_S:
            window = now - self.last_load_pub
            busy = min(self.busy_acc, window)
            self.busy_acc = 0.0
            self.last_load_pub = now
            host = self.sim.host
            util = 100.0 * busy / window
            power = (
                host.context_power_w + (host.membound_power_w - host.context_power_w) * util / 100
            )
            power *= 1.0 + self.jitter.gauss(0.0, 0.01)
            load = (util, util * 0.62, min(power, host.power_limit_w))
            self.sim.publish_load(*load)
            self.broadcast(("load", *load))
        if now - self.last_stats_pub >= STATS_PUBLISH_S:
            self.last_stats_pub = now
            self.leader_conn.send(("stats", self.stats_snapshot()))

    def num_used_tokens(self) -> int:
        return sum(r.input_len + r.out_len for r in self.running)

    def token_usage(self) -> float:
        return self.num_used_tokens() / max(self.max_total_num_tokens, 1)


def run_scheduler_process(
    server_args: Any,
    port_args: Any,
    gpu_id: int,
    tp_rank: int,
    moe_ep_rank: int,
    pp_rank: int,
    dp_rank: int | None,
    pipe_writer: Any,
    rank_setup: Any,
) -> None:
    prefix = ""
    if dp_rank is not None:
        prefix += f" DP{dp_rank}"
    if server_args.pp_size > 1:
        prefix += f" PP{pp_rank}"
    if server_args.tp_size > 1:
        prefix += f" TP{tp_rank}"
    if server_args.ep_size > 1:
        prefix += f" EP{moe_ep_rank}"
    kill_itself_when_parent_died()
    set_process_title(f"sglang::scheduler{prefix.replace(' ', '_')}")
    configure_logger(server_args, prefix=prefix)
    server = multiprocessing.parent_process()  # the server (the fork server is the rank's own parent)
    parent_process = server.pid if server is not None and server.pid is not None else os.getppid()
    sim, strike = rank_setup.build(f"sglang::scheduler{prefix.replace(' ', '_')}")
    try:
        scheduler = Scheduler(
            server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank, sim, strike
        )
        pipe_writer.send(
            {
                "status": "ready",
                "max_total_num_tokens": scheduler.max_total_num_tokens,
                "max_req_input_len": scheduler.max_req_input_len,
                "context_len": scheduler.context_len,
                "max_running_requests": scheduler.max_running_requests,
                "weight_mem": scheduler.tp_worker.model_runner.weight_load_mem_usage,
                "graph_mem": scheduler.tp_worker.model_runner.graph_mem_usage,
            }
        )
        if scheduler.is_leader:
            scheduler.start_serving()
        scheduler.event_loop_overlap()
    except Exception:
        traceback = get_exception_traceback()
        logger.error(f"Scheduler hit an exception: {traceback}")
        os.kill(parent_process, signal.SIGQUIT)
