"""Multi-node torch.distributed of one rank process: rendezvous, barriers and the NCCL watchdog.

The lines written here stand for torch's C++ logging (glog format on stderr, with the global rank
prefix torch adds); their wording follows real captures: the TCPStore client timeout
(``tests/fixtures/captured/run3/dist/wrong_port.err``) and ProcessGroupNCCL's watchdog
(``tests/fixtures/captured/x2/cuda/nccl_watchdog_*.err``).  Nominal timeouts (what the lines say)
are multiplied by the simulator's time scale for the real waits.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from .tcpstore import StoreClient, StoreServer, try_connect

CONNECT_RETRY_DELAY_MS = 6593  # the capture's first retry delay


@dataclass(frozen=True)
class DistSetup:
    """What a rank of a multi-node server knows about the rendezvous (picklable)."""

    host: str
    port: int
    world: int
    nnodes: int
    node_rank: int
    digest: str  # flags every node must agree on
    timeout_ms: int  # nominal (printed)
    scale: float  # real seconds per nominal second
    clock_offset: float = 0.0


_state: dict[str, Any] = {"setup": None, "rank": -1, "client": None, "seq": 0, "server": None}


def configure(setup: DistSetup | None, rank: int) -> None:
    _state.update(setup=setup, rank=rank, client=None, seq=0)


def current() -> DistSetup:
    setup: DistSetup | None = _state["setup"]
    assert setup is not None, "multi-node rendezvous without --nnodes > 1"
    return setup


def rank() -> int:
    return int(_state["rank"])


def multi_node() -> bool:
    return _state["setup"] is not None


def active() -> bool:
    return _state["setup"] is not None and _state["client"] is not None


def _stamp(level: str, where: str) -> str:
    setup: DistSetup | None = _state["setup"]
    now = time.time() + (setup.clock_offset if setup else 0.0)
    frac = int((now % 1) * 1e9)
    return f"{level}{time.strftime('%m%d %H:%M:%S', time.localtime(now))}.{frac:09d} {where}"


def log(level: str, where: str, text: str, rank_prefix: bool = True) -> None:
    prefix = f"[rank{_state['rank']}]:" if rank_prefix else ""
    sys.stderr.write(f"{prefix}[{_stamp(level, where)}] {text}\n")
    sys.stderr.flush()


_NATIVE_FRAMES = (
    "frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, "
    "std::char_traits<char>, std::allocator<char> >) + 0x9d (0x7fbe4137305d in "
    "/root/venv_sglang211/lib/python3.12/site-packages/torch/lib/libc10.so)\n"
    "frame #1: <unknown function> + 0x16daa1c (0x7fbda52daa1c in "
    "/root/venv_sglang211/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so)\n"
    "frame #2: c10d::TCPStore::TCPStore(std::__cxx11::basic_string<char, std::char_traits<char>, "
    "std::allocator<char> >, c10d::TCPStoreOptions const&) + 0x41d (0x7fbdaa68decd in "
    "/root/venv_sglang211/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so)\n"
)


def connect(setup: DistSetup, rank: int, is_master: bool) -> str | None:
    """torch's TCPStore client (and, on global rank 0, its server): two tries; the error or None."""
    if is_master and _state["server"] is None:
        _state["server"] = StoreServer("0.0.0.0", setup.port, setup.world)
    timeout_s = setup.timeout_ms / 1000 * setup.scale
    target = f"({setup.host}, {setup.port})"
    msg = f"The client socket has timed out after {setup.timeout_ms}ms while trying to connect to {target}."
    sock = try_connect(setup.host, setup.port, timeout_s)
    if sock is None:
        log("E", "socket.cpp:1028", f"[c10d] {msg}")
        log(
            "W",
            "TCPStore.cpp:340",
            f"[c10d] TCP client failed to connect/validate to host {setup.host}:{setup.port} - "
            f"retrying (try=0, timeout={setup.timeout_ms}ms, delay={CONNECT_RETRY_DELAY_MS}ms): {msg}",
        )
        sys.stderr.write(
            "Exception raised from throwTimeoutError at "
            "/pytorch/torch/csrc/distributed/c10d/socket.cpp:1030 (most recent call first):\n"
            + _NATIVE_FRAMES
            + "\n"
        )
        time.sleep(CONNECT_RETRY_DELAY_MS / 1000 * setup.scale)
        sock = try_connect(setup.host, setup.port, timeout_s)
    if sock is None:
        log("E", "socket.cpp:1028", f"[c10d] {msg}")
        log(
            "E",
            "TCPStore.cpp:328",
            f"[c10d] TCP client failed to connect/validate to host {setup.host}:{setup.port} - "
            f"timed out (try=1, timeout={setup.timeout_ms}ms): {msg}",
        )
        return msg
    client = StoreClient(sock)
    client.call(op="hello", rank=rank, world=setup.world, digest=setup.digest)
    _state["client"] = client
    return None


