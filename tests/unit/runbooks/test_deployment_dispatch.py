"""Factorial and A/B given a deployment's hosts + unit run on the deployment (one server), otherwise on a
fleet: the dispatch, told apart before any host is touched (the runners and arms are our seams here)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from workbench.deployment import runner as drunner
from workbench.errors import ConfigError, LockHeld
from workbench.fleet import HostReport
from workbench.hosts import LocalHost
from workbench.runbooks import ab, abdeploy, factorial
from workbench.runbooks.params import validate
from workbench.trials import TrialRecord, signature_of

UNIT = "sglang-k26-2node.service"
NVLS, NO_CAR = ("--enable-nccl-nvls", True), ("--disable-custom-all-reduce", True)



def _rec(subset, host: str = "gpu-a") -> TrialRecord:
    fails = NVLS in subset
    sig, sid = signature_of("RuntimeError", "cuBLAS failed", "cuda_graph_capture") if fails else (None, None)
    return TrialRecord(edits=[list(e) for e in subset], outcome="failed" if fails else "ready",
                       phase="cuda_graph_capture" if fails else "serving", exception_type="RuntimeError" if fails else None,
                       signature=sig, message="cuBLAS failed" if fails else None, seconds=1.0, host=host,
                       base_unit=UNIT, ranks=["node1/TP9"] if fails else [], signature_id=sid)


class FakeDeploymentRunner:
    """DeploymentRunner's shape: entered once, ``run([subset])`` one start of the whole at a time."""

    made: ClassVar[list[FakeDeploymentRunner]] = []

    def __init__(self, dep, hosts, *, purpose="", health_path="/health", timeout=900.0, lock_wait=0.0, setup=None,
                 fail_enter: bool = False) -> None:
        self.dep, self.hosts, self.setup = dep, hosts, setup
        self.reports = [HostReport(n.host) for n in dep.nodes]
        self.base_texts = {"node0": "[Service]\nExecStart=/x --node-rank 0\n", "node1": "x"}
        self.fingerprint = "fp-all-nodes"
        self.batches: list[list[Any]] = []
        self.entered = self.exited = False
        FakeDeploymentRunner.made.append(self)

    def __enter__(self):
        self.entered = True
        if getattr(self, "fail_enter", False):
            raise LockHeld("gpu-b is held by someone else")
        return self

    def __exit__(self, *exc):
        self.exited = True
        for r in self.reports:
            r.restored = True

    def run(self, subsets):
        self.batches.append(list(subsets))
        return [_rec(s) for s in subsets]


@pytest.fixture
def fake_runner(monkeypatch):
    FakeDeploymentRunner.made = []
    monkeypatch.setattr(drunner, "DeploymentRunner", FakeDeploymentRunner)
    monkeypatch.setattr(drunner, "run_many", lambda *a, **k: pytest.fail("a deployment is not a fleet"))
    return FakeDeploymentRunner


def test_a_deployments_combinations_are_starts_of_the_whole_one_at_a_time(deps, fake_runner):
    hosts = [LocalHost("gpu-a"), LocalHost("gpu-b")]
    subsets = factorial.combinations((NVLS, NO_CAR))
    asked, seen = [], []

    def lookup(host, fp, uhash, subset):
        asked.append((host, fp, subset))
        return _rec(subset) if subset == (NO_CAR,) else None  # one reused from the ledger

    results, reports = drunner.run_combinations(hosts, UNIT, subsets, lookup=lookup, on_trial=seen.append)
    (r,) = fake_runner.made
    assert r.entered and r.exited and r.batches == [[s] for s in subsets if s != (NO_CAR,)]
    assert {h for h, _, _ in asked} == {"gpu-a"} and {fp for _, fp, _ in asked} == {"fp-all-nodes"}
    assert list(results) == subsets and len(seen) == 4
    assert results[(NVLS,)].ranks == ["node1/TP9"]
    assert [(x.host, x.restored, x.error) for x in reports] == [("gpu-a", True, None), ("gpu-b", True, None)]


def test_a_node_that_cannot_be_locked_is_every_nodes_report_not_raised(deps, fake_runner, monkeypatch):
    monkeypatch.setattr(FakeDeploymentRunner, "fail_enter", True, raising=False)
    results, reports = drunner.run_combinations([LocalHost("gpu-a"), LocalHost("gpu-b")], UNIT, [()])
    assert results == {}
    assert all(r.error and "LockHeld" in r.error for r in reports)


