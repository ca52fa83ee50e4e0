"""Inventory entries, host lists and groups, and the ssh_config precedence (pure: temp files only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench import inventory
from workbench.errors import ConfigError
from workbench.sshconfig import ConfigSet, read


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp HOME with no inventory, no testbed and no ssh_config of its own."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("WORKBENCH_SSH_CONFIG", "WORKBENCH_INVENTORY", "WORKBENCH_TESTBED_DIR", "WORKBENCH_CACHE",
                "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _testbed(home: Path, hosts: list[str]) -> Path:
    cfg = home / "tb_ssh_config"
    cfg.write_text("".join(f"Host {h}\n    HostName 10.9.0.{i + 2}\n    User root\n" for i, h in enumerate(hosts)))
    inventory.write_entries(inventory.testbed_file(), hosts={h: {"transport": "ssh", "backends": ["systemd"]}
                                                            for h in hosts},
                            source="testbed", ssh_config=str(cfg), groups={"testbed": hosts})
    return cfg


@pytest.mark.parametrize(("spec", "want"), [
    ("gpu-[a-d]", ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]),
    ("node[01-03]", ["node01", "node02", "node03"]),
    ("node[8-10]", ["node8", "node9", "node10"]),
    ("gpu-[a,c],gpu-b", ["gpu-a", "gpu-c", "gpu-b"]),
    ("r[1-2]-[a-b]", ["r1-a", "r1-b", "r2-a", "r2-b"]),
    (["h1", "h2,h1"], ["h1", "h2"]),
    ("single", ["single"]),
])
def test_host_lists_expand(spec: str | list[str], want: list[str]) -> None:
    assert inventory.expand_hosts(spec, inventory.Inventory()) == want


@pytest.mark.parametrize("spec", ["gpu-[d-a]", "gpu-[a-d", "gpu-]a[", "gpu-[aa-b]", "", " , ", "-rf", "@nope",
                                  "a b"])
def test_bad_host_lists_are_refused(spec: str) -> None:
    with pytest.raises(ConfigError):
        inventory.expand_hosts(spec, inventory.Inventory())


def test_named_groups_from_the_user_file_and_the_testbed(home: Path) -> None:
    user = home / ".config/workbench/inventory.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[groups]\nprod = ["h100-[1-2]", "@testbed"]\nloop = ["@loop"]\n'
                    '[hosts.h100-1]\nbackends = ["container"]\n')
    _testbed(home, ["gpu-a", "gpu-b"])
    inv = inventory.load()
    assert inv.expand("prod") == ["h100-1", "h100-2", "gpu-a", "gpu-b"]
    assert inv.expand("@testbed,h100-1") == ["gpu-a", "gpu-b", "h100-1"]
    assert inv.get("h100-1") is not None and inv.get("h100-1").backends == ("container",)  # type: ignore[union-attr]
    assert inv.get("gpu-a").transport == "ssh"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="nest deeper"):
        inv.expand("loop")
    with pytest.raises(ConfigError, match="unknown host group 'nope'"):
        inv.expand("@nope")


def test_a_broken_inventory_file_is_a_clear_error(home: Path) -> None:
    user = home / ".config/workbench/inventory.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[groups\n")
    with pytest.raises(ConfigError, match=r"inventory\.toml is not valid"):
        inventory.load()
    user.write_text('[hosts.x]\ntransport = "telnet"\n')
    with pytest.raises(ConfigError, match="transport must be one of"):
        inventory.load()


def test_includes_are_inlined_relative_to_dot_ssh(home: Path) -> None:
    ssh = home / ".ssh"
    (ssh / "conf.d").mkdir(parents=True)
    (ssh / "conf.d/a.conf").write_text("Host inc-a\n    HostName 10.0.0.1\n")
    (ssh / "conf.d/b.conf").write_text("Host inc-b\n    HostName 10.0.0.2\n    Include nested.conf\n")
    (ssh / "nested.conf").write_text("    Port 2222\n")
    (ssh / "config").write_text("Include conf.d/*.conf\nInclude ~/missing.conf\nHost top\n    User me\n")
    _text, seen = read(ssh / "config")
    assert seen == [str(ssh / "config"), str(ssh / "conf.d/a.conf"), str(ssh / "conf.d/b.conf"),
                    str(ssh / "nested.conf")]
    cs = ConfigSet.from_files([ssh / "config"])
    pm = cs.paramiko()
    assert pm.lookup("inc-a")["hostname"] == "10.0.0.1"
    assert pm.lookup("inc-b")["port"] == "2222"
    assert "port" not in pm.lookup("inc-a")
    assert cs.knows("inc-b") and cs.knows("top") and not cs.knows("other")


def test_an_include_loop_is_refused(home: Path) -> None:
    (home / ".ssh").mkdir()
    (home / ".ssh/config").write_text("Include config\n")
    with pytest.raises(ConfigError, match="nested deeper"):
        ConfigSet.from_files([home / ".ssh/config"])


def test_precedence_testbed_and_user_config_both(home: Path) -> None:
    (home / ".ssh").mkdir()
    (home / ".ssh/config").write_text("Host my-h100\n    HostName 192.0.2.7\n    User ubuntu\n"
                                      "Host *\n    User nobody\n    Port 2200\n")
    tb = _testbed(home, ["gpu-a"])
    cs = inventory.ssh_configs()
    assert cs.paths[:2] == (str(tb), str(home / ".ssh/config"))
    pm = cs.paramiko()
    assert pm.lookup("my-h100")["hostname"] == "192.0.2.7"
    assert pm.lookup("my-h100")["user"] == "ubuntu"
    # The user's Host * defaults never override the testbed's own values.
    assert pm.lookup("gpu-a")["user"] == "root" and pm.lookup("gpu-a")["hostname"] == "10.9.0.2"
    assert set(inventory.names()) >= {"gpu-a", "my-h100"}


def test_explicit_config_is_read_alone(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / ".ssh").mkdir()
    (home / ".ssh/config").write_text("Host my-h100\n    HostName 192.0.2.7\n")
    _testbed(home, ["gpu-a"])
    mine = home / "mine.conf"
    mine.write_text("Host x\n    HostName 192.0.2.9\n")
    assert inventory.ssh_configs(mine).paths == (str(mine),)
    monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(mine))
    assert inventory.ssh_configs().paths == (str(mine),)
    with pytest.raises(ConfigError, match="ssh_config not found"):
        inventory.ssh_configs(home / "nope.conf")


def test_unknown_alias_error_names_the_configs_read(home: Path) -> None:
    from workbench.errors import ConnectError
    from workbench.hosts import connect

    (home / ".ssh").mkdir()
    (home / ".ssh/config").write_text("Host my-h100\n    HostName 192.0.2.7\n")
    tb = _testbed(home, ["gpu-a"])
    host = connect("no-such-host.invalid")
    with pytest.raises(ConnectError) as info:
        host.run(["true"])
    msg = str(info.value)
    assert "unknown host" in msg and str(tb) in msg and str(home / ".ssh/config") in msg


def test_testbed_local_hosts_are_local(home: Path) -> None:
    from workbench.hosts import LocalHost, connect

    inventory.write_entries(inventory.testbed_file(), source="testbed", extra={"backend": "local"},
                            hosts={"gpu-a": {"transport": "local", "env": {"X": "1"}, "services_root": "/x"}})
    h = connect("gpu-a")
    assert isinstance(h, LocalHost) and h.env == {"X": "1"} and h.properties["services_root"] == "/x"
    assert json.loads(inventory.testbed_file().read_text())["backend"] == "local"


def test_the_nspawn_testbed_never_writes_the_legacy_local_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Earlier trees read every host of inventory.json as a host on *this* machine: the nspawn
    testbed writes hosts.json only, with ssh transports."""
    from workbench.testbed import testbed as tb

    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(home / "tb"))
    state = tb.State(backend="nspawn", hosts=[tb.HostState("gpu-a", "10.0.0.2", "n", "v", "/r", "/u", "/w")])
    tb._write_inventory(state, [])
    assert not (home / "tb" / inventory.LEGACY_FILE).exists()
    data = json.loads((home / "tb" / "hosts.json").read_text())
    assert data["hosts"]["gpu-a"]["transport"] == "ssh" and data["ssh_config"].endswith("ssh_config")
    assert inventory.load().get("gpu-a").transport == "ssh"  # type: ignore[union-attr]
