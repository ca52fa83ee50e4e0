"""A runbook given hosts and a base unit runs a deployment's trials or a fleet's: told apart before any host."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.deployment.runner import DeploymentRunner, deployment_for, trial_runner
from workbench.errors import ConfigError
from workbench.fleet import Fleet
from workbench.hosts import LocalHost

DEPS = (Path(__file__).parents[2] / "fixtures" / "deployment" / "k26-2node.toml").read_text()  # gpu-a node 0, gpu-b node 1



def test_the_deployments_unit_on_exactly_its_nodes_is_the_deployment(deps):
    assert deployment_for(["gpu-a", "gpu-b"], "sglang-k26-2node.service").name == "k26-2node"
    assert deployment_for(["gpu-b", "gpu-a"], "sglang-k26-2node").name == "k26-2node"


@pytest.mark.parametrize("hosts", [["gpu-a", "gpu-b"], ["gpu-a"], ["gpu-a", "gpu-b", "gpu-c"]])
def test_any_other_unit_is_a_fleet(deps, hosts):
    assert deployment_for(hosts, "sglang-k26-ddtree.service") is None


@pytest.mark.parametrize("hosts", [["gpu-a"], ["gpu-b", "gpu-c"], ["gpu-a", "gpu-b", "gpu-c"]])
def test_a_deployments_unit_on_other_hosts_is_refused_with_its_nodes(deps, hosts):
    with pytest.raises(ConfigError, match=r"deployment k26-2node's unit on gpu-a, gpu-b.*\['gpu-a', 'gpu-b'\]"):
        deployment_for(hosts, "sglang-k26-2node.service")


def test_no_deployments_file_is_a_fleet(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DEPLOYMENTS", str(tmp_path / "none.toml"))
    with pytest.raises(ConfigError, match="cannot read deployments file"):  # named explicitly: must exist
        deployment_for(["gpu-a", "gpu-b"], "sglang-k26-2node.service")
    assert deployment_for(["gpu-a"], "sglang-k26-2node.service") is None
    monkeypatch.delenv("WORKBENCH_DEPLOYMENTS")
    monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(tmp_path / "ssh_config"))  # nothing beside it
    assert deployment_for(["gpu-a", "gpu-b"], "sglang-k26-2node.service") is None


def test_trial_runner_builds_the_right_kind_without_touching_a_host(deps):
    # LocalHost objects are never run against here: both constructors only keep them
    a, b = LocalHost("gpu-a"), LocalHost("gpu-b")
    runner = trial_runner([a, b], "sglang-k26-2node.service")
    assert isinstance(runner, DeploymentRunner) and runner.width == 1 and not runner.equal_hosts
    assert [r.host for r in runner.reports] == ["gpu-a", "gpu-b"]
    assert isinstance(trial_runner([a, b], "sglang-k26-ddtree.service"), Fleet)


def _captured(monkeypatch, case: str):
    """``read_nodes`` answers with the captured 2-node logs of ``case`` (our seam, real simulator output)."""
    from tests.unit.deployment.test_deployment import FIX, _frame
    from workbench.deployment import runner

    frames = {label: _frame(FIX / case / f"{label}.log") for label in ("node0", "node1")}
    monkeypatch.setattr(runner, "read_nodes", lambda dep, svcs, units=None: frames)


def _failed_trial(failed_node: str, phase: str):
    from types import SimpleNamespace

    from workbench.deployment.control import DeploymentOutcome, DeploymentTrial
    from workbench.deployment.model import parse_deployments

    dep = parse_deployments(DEPS)["k26-2node"]
    out = DeploymentOutcome("k26-2node", "failed", failed_node, "node1 exited", 9.5, None,
                            {"node0": "a-wb-1.service", "node1": "b-wb-1.service"}, {}, (), phase)
    trial = DeploymentTrial(out, {"node0": "a-wb-1.service", "node1": "b-wb-1.service"},
                            (("--enable-nccl-nvls", True),))
    session = SimpleNamespace(sessions={"node0": SimpleNamespace(svc=None), "node1": SimpleNamespace(svc=None)})
    return dep, session, trial


def test_a_deployment_trial_names_the_first_failing_node_and_rank(monkeypatch):
    from workbench.deployment.runner import deployment_record

    _captured(monkeypatch, "capture")
    dep, session, trial = _failed_trial("node1", "cuda_graph_capture")
    rec = deployment_record(dep, session, trial, started=1.0, base_text="[Service]\n", fingerprint="f")
    assert rec.ranks == ["node1/TP3"] and rec.phase == "cuda_graph_capture"
    assert rec.exception_type == "RuntimeError" and "CUBLAS_STATUS_EXECUTION_FAILED" in (rec.message or "")
    assert rec.signature_id and rec.signature_id.startswith("RuntimeError@")
    assert rec.host == "gpu-a" and rec.variant == "a-wb-1.service" and rec.edits == [["--enable-nccl-nvls", True]]


def test_a_node_that_never_joined_is_the_trials_root_cause_not_the_head_waiting(monkeypatch):
    from workbench.deployment.runner import deployment_record

    _captured(monkeypatch, "nojoin")
    dep, session, trial = _failed_trial("node1", "nccl_init")
    rec = deployment_record(dep, session, trial, started=1.0, base_text="[Service]\n", fingerprint="f")
    assert rec.ranks and rec.ranks[0].startswith("node1") and rec.phase == "nccl_init"
    assert rec.exception_type == "torch.distributed.DistNetworkError"