def test_any_other_unit_runs_on_the_fleet(deps, monkeypatch):
    calls = []
    monkeypatch.setattr(drunner, "run_many", lambda hosts, base, subsets, **kw: calls.append((base, kw)) or ({}, []))
    monkeypatch.setattr(drunner, "DeploymentRunner", lambda *a, **k: pytest.fail("a fleet is not a deployment"))
    drunner.run_combinations([LocalHost("gpu-a"), LocalHost("gpu-b")], "sglang-k26-ddtree.service", [()],
                             lock_wait=5.0)
    assert calls and calls[0][0] == "sglang-k26-ddtree.service" and calls[0][1]["lock_wait"] == 5.0


def test_a_deployments_unit_on_one_of_its_hosts_is_refused(deps, fake_runner):
    with pytest.raises(ConfigError, match=r"give hosts \['gpu-a', 'gpu-b'\]"):
        drunner.run_combinations([LocalHost("gpu-a")], UNIT, [()])
    assert fake_runner.made == []


def test_factorial_on_the_deployment_reads_node1_in_its_matrix_and_causes(deps, fake_runner, monkeypatch, tmp_path):
    monkeypatch.setattr(factorial.RunbookRun, "connect", lambda self, name: LocalHost(name))
    p = validate(factorial.FactorialParams, {"hosts": ["gpu-b", "gpu-a"], "base_unit": UNIT, "data_dir": str(tmp_path),
                                             "factors": {NVLS[0]: True, NO_CAR[0]: True}})
    _run, result = factorial.run(p)
    assert result["status"] == "ok", result["failure"]
    failing = [m for m in result["matrix"] if m["outcome"] != "ready"]
    assert [m["factors"] for m in failing] == [{NVLS[0]: True, NO_CAR[0]: False}, {NVLS[0]: True, NO_CAR[0]: True}]
    assert all(m["ranks"] == ["node1/TP9"] and m["phase"] == "cuda_graph_capture" for m in failing)
    assert [(c["factors"], c["ranks"]) for c in result["causes"]] == [([NVLS[0]], ["node1/TP9"])]
    assert result["server_starts"] == 4 and result["host_restored"] is True
    assert [r["host"] for r in result["hosts_report"]] == ["gpu-a", "gpu-b"]  # the deployment's node order


def _ab_params(tmp_path, hosts, unit=UNIT):
    return validate(ab.ABParams, {"hosts": hosts, "base_unit": unit, "edits": {NO_CAR[0]: True}, "repeats": 2,
                                  "data_dir": str(tmp_path)})


def test_ab_on_the_deployment_hands_both_arms_to_the_deployment_with_every_repeat(deps, monkeypatch, tmp_path):
    calls = []

    def arms(dep, p, hr, rr):
        calls.append((dep.name, hr.host, hr.repeats))
        hr.restored = True

    monkeypatch.setattr(abdeploy, "deployment_arms", arms)
    monkeypatch.setattr(ab, "_both_arms", lambda *a: pytest.fail("a deployment's node is not a host of its own"))
    _run, result = ab.run(_ab_params(tmp_path, ["gpu-b", "gpu-a"]), progress=lambda _: None)
    assert calls == [("k26-2node", "gpu-a", 2)]
    assert result["hosts_report"] == [{"host": "gpu-a", "repeats": 2, "restored": True, "error": None}]


def test_ab_on_a_fleet_is_unchanged_and_a_lone_node_is_refused(deps, monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(abdeploy, "deployment_arms", lambda *a: pytest.fail("a fleet is not a deployment"))
    monkeypatch.setattr(ab.RunbookRun, "connect", lambda self, name: LocalHost(name))
    monkeypatch.setattr(ab, "_both_arms", lambda host, p, hr, rr: seen.append((host.name, hr.repeats)))
    ab.run(_ab_params(tmp_path / "fleet", ["gpu-a", "gpu-b"], "sglang-k26-ddtree.service"), progress=lambda _: None)
    assert sorted(seen) == [("gpu-a", 1), ("gpu-b", 1)]
    seen.clear()
    with pytest.raises(ConfigError, match=r"give hosts \['gpu-a', 'gpu-b'\]"):  # refused as a parameter, before a run
        _ab_params(tmp_path / "lone", ["gpu-a", "gpu-c"])
    assert seen == []
