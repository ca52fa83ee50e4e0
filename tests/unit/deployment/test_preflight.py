"""A deployment of units and containers, and its pre-flight: every node's command line read through the
backend seam (a unit's ``systemctl cat``, a container's ``podman container inspect``, both captured on the
testbed: tests/fixtures/deployment/captured) and refused before any node is locked, stopped or started
when ``--nnodes``, ``--node-rank`` or ``--dist-init-addr`` do not fit the deployment."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from workbench.deployment import control
from workbench.deployment.flags import check_topology
from workbench.deployment.model import find_deployment, parse_deployments
from workbench.errors import ConfigError, DeploymentMismatch
from workbench.hosts import Result
from workbench.services import ContainerServices, WithContainers
from workbench.systemd import UnitStatus
from workbench.testbed import multinode

CAP = Path(__file__).parents[2] / "fixtures" / "deployment" / "captured"
UNIT_TEXT = {h: (CAP / f"{h}_systemctl-cat_sglang-k26-2node.txt").read_text() for h in ("gpu-a", "gpu-b")}
INSPECT = (CAP / "gpu-c_podman-inspect_sglang-k26-2node-n1.json").read_text()
INIT = "10.213.0.11:20000"  # gpu-a's testbed address, in every captured command line


class FakeHost:
    """The Host seam: podman's captured answers; records every command."""

    def __init__(self, name: str, answers: dict[str, str] | None = None) -> None:
        self.name = name
        self.answers = answers or {}
        self.ran: list[str] = []

    def run(self, cmd: Any, **_: Any) -> Result:
        text = cmd if isinstance(cmd, str) else shlex.join(cmd)
        self.ran.append(text)
        for prefix, out in self.answers.items():
            if text.startswith(prefix):
                return Result(text, out, "", 0, self.name)
        return Result(text, "", f"unexpected: {text}", 99, self.name)


class CapturedUnits:
    """A systemd backend at our Services seam: ``unit_text`` is the unit's captured ``systemctl cat``;
    any verb that would change the host is recorded (the tests assert none ran)."""

    kind, state_dir, lock_dir = "systemd", "/run/workbench", "/run/lock"

    def __init__(self, host: FakeHost, texts: dict[str, str]) -> None:
        self.host = host
        self.texts = texts
        self.changed: list[str] = []

    def unit_text(self, unit: str) -> str:
        return self.texts[unit]

    def status(self, unit: str) -> UnitStatus:
        return UnitStatus.from_show({"Id": unit, "LoadState": "loaded", "ActiveState": "inactive",
                                     "SubState": "dead"})

    def units(self, pattern: str = "*") -> list[str]:
        return sorted(self.texts)

    def start(self, unit: str) -> UnitStatus:
        self.changed.append(f"start {unit}")
        return self.status(unit)

    def stop(self, unit: str, *, timeout: float = 90.0) -> UnitStatus:
        self.changed.append(f"stop {unit}")
        return self.status(unit)

    def follow(self, unit: str, cursor: str) -> Any:
        self.changed.append(f"follow {unit}")
        raise AssertionError("a start was watched")


def _hosts(texts: dict[str, str] | None = None) -> dict[str, Any]:
    """gpu-a and gpu-b: the 2-node unit; gpu-c: podman with the container node (and no such unit)."""
    texts = texts or UNIT_TEXT
    out: dict[str, Any] = {h: CapturedUnits(FakeHost(h), {multinode.UNIT: texts[h]}) for h in ("gpu-a", "gpu-b")}
    c = FakeHost("gpu-c", {"podman ps -a --format": f"sglang-k26-ddtree\n{multinode.CONTAINER_NODE}\n",
                           f"podman container inspect -- {multinode.CONTAINER_NODE}": INSPECT})
    out["gpu-c"] = WithContainers(CapturedUnits(c, {}), ContainerServices(c, "podman"))  # type: ignore[arg-type]
    return out


def _dep(nodes: list[tuple[str, str | None]], name: str = "d") -> Any:
    body = "".join(f'\n[[deployment.{name}.node]]\nhost = "{h}"\nrank = {i}\n' + (f'unit = "{u}"\n' if u else "")
                   for i, (h, u) in enumerate(nodes))
    return parse_deployments(f'[deployment.{name}]\nunit = "{multinode.UNIT}"\n{body}')[name]


def _changed(hosts: dict[str, Any]) -> list[str]:
    out = []
    for svc in hosts.values():
        units = svc.units_backend if isinstance(svc, WithContainers) else svc
        out += units.changed
        out += [c for c in units.host.ran if not c.startswith(("podman ps -a", "podman container inspect"))]
    return out


# -- the model: a container name per node ------------------------------------------------


def test_a_node_may_be_a_container_by_name_and_the_deployment_is_found_by_it():
    dep = parse_deployments(multinode.mixed_deployment_toml())[multinode.MIXED_DEPLOYMENT]
    assert [(n.host, n.rank, n.unit) for n in dep.nodes] == [("gpu-a", 0, multinode.UNIT),
                                                            ("gpu-c", 1, multinode.CONTAINER_NODE)]
    deps = {dep.name: dep}
    assert find_deployment(deps, multinode.CONTAINER_NODE) is dep
    assert find_deployment(deps, f"{multinode.CONTAINER_NODE}.service", ("gpu-a", "gpu-c")) is dep
    with pytest.raises(ConfigError, match="not of gpu-a, gpu-b"):
        find_deployment(deps, multinode.CONTAINER_NODE, ("gpu-a", "gpu-b"))


