"""Two simulated nodes on loopback: the TCP rendezvous, global ranks and the multi-node failure modes."""

from __future__ import annotations

import re
import tomllib
import urllib.request

import pytest
from simhelpers import SimServer, free_port, write_faults

from workbench.sim.simcore.faults import FaultFileError, parse_faults

# TP4 over two nodes: two ranks per node keeps the test light on two cores.
TWO_NODES = ["--tp", "4", "--nnodes", "2", "--dist-timeout", "600"]


def _pair(start_server, addr: str, node0: list[str] = (), node1: list[str] = (), addr1: str | None = None,
          **kw) -> tuple[SimServer, SimServer]:
    n1 = start_server([*TWO_NODES, "--dist-init-addr", addr1 or addr, "--node-rank", "1", *node1], **kw)
    n0 = start_server([*TWO_NODES, "--dist-init-addr", addr, "--node-rank", "0", *node0], **kw)
    return n0, n1


# The simulator scales torch's timeouts by its time scale (0.01: 600 s is 6 s). A test that starts node 1 only
# after node 0 waits needs more: node 1's start on a loaded 2-core machine took longer than 6 s once, and node 0
# then gave up waiting for its clients (CI's side lane beside the testbed tests).
PATIENT = [*TWO_NODES[:-1], "6000"]


def test_two_nodes_rendezvous_and_serve(start_server):
    addr = f"127.0.0.1:{free_port()}"
    n0 = start_server([*PATIENT, "--dist-init-addr", addr, "--node-rank", "0"])
    assert n0.wait_for("Init torch distributed begin.")
    # node 0 alone cannot pass the rendezvous: nothing past it for as long as node 1 is absent
    with pytest.raises(TimeoutError):
        n0.wait_for("Init torch distributed ends.", timeout=1.5)
    n1 = start_server([*PATIENT, "--dist-init-addr", addr, "--node-rank", "1"])
    assert n0.wait_for("The server is fired up and ready to roll!"), n0.text[-3000:]
    ends = re.search(r"TP0\] Init torch distributed ends\. elapsed=([\d.]+) s", n0.text)
    assert ends and float(ends.group(1)) >= 1.5
    assert n1.wait_for("Capture cuda graph end.")
    with urllib.request.urlopen(f"{n0.url}/health_generate", timeout=5) as r:
        assert r.status == 200
    ranks0 = set(re.findall(r"^\[[\d\- :]+ (TP\d+)\]", n0.text, re.M))
    ranks1 = set(re.findall(r"^\[[\d\- :]+ (TP\d+)\]", n1.text, re.M))
    assert ranks0 == {"TP0", "TP1"} and ranks1 == {"TP2", "TP3"}
    assert "Uvicorn running" not in n1.text  # node 1 serves no HTTP
    assert n0.stop() == 0


def test_node_that_cannot_reach_init_address(start_server):
    closed = free_port()
    n0, n1 = _pair(start_server, f"127.0.0.1:{free_port()}", addr1=f"127.0.0.1:{closed}")
    assert n1.wait_exit() != 0
    assert n0.wait_exit() != 0
    want = f"The client socket has timed out after 600000ms while trying to connect to (127.0.0.1, {closed})."
    assert f"[c10d] TCP client failed to connect/validate to host 127.0.0.1:{closed} - retrying (try=0" in n1.text
    assert f"torch.distributed.DistNetworkError: {want}" in n1.text
    assert "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 2/4 clients joined." \
        in n0.text
    assert "simcore" not in n1.text  # native frames stay hidden, as C++ frames do


def test_node1_rank_fails_in_capture_node0_hangs_until_watchdog(start_server, tmp_path):
    faults = write_faults(tmp_path, """
[[fault]]
id = "node1-capture"
phase = "cuda_graph_capture"
kind = "cublas"
ranks = [3]
node = 1
""")
    env = {"SGLANG_SIM_FAULT_FILE": str(faults)}
    n0, n1 = _pair(start_server, f"127.0.0.1:{free_port()}", env=env)
    assert n1.wait_exit() != 0
    assert re.search(r"\[[\d\- :]+ TP3\] Scheduler hit an exception", n1.text)
    assert "TP2] Scheduler hit an exception" not in n1.text
    assert n0.wait_exit() != 0
    assert "Scheduler hit an exception" not in n0.text
    assert re.search(r"\[rank0\]:\[E\d{4} [\d:.]+ ProcessGroupNCCL\.cpp:689\] \[Rank 0\] Watchdog caught collective "
                     r"operation timeout: WorkNCCL\(SeqNum=\d+, OpType=ALLREDUCE, .*Timeout\(ms\)=600000\) ran for "
                     r"\d+ milliseconds before timing out\.$", n0.text, re.M)
    assert "terminate called after throwing an instance of 'c10::DistBackendError'" in n0.text
    assert "Exit code: -6" in n0.text


def test_flags_that_differ_between_nodes_hang_both(start_server):
    n0, n1 = _pair(start_server, f"127.0.0.1:{free_port()}", node1=["--enable-nccl-nvls"])
    assert n0.wait_exit() != 0 and n1.wait_exit() != 0
    for n in (n0, n1):
        assert "Watchdog caught collective operation timeout" in n.text
        assert "Init torch distributed ends" not in n.text


def test_bad_node_flags_fail_before_any_rank(start_server):
    s = start_server([*TWO_NODES, "--node-rank", "0"])
    assert s.wait_exit() == 2
    assert "--dist-init-addr must be HOST:PORT with --nnodes 2; got ''" in s.text
    s = start_server([*TWO_NODES, "--dist-init-addr", "127.0.0.1:5000", "--node-rank", "2"])
    assert s.wait_exit() == 2
    assert "--node-rank 2 must be in [0, --nnodes 2)" in s.text


@pytest.mark.parametrize(("ranks", "node", "want"), [
    ('"all"', 1, (8, 9, 10, 11, 12, 13, 14, 15)),
    ("[3, 9]", 1, (9,)),
    ("[3, 9]", 0, (3,)),
    ("[3, 9]", None, (3, 9)),
])
def test_fault_node_restricts_global_ranks(ranks, node, want):
    line = "" if node is None else f"node = {node}"
    doc = tomllib.loads(f'[[fault]]\nphase = "cuda_graph_capture"\nkind = "nonetype"\nranks = {ranks}\n{line}\n')
    (fault,) = parse_faults(doc, "f.toml", _options())
    assert fault.resolve_ranks(16, 0, nnodes=2) == want


def test_fault_node_must_be_a_node_rank():
    doc = tomllib.loads('[[fault]]\nphase = "cuda_graph_capture"\nkind = "nonetype"\nnode = "one"\n')
    with pytest.raises(FaultFileError, match=r"fault\[0\] \(fault-0\)\.node: must be a node rank"):
        parse_faults(doc, "f.toml", _options())


def _options() -> dict:
    return {}
