"""A deployment whose host list is wrong is bad input: exit 2 with what was wrong and the valid names,
before anything connects to a host or a runbook's kernel starts (COMMON standard).

Wrong: a node host that neither the inventory nor the ssh_config names, or a host list that is not
the deployment's nodes (a node too many or too few).  Every way in is tried: the deployment command,
status/start/journal/tracebacks with a host list, and ``workbench run bisect|factorial|ab``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main

DEPS = (Path(__file__).parents[2] / "fixtures" / "deployment" / "k26-2node.toml").read_text() + """
[deployment.typo-2node]
unit = "sglang-typo-2node.service"
port = 30003
[[deployment.typo-2node.node]]
host = "gpu-a"
rank = 0
[[deployment.typo-2node.node]]
host = "gpu-bb"
rank = 1
"""

SSH_CONFIG = "".join(f"Host {h}\n  HostName 127.0.0.1\n  Port 9\n" for h in ("gpu-a", "gpu-b", "gpu-c"))


@pytest.fixture
def no_host(tmp_path, monkeypatch):
    """Deployments, an ssh_config naming gpu-a..c, and every way to reach a host failing the test."""
    for var in ("WORKBENCH_SSH_CONFIG", "WORKBENCH_TESTBED_DIR", "WORKBENCH_CACHE", "XDG_CONFIG_HOME",
                "WORKBENCH_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path / "no-testbed"))
    (tmp_path / "deployments.toml").write_text(DEPS)
    (tmp_path / "ssh_config").write_text(SSH_CONFIG)
    (tmp_path / "inventory.toml").write_text('[groups]\nthree = ["gpu-[a-c]"]\n')
    monkeypatch.setenv("WORKBENCH_DEPLOYMENTS", str(tmp_path / "deployments.toml"))
    monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(tmp_path / "ssh_config"))
    monkeypatch.setenv("WORKBENCH_INVENTORY", str(tmp_path / "inventory.toml"))
    monkeypatch.chdir(tmp_path)

    def refuse(*args, **kwargs):
        pytest.fail(f"a host was reached: {args} {kwargs}")

    import papermill

    from workbench import hosts, ssh
    from workbench.runbooks import skeleton

    monkeypatch.setattr(hosts, "connect", refuse)
    monkeypatch.setattr(skeleton, "connect", refuse)
    monkeypatch.setattr(ssh.SSHHost, "__init__", refuse)
    monkeypatch.setattr(papermill, "execute_notebook", refuse)
    return tmp_path


UNKNOWN = "gpu-bb: no inventory entry or ssh_config Host names it"
VALID = "valid hosts: gpu-a, gpu-b, gpu-c"
NOT_ITS_NODES = "k26-2node on gpu-a, gpu-b (2 nodes)"
RB_NOT_ITS_NODES = "deployment k26-2node's unit on gpu-a, gpu-b: a trial starts the whole deployment, so give hosts ['gpu-a', 'gpu-b']"


@pytest.mark.parametrize(("argv", "words"), [
    (["deployment", "status", "typo-2node"], [UNKNOWN, VALID, "deployment typo-2node"]),
    (["deployment", "start", "typo-2node"], [UNKNOWN, VALID]),
    (["status", "gpu-a,gpu-bb", "sglang-typo-2node.service"], [UNKNOWN, VALID]),
    (["start", "gpu-a,gpu-bb", "sglang-typo-2node.service", "--wait"], [UNKNOWN, VALID]),
    (["stop", "typo-2node"], [UNKNOWN, VALID]),
    (["journal", "gpu-a,gpu-bb", "sglang-typo-2node.service"], [UNKNOWN, VALID]),
    (["tracebacks", "--host", "gpu-a,gpu-bb", "--unit", "sglang-typo-2node.service"], [UNKNOWN, VALID]),
    (["status", "gpu-a,gpu-b,gpu-c", "sglang-k26-2node.service"], [NOT_ITS_NODES, "gpu-a, gpu-b, gpu-c (3 hosts)"]),
    (["start", "three", "sglang-k26-2node.service"], [NOT_ITS_NODES]),
    (["deployment", "status", "sglang-k26-2node.service", "--hosts", "gpu-a,gpu-c"], [NOT_ITS_NODES]),
])
def test_the_cli_refuses_a_wrong_deployment_with_exit_2_before_any_host(no_host, capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    for w in words:
        assert w in err, err


EDITS = json.dumps({"--enable-nccl-nvls": True})


@pytest.mark.parametrize("runbook, extra", [
    ("bisect", ["-p", "edits", EDITS]),
    ("factorial", ["-p", "factors", EDITS]),
    ("ab", ["-p", "edits", EDITS, "-p", "repeats", "3", "-p", "concurrency", "[1]"]),
])
@pytest.mark.parametrize("hosts, unit, words", [
    ('["gpu-a","gpu-b","gpu-c"]', "sglang-k26-2node.service", [RB_NOT_ITS_NODES, "not ['gpu-a', 'gpu-b', 'gpu-c']"]),
    ('["gpu-a"]', "sglang-k26-2node.service", [RB_NOT_ITS_NODES, "not ['gpu-a']"]),
    ('["gpu-a","gpu-bb"]', "sglang-typo-2node.service", [UNKNOWN, VALID]),
])
def test_runbooks_on_a_wrong_deployment_exit_2_before_the_run_starts(no_host, capsys, runbook, extra, hosts, unit,
                                                                     words):
    rc = main(["run", runbook, "-p", "hosts", hosts, "-p", "base_unit", unit, *extra, "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    for w in words:
        assert w in err, err
    runs = no_host / "data" / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # no run was started


def test_a_right_deployment_still_gets_as_far_as_the_hosts(no_host):
    """The check refuses only what is wrong: the right nodes pass it and reach the (refused) connection."""
    with pytest.raises(pytest.fail.Exception, match="a host was reached"):
        main(["deployment", "status", "k26-2node"])
