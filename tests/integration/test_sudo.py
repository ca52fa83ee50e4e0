"""sudo to root through the SSH seam (claim F8), against real sshd and Debian's sudo on a testbed host.

An unprivileged account is made on gpu-a for these tests (password, the testbed key, a sudoers
drop-in) and removed afterwards: the host is left as found.
"""

from __future__ import annotations

import secrets
import threading
from pathlib import Path

import pytest

from workbench.errors import ConnectError, SudoAuthFailure
from workbench.services.systemd import SystemdServices
from workbench.ssh import SUDO_PASSWORD_ENV, SSHHost

pytestmark = pytest.mark.testbed

USER = "wbops"
SUDOERS = f"/etc/sudoers.d/{USER}"
BASE_UNIT = "sglang-k26-ddtree.service"


@pytest.fixture
def sudo_account(testbed, host_a, tmp_path: Path):
    """(ssh_config, alias, password) of a non-root login on gpu-a that may sudo with its password."""
    password = "wb-" + secrets.token_hex(8)
    # pam_nologin refuses every login but root's while /run/nologin exists (from boot until
    # systemd-user-sessions starts): wait for the boot's jobs, as a user would.
    host_a.run(["systemctl", "is-system-running", "--wait"], timeout=120)
    host_a.run(["sh", "-c", _ADD_USER, "add", USER, SUDOERS], input=f"{USER}:{password}\n", check=True)
    a = testbed.hosts[0]
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host gpu-a-ops\n    HostName {a.address}\n    User {USER}\n    IdentityFile {testbed.key}\n"
        f"    IdentitiesOnly yes\n    UserKnownHostsFile {testbed.known_hosts}\n    StrictHostKeyChecking yes\n"
    )
    try:
        _logs_in(SSHHost("gpu-a-ops", ssh_config=str(cfg)), host_a)
        yield str(cfg), "gpu-a-ops", password
    finally:
        # pkill returns before its victims are gone, and userdel refuses a user that still runs a process (CI's
        # run once kept the account that way): wait for them (10 s at most) first.
        host_a.run(["sh", "-c", 'pkill -KILL -u "$1" || true; i=0; while pgrep -u "$1" >/dev/null && [ $i -lt 100 ]; '
                    'do sleep 0.1; i=$((i+1)); done; userdel -r "$1" 2>/dev/null; rm -f "$2" /tmp/wb-sudo-*',
                    "del", USER, SUDOERS], timeout=60, check=True)
        assert host_a.run(["id", USER]).exited != 0


def _logs_in(ops: SSHHost, root: SSHHost) -> None:
    """The account logs in, or the test fails with what gpu-a's sshd and PAM said (CI once saw every login of it
    end at authentication, "transport shut down", the symptom of a PAM account refusal such as /run/nologin)."""
    try:
        assert ops.run(["id", "-un"], check=True).stdout.strip() == USER
    except ConnectError as exc:
        why = root.run("systemctl is-system-running; systemctl show -p ActiveState,ActiveEnterTimestamp,InactiveEnterTimestamp systemd-user-sessions; ls -l --time-style=full-iso /run/nologin /etc/nologin "
                       "2>&1; cat /run/nologin 2>/dev/null; journalctl -u ssh.service -n 20 --no-pager -o short-iso")
        pytest.fail(f"{USER} cannot log in to gpu-a: {exc}\n{why.stdout}{why.stderr}")
    finally:
        ops.close()


_ADD_USER = (
    'set -e; useradd -m -s /bin/sh "$1"; chpasswd; install -d -m 700 -o "$1" -g "$1" "/home/$1/.ssh"; '
    'install -m 600 -o "$1" -g "$1" /root/.ssh/authorized_keys "/home/$1/.ssh/authorized_keys"; '
    'printf "%s ALL=(ALL:ALL) ALL\\n" "$1" > "$2.tmp"; chmod 440 "$2.tmp"; visudo -cqf "$2.tmp"; mv "$2.tmp" "$2"'
)


