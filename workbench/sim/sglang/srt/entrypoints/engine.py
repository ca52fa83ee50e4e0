"""Launch the scheduler processes (one per rank) and wait until they are ready."""

from __future__ import annotations

import logging
import multiprocessing as mp
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.managers.scheduler import run_scheduler_process
from sglang.srt.server_args import flag_view
from sglang.srt.utils import configure_logger, kill_process_tree
from simcore.faults import FaultFileError, find_fault_file, load_fault_file, select_strike
from simcore.hostcfg import HostConfigError, load_host
from simcore.multinode import node_layout
from simcore.rankenv import RankSetup
from simcore.timing import phase_times

logger = logging.getLogger(__name__)


@dataclass
class PortArgs:
    nccl_port: int
    leader_conn: Any = None
    follower_conns: list[Any] = field(default_factory=list)


@dataclass
class LaunchState:
    procs: list[Any] = field(default_factory=list)
    failing: list[Any] = field(default_factory=list)
    sigquit: threading.Event = field(default_factory=threading.Event)
    killer: threading.Thread | None = None


_state = LaunchState()
KILLER_LIMIT = 30.0  # seconds: the killer's own bounds (5 s for the failing ranks, 5 s for the tree) and a margin
# seconds after a SIGQUIT before SIGALRM ends the launcher if nothing else has: under Slurm a failed --ep-size 8 start
# was seen to outlive both sigquit lines and the killer (stops 27, 36 and 37; cause not found). Beyond the killer's own
# bound, so that the backstop never pre-empts a killer that is merely slow (a loaded machine: a fresh clone's unit lane,
# beside the integration lane, saw a --tp 4 serving fault end by SIGALRM at 20 s, stop 40); a test may shorten it
KILL_ALARM = int(os.environ.get("WB_SIM_KILL_ALARM", KILLER_LIMIT + 15))


def _kill_after_failed_children() -> None:
    """Once a rank has signalled, let the failing ranks finish printing and exit, then take the whole tree down.

    Started with the launch, not from the SIGQUIT handler: a thread started inside a handler waits for the
    new thread while the main thread is interrupted wherever it was, and the handler only sets an event."""
    _state.sigquit.wait()
    sentinels = [p.sentinel for p in (_state.failing or _state.procs)]
    deadline = time.monotonic() + (5.0 if _state.failing else 2.0)
    while sentinels and time.monotonic() < deadline:
        ready = multiprocessing.connection.wait(sentinels, timeout=deadline - time.monotonic())
        sentinels = [s for s in sentinels if s not in ready]
    kill_process_tree(os.getpid())


def _set_envs_and_config(server_args: Any) -> None:
    os.environ["NCCL_CUMEM_ENABLE"] = "0"
    os.environ["NCCL_NVLS_ENABLE"] = str(int(server_args.enable_nccl_nvls))

    def sigquit_handler(signum: int, frame: Any) -> None:
        # the kernel's own deadline first: SIGALRM's default action ends this process whatever its threads do (the
        # killer below normally SIGKILLs the tree well before it; the ranks follow their fork server by PDEATHSIG)
        signal.alarm(KILL_ALARM)
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        _state.sigquit.set()

    if _state.killer is None:
        _state.killer = threading.Thread(target=_kill_after_failed_children, daemon=True)
        _state.killer.start()
    # SIGALRM as the kernel's deadline (sigquit_handler): its default action, and not blocked, whatever the process
    # that started this one left it (a disposition of SIG_IGN and a blocked mask both survive exec)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
    signal.signal(signal.SIGQUIT, sigquit_handler)


def _fatal_config(message: str) -> None:
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()
    raise SystemExit(2)


def _recv_ready(readers: list[Any]) -> list[dict[str, Any]]:
    scheduler_infos = []
    for rank, reader, proc in readers:
        try:
            data = reader.recv()
        except EOFError:
            if _state.sigquit.is_set() and _state.killer is not None:
                # the killer ends this process; should it be stuck, the tree is taken down from here
                _state.killer.join(KILLER_LIMIT)
                kill_process_tree(os.getpid())
            proc.join()
            logger.error(f"Rank {rank} scheduler is dead. Please check if there are relevant logs.")
            logger.error(f"Exit code: {proc.exitcode}")
            raise
        if data["status"] != "ready":
            raise RuntimeError("Initialization failed. Please see the error messages above.")
        scheduler_infos.append(data)
    return scheduler_infos


def _stop_on_term(signum: int, frame: Any) -> None:
    raise SystemExit(0)  # the launcher's finally kills the ranks and waits until they are gone


def _wait_nonzero_node(readers: list[Any]) -> None:
    # A node after the head serves nothing: asked to stop, it ends its ranks before it ends itself, so
    # the service manager never finds them left in the unit's cgroup (dying on their own by PDEATHSIG
    # after the main process, they raced the unit's next start on the testbed: 219/CGROUP).
    signal.signal(signal.SIGTERM, _stop_on_term)
    _recv_ready(readers)
    procs = [proc for _, _, proc in readers]
    ended = multiprocessing.connection.wait([p.sentinel for p in procs])
    for proc in procs:
        if proc.sentinel in ended:
            proc.join()
            logger.error(
                f"Scheduler or DataParallelController {proc.pid} terminated with {proc.exitcode}"
            )
    kill_process_tree(os.getpid(), include_parent=False)
    raise SystemExit(1)