def wait_for_workers(setup: DistSetup) -> str | None:
    """Global rank 0: wait until every rank said hello (torch's ``wait_for_workers``); the error."""
    client: StoreClient = _state["client"]
    deadline = time.monotonic() + setup.timeout_ms / 1000 * setup.scale
    joined = client.call(op="count")["count"]
    while joined < setup.world and time.monotonic() < deadline:
        time.sleep(0.05)
        joined = client.call(op="count")["count"]
    if joined < setup.world:
        seconds = setup.timeout_ms // 1000 + 1
        return f"Timed out after {seconds} seconds waiting for clients. {joined}/{setup.world} clients joined."
    return None


def wait_joined() -> None:
    """Ranks other than 0 wait for the whole world to join (rank 0 raises if it never does)."""
    setup: DistSetup = _state["setup"]
    client: StoreClient = _state["client"]
    try:
        while client.call(op="count")["count"] < setup.world:
            time.sleep(0.05)
    except OSError:
        threading.Event().wait()  # rank 0 died: this rank hangs until its launcher is killed


def barrier(numel: int = 1048576) -> None:
    """A collective over every rank of every node; past the watchdog timeout the process aborts."""
    setup: DistSetup = _state["setup"]
    client: StoreClient = _state["client"]
    _state["seq"] += 1
    seq = _state["seq"]
    done = threading.Event()

    def call() -> None:
        try:
            client.call(op="barrier", seq=seq, rank=_state["rank"])
            done.set()
        except OSError:
            pass  # the store's host died: the collective never completes

    started = time.monotonic()
    threading.Thread(target=call, daemon=True).start()
    if not done.wait(setup.timeout_ms / 1000 * setup.scale):
        watchdog_abort(seq, numel, started)


def watch_peers() -> None:
    """Ranks not hosting the store: when its process dies, the next collective times out."""
    setup: DistSetup = _state["setup"]
    if _state["server"] is not None:
        return
    sock = try_connect(setup.host, setup.port, 5.0)
    if sock is None:
        return
    client = StoreClient(sock)

    def run() -> None:
        client.wait_closed()
        started = time.monotonic()
        time.sleep(setup.timeout_ms / 1000 * setup.scale)
        watchdog_abort(_state["seq"] + 1, 1048576, started)

    threading.Thread(target=run, daemon=True, name="nccl-watchdog").start()


def watchdog_abort(seq: int, numel: int, started: float) -> None:
    """ProcessGroupNCCL's watchdog: the timeout lines, the dump lines, then SIGABRT."""
    setup: DistSetup = _state["setup"]
    rank = _state["rank"]
    ran_ms = setup.timeout_ms + int((time.monotonic() - started) / setup.scale * 1000) % 97 + 3
    work = (
        f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
        f"Timeout(ms)={setup.timeout_ms})"
    )
    caught = f"[Rank {rank}] Watchdog caught collective operation timeout: {work} ran for {ran_ms} milliseconds before timing out."
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
    log("E", "ProcessGroupNCCL.cpp:689", caught)
    log(
        "E",
        "ProcessGroupNCCL.cpp:2303",
        f"{pg}  failure detected by watchdog at work sequence id: {seq} PG status: "
        f"last enqueued work: {seq}, last completed work: {seq - 1}",
    )
    log("E", "ProcessGroupNCCL.cpp:2636", f"{pg} First PG on this rank to signal dumping.")
    log(
        "E",
        "ProcessGroupNCCL.cpp:1914",
        f"{pg} Received a dump signal due to a collective timeout from this local rank and we will "
        f"try our best to dump the debug info. Last enqueued NCCL work: {seq}, last completed NCCL "
        f"work: {seq - 1}.This is most likely caused by incorrect usages of collectives, e.g., wrong "
        "sizes used across ranks, the order of collectives is not same for all ranks or the "
        "scheduled collective, for some reason, didn't run. Additionally, this can be caused by GIL "
        "deadlock or other reasons such as network errors or bugs in the communications library "
        "(e.g. NCCL), etc. ",
    )
    log(
        "E",
        "ProcessGroupNCCL.cpp:1628",
        f"{pg} ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1, only active collectives: 0",
    )
    time.sleep(min(60 * setup.scale, 5.0))
    log(
        "E",
        "ProcessGroupNCCL.cpp:750",
        f"[Rank {rank}] Some NCCL operations have failed or timed out. Due to the asynchronous nature "
        "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
    )
    log(
        "E",
        "ProcessGroupNCCL.cpp:764",
        f"[Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
    )
    terminated = f"{pg} Process group watchdog thread terminated with exception: {caught}"
    log("E", "ProcessGroupNCCL.cpp:2119", terminated)
    where = (
        "Exception raised from checkTimeout at "
        "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:692 (most recent call first):\n"
    )
    sys.stderr.write(
        f"{where}\nterminate called after throwing an instance of 'c10::DistBackendError'\n"
        f"  what():  {terminated}\n{where}\n"
        "Exception raised from run at "
        "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2125 (most recent call first):\n\n"
    )
    sys.stderr.flush()
    os.abort()
