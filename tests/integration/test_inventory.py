"""ssh_config precedence against real sshd: a Host entry only in ~/.ssh/config (through an
Include) and the testbed's aliases both work with the testbed up; --ssh-config alone when given;
an unknown alias names the configs read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.errors import ConnectError
from workbench.hosts import connect

pytestmark = pytest.mark.testbed


@pytest.fixture
def user_home(testbed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp HOME whose ~/.ssh/config (via an Include) names gpu-a's address as ``my-box``,
    with the testbed's key and known_hosts; the testbed's own state stays where it is."""
    tb_dir = Path(testbed.ssh_config).parent
    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tb_dir))
    monkeypatch.delenv("WORKBENCH_SSH_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    address = next(h.address for h in testbed.hosts if h.name == "gpu-a")
    ssh = tmp_path / ".ssh"
    (ssh / "config.d").mkdir(parents=True)
    (ssh / "config").write_text("Include config.d/*.conf\n\nHost *\n    User nobody\n")
    (ssh / "config.d/lab.conf").write_text(
        f"Host my-box\n    HostName {address}\n    User root\n    IdentityFile {testbed.key}\n"
        f"    IdentitiesOnly yes\n    UserKnownHostsFile {testbed.known_hosts}\n")
    return tmp_path


def test_user_alias_and_testbed_alias_both_resolve(user_home: Path) -> None:
    mine, theirs = connect("my-box"), connect("gpu-b")
    try:
        assert mine.run(["hostname"], check=True).stdout.strip() == "gpu-a"
        assert theirs.run(["hostname"], check=True).stdout.strip() == "gpu-b"
    finally:
        mine.close()
        theirs.close()


def test_explicit_ssh_config_is_read_alone(user_home: Path, testbed) -> None:
    only_user = connect("gpu-b", ssh_config=user_home / ".ssh/config")
    with pytest.raises(ConnectError, match="unknown host"):
        only_user.run(["true"])
    explicit = connect("gpu-b", ssh_config=str(testbed.ssh_config))
    try:
        assert explicit.run(["hostname"], check=True).stdout.strip() == "gpu-b"
    finally:
        explicit.close()


def test_unknown_alias_names_every_config_read(user_home: Path, testbed) -> None:
    with pytest.raises(ConnectError) as info:
        connect("my-h100").run(["true"])
    msg = str(info.value)
    for path in (testbed.ssh_config, user_home / ".ssh/config", user_home / ".ssh/config.d/lab.conf"):
        assert str(path) in msg


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workbench", *argv], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def test_status_cli_with_a_user_alias_and_with_ssh_config(user_home: Path, testbed) -> None:
    proc = _cli("status", "my-box", "ssh.service", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["active"] == "active"
    proc = _cli("status", "gpu-b", "ssh.service", "--json", "--ssh-config", str(testbed.ssh_config))
    assert proc.returncode == 0, proc.stderr
    proc = _cli("status", "gpu-b", "--ssh-config", str(user_home / ".ssh/config"))
    assert proc.returncode == 3 and "unknown host" in proc.stderr and ".ssh/config" in proc.stderr  # host problem