def _launch_subprocesses(server_args: Any) -> tuple[list[Any], dict[str, Any], Any]:
    configure_logger(server_args)
    logger.info(f"{server_args=}")
    _set_envs_and_config(server_args)
    model_config = ModelConfig.from_server_args(server_args)
    if server_args.speculative_draft_model_path:
        ModelConfig.from_server_args(server_args, server_args.speculative_draft_model_path, True)
    try:
        host = load_host(server_args.sim_host_file)
    except HostConfigError as e:
        _fatal_config(f"sglang-sim: bad host file: {e}")
    view = flag_view(server_args)
    path = find_fault_file(server_args.sim_fault_file)
    try:
        faults = load_fault_file(path, view.options)
    except FaultFileError as e:
        _fatal_config(f"sglang-sim: bad fault file: {e}")
    tp, ep = server_args.tp_size, server_args.ep_size
    groups = 1 if server_args.enable_dp_attention else server_args.dp_size
    world = tp * server_args.pp_size * groups
    nodes = node_layout(server_args, world)
    if nodes.error:
        _fatal_config(nodes.error)
    strike = select_strike(
        faults,
        view,
        world,
        server_args.sim_seed,
        warmup_enabled=not server_args.skip_server_warmup,
        graphs_enabled=not server_args.disable_cuda_graph,
        nnodes=server_args.nnodes,
    )
    if server_args.mem_fraction_static is None:
        server_args.mem_fraction_static = 0.86 if server_args.speculative_algorithm else 0.88
    if server_args.cuda_graph_max_bs is None:
        big = host.memory_total_mib > 180 * 1024
        server_args.cuda_graph_max_bs = (
            (256 if server_args.speculative_algorithm else 512) if big else 160
        )
    times = phase_times(model_config.spec, tp, server_args.speculative_algorithm is not None)
    times = times.scaled(server_args.sim_time_scale)
    # SGLang spawns its ranks; a fork server that has imported the scheduler once makes each rank a fork
    # of a clean process (no threads, no server state) instead of a fresh interpreter importing it again
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["sglang.srt.managers.scheduler"])
    barrier = ctx.Barrier(world) if nodes.dist is None else None
    state_dir = server_args.sim_gpu_state_dir
    leader_conns, readers = [], []
    launched_at = time.time()
    for g in range(groups):
        main_conn, sched_conn = ctx.Pipe(duplex=True)
        follower_pipes = [ctx.Pipe(duplex=False) for _ in range(tp * server_args.pp_size - 1)]
        leader_conns.append(main_conn)
        for local in range(tp * server_args.pp_size):
            pp_rank, tp_rank = divmod(local, tp)
            rank = g * tp * server_args.pp_size + local
            if rank not in nodes.ranks:
                continue
            if server_args.enable_dp_attention and server_args.dp_size > 1:
                dp_rank: int | None = tp_rank // max(tp // server_args.dp_size, 1)
            else:
                dp_rank = g if server_args.dp_size > 1 else None
            moe_ep_rank = tp_rank // max(tp // ep, 1)
            gpu_id = server_args.base_gpu_id + (rank - nodes.ranks.start) * server_args.gpu_id_step
            if local == 0 or rank == nodes.ranks.start:
                base = g * tp * server_args.pp_size + 1
                followers = [w for i, (_, w) in enumerate(follower_pipes) if base + i in nodes.ranks]
                port_args = PortArgs(server_args.port + 233, sched_conn, followers)
            else:
                port_args = PortArgs(server_args.port + 233, follower_pipes[local - 1][0], [])
            reader, writer = ctx.Pipe(duplex=False)
            setup = RankSetup(
                rank,
                world,
                gpu_id,
                host,
                times,
                barrier,
                state_dir,
                server_args.sim_seed,
                strike,
                launched_at,
                nodes.dist,
            )
            proc = ctx.Process(
                target=run_scheduler_process,
                args=(
                    server_args,
                    port_args,
                    gpu_id,
                    tp_rank,
                    moe_ep_rank,
                    pp_rank,
                    dp_rank,
                    writer,
                    setup,
                ),
            )
            proc.start()
            writer.close()
            _state.procs.append(proc)
            if strike is not None and rank in strike.ranks:
                _state.failing.append(proc)
            readers.append((rank, reader, proc))
        if server_args.dp_size > 1 and not server_args.enable_dp_attention:
            logger.info(f"Launch DP{g} starting at GPU #{g * tp}.")
    if server_args.node_rank >= 1:
        # Nodes other than 0 run no tokenizer or HTTP server: their ranks serve node 0's leader.
        _wait_nonzero_node(readers)
    scheduler_infos = _recv_ready(readers)
    return leader_conns, scheduler_infos[0], model_config