def test_wrong_password_raises_auth_failure_before_any_command(sudo_account, host_a):
    cfg, alias, _ = sudo_account
    h = SSHHost(alias, ssh_config=cfg, sudo=True, sudo_password="not-the-password")
    try:
        with pytest.raises(SudoAuthFailure, match="wrong password"):
            h.run("touch /tmp/wb-sudo-never")
    finally:
        h.close()
    assert host_a.run("test -e /tmp/wb-sudo-never").exited == 1


def test_no_password_where_one_is_needed_says_how_to_give_it(sudo_account, monkeypatch):
    cfg, alias, _ = sudo_account
    monkeypatch.delenv(SUDO_PASSWORD_ENV, raising=False)
    h = SSHHost(alias, ssh_config=cfg, sudo=True)
    try:
        with pytest.raises(SudoAuthFailure, match=SUDO_PASSWORD_ENV):
            h.run("true")
    finally:
        h.close()


def test_redirections_pipes_env_and_input_run_as_root(sudo_account, host_a, monkeypatch):
    cfg, alias, password = sudo_account
    plain = SSHHost(alias, ssh_config=cfg)
    monkeypatch.setenv(SUDO_PASSWORD_ENV, password)
    h = SSHHost(alias, ssh_config=cfg, sudo=True)
    try:
        assert plain.run("id -u", check=True).stdout.strip() != "0"
        # the redirection target is only writable by root; the pipe's far end runs as root too
        res = h.run('id -u > /root/wb-sudo-probe && cat /root/wb-sudo-probe | tr 0 Z; cat; printf %s "$X"',
                    input="stdin-data;", env={"X": "env-value"}, check=True)
        assert res.stdout == "Z\nstdin-data;env-value"
        assert host_a.run("stat -c %U /root/wb-sudo-probe", check=True).stdout.strip() == "root"
        host_a.run("rm -f /root/wb-sudo-probe", check=True)
        # a stream (journal follows use these) runs as root as well
        stream = h.stream(["sh", "-c", "id -u; echo done"])
        assert list(stream) == ["0", "done"]
        # and the service layer works through it: systemd reads need no root, journal reads do
        assert SystemdServices(h).status(BASE_UNIT).load_state == "loaded"
        assert h.run(["journalctl", "-u", BASE_UNIT, "-n", "1", "--no-pager", "-q"]).exited == 0
    finally:
        h.close()
        plain.close()


def test_the_password_never_appears_on_a_command_line(sudo_account, host_a):
    cfg, alias, password = sudo_account
    h = SSHHost(alias, ssh_config=cfg, sudo=True, sudo_password=password)
    host_a.put(password.encode(), "/tmp/wb-sudo-pat")
    done: dict[str, object] = {}

    def slow() -> None:
        done["res"] = h.run("sleep 2; id -u", timeout=30)

    try:
        t = threading.Thread(target=slow)
        t.start()
        hits = []
        while t.is_alive():
            scan = host_a.run("grep -laF -f /tmp/wb-sudo-pat /proc/[0-9]*/cmdline 2>/dev/null || true")
            hits += scan.stdout.split()
            t.join(0.2)
        assert done["res"].stdout.strip() == "0"  # type: ignore[attr-defined]
        assert hits == []
    finally:
        h.close()


def test_passwordless_sudo_gets_stdin_untouched_even_with_a_password_set(sudo_account, host_a):
    cfg, alias, _ = sudo_account
    host_a.run(["sh", "-c", 'printf "%s ALL=(ALL:ALL) NOPASSWD: ALL\\n" "$1" > "$2"', "nopw", USER, SUDOERS], check=True)
    h = SSHHost(alias, ssh_config=cfg, sudo=True, sudo_password="unused-and-wrong")
    try:
        res = h.run('id -u; cat; printf %s "$Y"', input="only-this", env={"Y": "!"}, check=True)
        assert res.stdout == "0\nonly-this!"
    finally:
        h.close()
