"""The testbed itself: real sshd by alias with strict host keys, real systemd and journald, isolation."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from workbench.errors import HostKeyError
from workbench.ssh import SSHHost

pytestmark = pytest.mark.testbed


def test_openssh_by_alias_with_strict_host_keys(ssh_config):
    out = subprocess.run(["ssh", "-F", ssh_config, "gpu-a", "systemctl", "is-system-running"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() in ("running", "degraded"), out.stderr
    text = Path(ssh_config).read_text()
    assert "StrictHostKeyChecking yes" in text and "Host gpu-b" in text


def test_systemctl_and_journalctl_inside_a_host(host_a):
    assert host_a.run(["systemctl", "is-active", "ssh.service"]).stdout.strip() == "active"
    marker = "wb-journal-probe-7d1e"
    host_a.run(["systemd-cat", "-t", "probe", "echo", marker], check=True)
    out = host_a.run(["journalctl", "--sync"], timeout=30)
    assert out.ok
    got = host_a.run(["journalctl", "-t", "probe", "-o", "cat", "--no-pager"], check=True).stdout
    assert marker in got


def test_hosts_do_not_share_filesystems(host_a, host_b):
    host_a.put(b"only on a\n", "/root/isolation-probe")
    try:
        assert host_b.run(["test", "-e", "/root/isolation-probe"]).exited == 1
        assert host_a.run(["hostname"]).stdout.strip() == "gpu-a"
        assert host_b.run(["hostname"]).stdout.strip() == "gpu-b"
        ids = {h.run(["cat", "/etc/machine-id"]).stdout for h in (host_a, host_b)}
        assert len(ids) == 2
    finally:
        host_a.run(["rm", "-f", "/root/isolation-probe"])


def test_unknown_host_key_is_refused(testbed, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(Path(testbed.ssh_config).read_text().replace(str(testbed.known_hosts), str(empty)))
    with pytest.raises(HostKeyError, match="unknown"):
        SSHHost("gpu-a", ssh_config=cfg).run("true")


def test_changed_host_key_is_refused(testbed, tmp_path):
    # gpu-b's real keys recorded under gpu-a's address: exactly what a reinstalled or spoofed host looks like.
    lines = Path(testbed.known_hosts).read_text().splitlines()
    a, b = testbed.hosts[0].address, testbed.hosts[1].address
    swapped = [f"{a} {line.split(' ', 1)[1]}" for line in lines if line.startswith(b + " ")]
    bad = tmp_path / "known_hosts"
    bad.write_text("\n".join(swapped) + "\n")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(Path(testbed.ssh_config).read_text().replace(str(testbed.known_hosts), str(bad)))
    with pytest.raises(HostKeyError, match="CHANGED"):
        SSHHost("gpu-a", ssh_config=cfg).run("true")