@pytest.mark.parametrize("unit, words", [
    ("sglang.socket", "is a .socket unit, not a server"),
    ("nightly.timer", "is a .timer unit"),
    ("getty@tty1.service", "not a valid unit name"),
    ("-dash", "neither a unit"),
    ("has space", "neither a unit"),
    ("a/b", "neither a unit"),
    ("x" * 129, "at most 128 characters"),
])
def test_names_that_are_neither_a_service_nor_a_container_are_refused(unit, words):
    with pytest.raises(ConfigError, match=rf"node\[1\]\.unit: .*{words}"):
        _dep([("gpu-a", None), ("gpu-c", unit)])


def test_deployment_for_finds_the_mixed_deployment_by_the_head_unit_or_the_container(tmp_path, monkeypatch):
    from workbench.deployment.runner import deployment_for

    path = tmp_path / "deployments.toml"
    path.write_text(multinode.mixed_deployment_toml())
    monkeypatch.setattr("workbench.deployment.runner.require_known", lambda *a, **k: None)
    for unit in (multinode.UNIT, multinode.CONTAINER_NODE, f"{multinode.CONTAINER_NODE}.service"):
        found = deployment_for(["gpu-a", "gpu-c"], unit, path=str(path))
        assert found is not None and found.name == multinode.MIXED_DEPLOYMENT


# -- pre-flight through the seam ------------------------------------------------------------


def test_the_testbed_deployments_pass_and_the_container_argv_comes_from_inspect():
    hosts = _hosts()
    argvs = control.preflight(_dep([("gpu-a", None), ("gpu-b", None)]), hosts)
    assert argvs["node1"][argvs["node1"].index("--node-rank") + 1] == "1"
    mixed = parse_deployments(multinode.mixed_deployment_toml())[multinode.MIXED_DEPLOYMENT]
    argvs = control.preflight(mixed, hosts)
    assert argvs["node1"][:3] == ["/usr/bin/python3", "-m", "sglang.launch_server"]  # not podman's init
    assert argvs["node1"] == [*argvs["node0"][:argvs["node0"].index("--node-rank") + 1], "1",
                              *argvs["node0"][argvs["node0"].index("--node-rank") + 2:]]
    assert control.flag_differences(mixed, hosts) == {}
    assert _changed(hosts) == []


def test_ranks_swapped_in_the_file_are_refused_naming_node_flag_expected_and_found():
    hosts = _hosts()
    with pytest.raises(DeploymentMismatch) as err:
        control.preflight(_dep([("gpu-b", None), ("gpu-a", None)]), hosts)
    e = err.value
    assert (e.deployment, e.node, e.host, e.flag, e.expected, e.found) == ("d", "node0", "gpu-b", "--node-rank",
                                                                          "0", "1")
    assert e.problems[1] == ("node1", "gpu-a", "--node-rank", "1", "0")
    assert "node0 (gpu-b): --node-rank expected 0, found 1; node1 (gpu-a): --node-rank expected 1, found 0" in str(e)
    assert "Nothing was stopped or started" in str(e)
    assert _changed(hosts) == []


def test_three_nodes_against_nnodes_2_names_every_node_container_included():
    hosts = _hosts()
    dep = _dep([("gpu-a", None), ("gpu-b", None), ("gpu-c", multinode.CONTAINER_NODE)])
    with pytest.raises(DeploymentMismatch) as err:
        control.preflight(dep, hosts)
    nnodes = [p for p in err.value.problems if p[2] == "--nnodes"]
    assert nnodes == [(f"node{i}", h, "--nnodes", "3", "2") for i, h in enumerate(("gpu-a", "gpu-b", "gpu-c"))]
    # gpu-b's unit and the container both say --node-rank 1: node2 (the container) is the one off
    assert ("node2", "gpu-c", "--node-rank", "2", "1") in err.value.problems


def test_a_node_with_another_init_address_is_named():
    texts = dict(UNIT_TEXT, **{"gpu-b": UNIT_TEXT["gpu-b"].replace(INIT, "10.213.0.12:20000")})
    assert INIT in UNIT_TEXT["gpu-b"]
    with pytest.raises(DeploymentMismatch) as err:
        control.preflight(_dep([("gpu-a", None), ("gpu-b", None)]), _hosts(texts))
    assert err.value.problems == [("node1", "gpu-b", "--dist-init-addr", f"{INIT} (the head's)", "10.213.0.12:20000")]


