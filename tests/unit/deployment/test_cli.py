"""The CLI tells a deployment from a host: host lists, groups and names resolve before any host is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.cli import main
from workbench.cli.deployment import resolve
from workbench.errors import ConfigError

DEPS = (Path(__file__).parents[2] / "fixtures" / "deployment" / "k26-2node.toml").read_text()  # gpu-a node 0, gpu-b node 1


@pytest.fixture
def files(tmp_path, monkeypatch):
    for var in ("WORKBENCH_SSH_CONFIG", "WORKBENCH_TESTBED_DIR", "WORKBENCH_CACHE", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path / "no-testbed"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "deployments.toml").write_text(DEPS)
    (tmp_path / "inventory.toml").write_text('[groups]\npair = ["gpu-[a-b]"]\nthree = ["gpu-[a-c]"]\n')
    monkeypatch.setenv("WORKBENCH_DEPLOYMENTS", str(tmp_path / "d" / "deployments.toml"))
    monkeypatch.setenv("WORKBENCH_INVENTORY", str(tmp_path / "inventory.toml"))
    return tmp_path


@pytest.mark.parametrize(("hosts", "unit"), [
    ("gpu-a,gpu-b", "sglang-k26-2node.service"),
    ("gpu-b,gpu-a", "sglang-k26-2node"),  # order and .service do not matter
    ("gpu-[a-b]", "sglang-k26-2node.service"),
    ("pair", "sglang-k26-2node.service"),  # an inventory group
    ("@pair", "k26-2node"),  # the deployment's name in place of the unit
    ("gpu-a,gpu-b", "*"),  # the one deployment spanning exactly these hosts
    ("k26-2node", "*"),  # the name alone
    ("k26-2node", None),
])
def test_host_lists_groups_and_names_mean_the_deployment(files, hosts, unit):
    dep = resolve(hosts, unit)
    assert dep is not None and dep.name == "k26-2node"


def test_one_host_is_a_host(files):
    assert resolve("gpu-a", "sglang-k26-2node.service") is None
    assert resolve("gpu-a", "*") is None


def test_a_broken_deployments_file_does_not_break_single_host_commands(files):
    (files / "d" / "deployments.toml").write_text("[deployment")
    assert resolve("gpu-a", "x.service") is None
    with pytest.raises(ConfigError, match="not valid TOML"):
        resolve("gpu-a,gpu-b", "sglang-k26-2node.service")


@pytest.mark.parametrize(("hosts", "unit", "words"), [
    ("gpu-a,gpu-c", "sglang-k26-2node.service", "is the unit of k26-2node on gpu-a, gpu-b .2 nodes., not of gpu-a, gpu-c"),
    ("three", "sglang-k26-2node.service", "is the unit of k26-2node"),  # a group wider than the deployment
    ("gpu-a,gpu-b", "sglang-k26-ddtree.service", "no single deployment"),  # not a deployment's unit
    ("gpu-a,gpu-c", "*", "0 deployments span these hosts"),
    ("@nogroup", "x", "unknown host group"),
])
def test_several_hosts_without_a_deployment_are_refused(files, hosts, unit, words):
    with pytest.raises(ConfigError, match=words):
        resolve(hosts, unit)


def test_status_of_several_hosts_without_a_deployment_lists_each(files):
    assert resolve("gpu-a,gpu-c", "*", several_hosts_ok=True) is None


def test_no_deployments_file_names_where_to_put_one(files, monkeypatch):
    monkeypatch.delenv("WORKBENCH_DEPLOYMENTS")
    with pytest.raises(ConfigError, match="no deployments file"):
        resolve("gpu-a,gpu-b", "sglang-k26-2node.service")


def test_the_deployments_file_is_found_beside_an_ssh_config(files, monkeypatch):
    from workbench.deployment.model import default_path

    monkeypatch.delenv("WORKBENCH_DEPLOYMENTS")
    (files / "tb").mkdir()
    (files / "tb" / "ssh_config").write_text("Host gpu-a\n  HostName 10.0.0.1\n")
    (files / "tb" / "deployments.toml").write_text(DEPS)
    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(files / "tb"))  # the testbed's ssh_config in the precedence
    assert default_path() == files / "tb" / "deployments.toml"
    assert default_path(str(files / "elsewhere" / "ssh_config")) is None  # an explicit ssh_config: only beside it
    (files / "tb" / "deployments.toml").unlink()
    (files / "deployments.toml").write_text(DEPS)  # beside the inventory ($WORKBENCH_INVENTORY here)
    assert default_path() == files / "deployments.toml"


@pytest.mark.parametrize("argv", [
    ["start", "gpu-a,gpu-c", "sglang-k26-2node.service"],
    ["stop", "gpu-a,gpu-b", "sglang-k26-ddtree.service"],
    ["journal", "gpu-a,gpu-c", "sglang-k26-2node.service"],
    ["journal", "gpu-a,gpu-b", "sglang-k26-2node.service", "-f"],
    ["deployment", "variant", "k26-2node", "--set", "node-rank=1"],
    ["deployment", "status", "nope"],
])
def test_bad_deployment_commands_exit_2_before_any_host(files, argv, capsys):
    # the hosts do not exist: reaching one would be exit 3 (host problem), not 2
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_tracebacks_on_several_hosts_without_a_deployment_is_a_usage_error(files, capsys):
    assert main(["tracebacks", "--host", "gpu-a,gpu-c", "--unit", "sglang-k26-2node.service"]) == 2
    assert "is the unit of k26-2node on gpu-a, gpu-b (2 nodes), not of gpu-a, gpu-c" in capsys.readouterr().err
