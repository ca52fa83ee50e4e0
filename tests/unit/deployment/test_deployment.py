"""Deployments: the file format, node-specific flags, clock offsets, merged journals and the first failure."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from workbench.deployment.clock import ClockSample, estimate, parse_probe
from workbench.deployment.flags import check_edits, differences, flag_map
from workbench.deployment.journals import first_failure, merge, node_failures
from workbench.deployment.model import find_deployment, load_deployments, parse_deployments
from workbench.errors import ConfigError, ParseError
from workbench.testbed.multinode import MultinodeProvisioner, deployment_toml

FIX = Path(__file__).parents[2] / "fixtures" / "sim" / "multinode"

GOOD = """
[deployment.k26-2node]
unit = "sglang-k26-2node.service"
port = 30002
join_timeout = 60
[[deployment.k26-2node.node]]
host = "gpu-b"
rank = 1
[[deployment.k26-2node.node]]
host = "gpu-a"
rank = 0
"""


def test_parse_orders_nodes_head_first_and_starts_workers_first():
    dep = parse_deployments(GOOD)["k26-2node"]
    assert dep.hosts == ("gpu-a", "gpu-b") and dep.head.host == "gpu-a"
    assert [n.host for n in dep.start_order()] == ["gpu-b", "gpu-a"]
    assert dep.node("gpu-b").label == "node1" and dep.node(1).host == "gpu-b"
    assert dep.port == 30002 and dep.join_timeout == 60.0


@pytest.mark.parametrize(("text", "error"), [
    (GOOD.replace("rank = 1", "rank = 2"), "node ranks must be 0..1"),
    (GOOD.replace('host = "gpu-b"', 'host = "gpu-a"'), "a host appears twice"),
    (GOOD.replace("join_timeout = 60", "join_timeout = 0"), "join_timeout must be a positive"),
    (GOOD.replace("port = 30002", "prot = 30002"), "unknown key 'prot'"),
    ('[deployment.x]\nunit = "a.service"\n[[deployment.x.node]]\nhost = "h"\nrank = 0\n', "at least two"),
    ("[deployment", "not valid TOML"),
])
def test_bad_files_are_refused_with_the_reason(text, error):
    with pytest.raises(ConfigError, match=error):
        parse_deployments(text, "d.toml")


def test_find_by_name_or_unit_and_hosts(tmp_path):
    p = tmp_path / "d.toml"
    p.write_text(GOOD)
    deps = load_deployments(p)
    assert find_deployment(deps, "sglang-k26-2node.service", ("gpu-a", "gpu-b")).name == "k26-2node"
    with pytest.raises(ConfigError, match=r"is the unit of k26-2node on gpu-a, gpu-b \(2 nodes\), not of gpu-a, gpu-c"):
        find_deployment(deps, "sglang-k26-2node.service", ("gpu-a", "gpu-c"))
    with pytest.raises(ConfigError, match="no single deployment"):
        find_deployment(deps, "sglang-other.service", ("gpu-a", "gpu-b"))
    with pytest.raises(ConfigError, match="cannot read deployments file"):
        load_deployments(tmp_path / "missing.toml")


def test_testbed_deployment_file_parses():
    dep = parse_deployments(deployment_toml())["k26-2node"]
    assert dep.hosts == ("gpu-a", "gpu-b") and dep.head.unit == "sglang-k26-2node.service"


def test_variant_edits_refuse_node_specific_flags():
    assert check_edits({"--ep-size": "8"}) == (("--ep-size", "8"),)
    with pytest.raises(ConfigError, match="--node-rank differ by node"):
        check_edits({"--node-rank": "0"})


def test_differences_between_nodes_leave_node_flags_alone():
    prov = MultinodeProvisioner()
    from workbench.services.base import exec_argv

    a = exec_argv(prov.unit_text(0))
    b = exec_argv(prov.unit_text(1))
    assert flag_map(a)["--node-rank"] == "0" and flag_map(b)["--node-rank"] == "1"
    assert differences({"node0": a, "node1": b}) == {}
    assert differences({"node0": a, "node1": [*b, "--enable-nccl-nvls"]}) == {
        "--enable-nccl-nvls": {"node0": None, "node1": True}}


def test_clock_offset_takes_the_tightest_round_trip():
    samples = [ClockSample(100.0, 105.30, 100.40), ClockSample(200.0, 205.02, 200.04), ClockSample(300.0, 305.5, 301.0)]
    off = estimate("gpu-b", samples)
    assert off.offset == pytest.approx(5.0) and off.error == pytest.approx(0.02)
    assert "gpu-b: clock +5.000 s" in off.describe()
    # what ordering failures across hosts takes off: the offset where it exceeds its own error, else nothing
    assert off.correction == pytest.approx(5.0)
    assert estimate("gpu-a", [ClockSample(100.0, 100.031, 100.04)]).correction == 0.0  # 11 ms, +-20 ms
    assert parse_probe("1764583200.123456789\n") == pytest.approx(1764583200.123456789)
    with pytest.raises(ParseError):
        parse_probe("date: invalid option")


def _frame(path: Path, skew: float = 0.0) -> pd.DataFrame:
    """A captured node log (arrival time TAB line) as the journal columns the merge reads."""
    rows = [line.split("\t", 1) for line in path.read_text().splitlines() if "\t" in line]
    times = pd.to_datetime([float(t) + skew for t, _ in rows], unit="s", utc=True)
    return pd.DataFrame({"time": times, "origin": "unit", "message": [m for _, m in rows]})


def test_first_failure_is_the_rank_that_raised_not_the_one_that_timed_out():
    frames = {"node0": _frame(FIX / "capture" / "node0.log"), "node1": _frame(FIX / "capture" / "node1.log")}
    cause = first_failure(frames)
    assert cause is not None
    assert cause.rank == "node1/TP3" and cause.phase == "cuda_graph_capture"
    assert cause.exception_type == "RuntimeError" and "CUBLAS_STATUS_EXECUTION_FAILED" in cause.message
    watchdog = [f for f in node_failures(frames) if f.node == "node0"]
    assert watchdog and all(f.consequence for f in watchdog)
    assert {f.rank for f in watchdog} >= {"node0/rank0"}


def test_node_that_cannot_join_is_named_not_the_head_waiting_for_it():
    frames = {"node0": _frame(FIX / "nojoin" / "node0.log"), "node1": _frame(FIX / "nojoin" / "node1.log")}
    cause = first_failure(frames)
    assert cause is not None and cause.node == "node1"
    assert cause.exception_type == "torch.distributed.DistNetworkError" and cause.phase == "nccl_init"
    head = [f for f in node_failures(frames) if f.node == "node0"]
    assert any(f.exception_type == "torch.distributed.DistStoreError" and f.consequence for f in head)


def test_clock_skew_of_one_host_is_corrected_in_the_merge():
    # node1's clock runs 30 s behind: uncorrected, its real exception looks older than everything on node0
    # and the merge interleaves wrongly; the measured offset puts the lines back in order.
    true0 = _frame(FIX / "capture" / "node0.log")
    true1 = _frame(FIX / "capture" / "node1.log")
    skewed = {"node0": true0, "node1": _frame(FIX / "capture" / "node1.log", skew=-30.0)}
    offsets = {"node0": 0.0, "node1": -30.0}
    merged = merge(skewed, offsets)
    assert merged.attrs["clock_offsets"] == offsets
    truth = merge({"node0": true0, "node1": true1})
    assert merged["time_corrected"].is_monotonic_increasing
    assert list(merged["message"]) == list(truth["message"])
    assert list(merge(skewed)["message"]) != list(truth["message"])
    cause = first_failure(skewed, offsets)
    assert cause is not None and cause.rank == "node1/TP3"
    assert cause.time == first_failure({"node0": true0, "node1": true1}).time


def test_node_stopped_before_its_own_error_is_named_when_the_head_waited_for_it():
    # the judged start stops everything once the head gives up: node1's connect error never printed
    node1 = _frame(FIX / "nojoin" / "node1.log")
    node1 = node1[~node1["message"].str.contains("c10d|DistNetworkError|Traceback|Scheduler hit", regex=True)]
    frames = {"node0": _frame(FIX / "nojoin" / "node0.log"), "node1": node1}
    cause = first_failure(frames)
    assert cause is not None and cause.node == "node1" and cause.phase == "nccl_init"
    assert "never joined" in cause.message


def test_flag_differences_in_words():
    from workbench.deployment.control import describe_differences

    assert describe_differences({"--enable-nccl-nvls": {"node0": None, "node1": True},
                                 "--tp-size": {"node0": "16", "node1": "8"}}) == (
        "--enable-nccl-nvls: node0=absent node1=True; --tp-size: node0=16 node1=8")


def test_a_node_failed_by_systemds_exec_step_quotes_systemds_own_words():
    """The manager's lines of a real 203/EXEC failure (captured on a testbed host): the message names the
    step and says why, not only the number."""
    from pathlib import Path

    from workbench.deployment.control import _manager_says
    from workbench.journal.entries import parse_json_entry
    from workbench.systemd import UnitStatus, parse_show

    fix = Path(__file__).parents[2] / "fixtures" / "systemd"
    entries = [e for line in (fix / "exec_203_journal.json").read_text().splitlines()
               if (e := parse_json_entry(line)) is not None]

    class Svc:
        def tail_entries(self, unit: str = "", invocation: str = "", lines: int = 500):
            return [e for e in entries if e.unit == unit]

    st = UnitStatus.from_show(parse_show((fix / "exec_203_show.txt").read_text())[0])
    assert _manager_says(Svc(), st) == (": Failed at step EXEC spawning /usr/bin/no-such-server: "
                                       "No such file or directory")
    assert _manager_says(Svc(), UnitStatus.from_show({**st.raw, "ExecMainStatus": "1"})) == ""


def test_a_relay_stamped_before_its_cause_is_still_a_consequence():
    """Captured on the testbed (two CPU vLLM nodes, node 1 asking for 100,000 GiB of KV cache): the head's
    executor relays node 1's ValueError 2 ms later. Journald stamps a line when it reads it, so on a busy
    machine node 1's lines can carry the later time; the relay must still not be the cause."""
    frames = {n: _frame(FIX / "vllm_kvcache" / f"{n}.log") for n in ("node0", "node1")}
    cause = first_failure(frames)
    assert cause is not None and cause.node == "node1" and cause.phase == "kv_cache_alloc"
    assert cause.exception_type == "ValueError" and "VLLM_CPU_KVCACHE_SPACE" in cause.message
    head = [f for f in node_failures(frames) if f.node == "node0"]
    assert head and all(f.consequence for f in head), [f.describe() for f in head]
    late = {"node0": frames["node0"], "node1": _frame(FIX / "vllm_kvcache" / "node1.log", skew=0.05)}
    moved = first_failure(late)
    assert moved is not None and moved.node == "node1" and moved.exception_type == "ValueError"
    assert min(f.time for f in node_failures(late) if f.node == "node0") < moved.time  # the relay is older now