def test_check_topology_defaults_and_a_head_without_an_init_address():
    base = ["python3", "-m", "sglang.launch_server", "--tp-size", "16"]
    nodes = [("node0", "a", 0), ("node1", "b", 1)]
    with pytest.raises(DeploymentMismatch) as err:
        check_topology("d", nodes, {"node0": base, "node1": [*base, "--nnodes=2", "--node-rank", "1",
                                                              "--nccl-init-addr", "h:1"]})
    assert err.value.problems == [("node0", "a", "--nnodes", "2", "absent (default 1)"),
                                  ("node0", "a", "--dist-init-addr", "HOST:PORT (the head's rendezvous address)",
                                   "absent")]
    ok = [*base, "--nnodes", "2", "--dist-init-addr", "h:1"]
    check_topology("d", nodes, {"node0": ok, "node1": [*ok, "--node-rank", "1"]})  # rank 0 may be left out


# -- refused before anything changes -------------------------------------------------------------


def test_start_stop_and_a_session_refuse_before_any_node_is_locked_or_changed(monkeypatch, capsys):
    from workbench.cli.deployment import print_status, verb
    from workbench.deployment.control import DeploymentSession

    hosts = _hosts()
    dep = _dep([("gpu-b", None), ("gpu-a", None)])
    with pytest.raises(DeploymentMismatch):
        control.start(dep, hosts, timeout=5)
    for where in ("workbench.services", "workbench.deployment.control", "workbench.session"):
        monkeypatch.setattr(f"{where}.services_for", lambda host: hosts[host.name])
    raw = {h: svc.host for h, svc in hosts.items()}
    for action in ("stop", "start", "restart"):
        with pytest.raises(DeploymentMismatch):
            verb(dep, raw, action, wait=True, timeout=5)
    with pytest.raises(DeploymentMismatch):
        print_status(dep, raw, as_json=False)
    shown = capsys.readouterr().out
    assert shown.startswith("d: STOPPED (2 nodes, head gpu-b)"), shown  # the nodes shown, then the refusal
    with pytest.raises(DeploymentMismatch), DeploymentSession(dep, raw, lock_wait=0):
        pytest.fail("entered")
    assert _changed(hosts) == []  # no lock taken, no record written, nothing stopped or started


def test_the_cli_exits_2_and_a_runbook_records_bad_parameters():
    from workbench.cli import exit_code_for
    from workbench.runbooks.outcome import caught_failure, exit_code

    with pytest.raises(DeploymentMismatch) as err:
        control.preflight(_dep([("gpu-b", None), ("gpu-a", None)]), _hosts())
    assert exit_code_for(err.value) == 2
    failure = caught_failure(err.value)
    assert failure["kind"] == "bad_parameters" and exit_code(failure["kind"]) == 2


def test_factorial_and_bisect_trials_on_a_deployment_that_does_not_fit_raise_before_any_trial(monkeypatch):
    """run_combinations (factorial) raises the mismatch (the run's bad input) instead of filing it under
    a host's error; no trial ran and nothing was locked."""
    from workbench.deployment import runner

    hosts = _hosts()
    dep = _dep([("gpu-b", None), ("gpu-a", None)])
    monkeypatch.setattr("workbench.session.services_for", lambda host: hosts[host.name])
    monkeypatch.setattr(runner, "deployment_for", lambda *a, **k: dep)
    ran = []
    with pytest.raises(DeploymentMismatch, match="node0 \\(gpu-b\\): --node-rank expected 0, found 1"):
        runner.run_combinations([hosts["gpu-a"].host, hosts["gpu-b"].host], multinode.UNIT, [()],
                                on_trial=ran.append)
    assert ran == [] and _changed(hosts) == []


def test_a_worker_failed_219_cgroup_by_systemd_is_started_once_more(monkeypatch):
    """systemd's own race (systemd/systemd#20939): the worker's command never ran, so one more start;
    the head's watch waits for it (it does not see the worker), and the reason says what happened."""
    import threading

    from workbench.watch import Outcome

    hosts = _hosts()
    worker = hosts["gpu-b"]
    starts: list[str] = []
    again = threading.Event()

    def status(unit: str) -> UnitStatus:
        if len(starts) == 1:  # the first start: systemd failed it before it ran
            return UnitStatus.from_show({"Id": unit, "LoadState": "loaded", "ActiveState": "failed",
                                         "SubState": "failed", "Result": "exit-code", "ExecMainCode": "1",
                                         "ExecMainStatus": "219"})
        return UnitStatus.from_show({"Id": unit, "LoadState": "loaded", "ActiveState": "active",
                                     "SubState": "running"})

    def start(unit: str) -> UnitStatus:
        starts.append(unit)
        if len(starts) == 2:
            again.set()
        return status(unit)

    monkeypatch.setattr(worker, "status", status)
    monkeypatch.setattr(worker, "start", start)

    def watch(svc: Any, unit: str, **_: Any) -> Outcome:
        assert again.wait(10), "the worker was not started again"
        return Outcome(unit, "ready", "serving", "inv", 1.0, "/health 200")

    monkeypatch.setattr(control, "watch_start", watch)
    dep = _dep([("gpu-a", None), ("gpu-b", None)])
    out = control.start(dep, hosts, timeout=30)
    assert out.ok, out.describe()
    assert starts == [multinode.UNIT, multinode.UNIT]
    assert "node1 started a second time: systemd failed it 219/CGROUP before it ran" in out.reason
