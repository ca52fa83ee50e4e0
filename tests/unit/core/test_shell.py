import subprocess

import pytest

from workbench import shell


def run_sh(cmd: str, data: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["sh", "-c", cmd], input=data, capture_output=True, timeout=30)


@pytest.mark.parametrize("arg", ["a b", "it's", "$(id);x", "new\nline", "`uname`", "*", ""])
def test_join_quotes_every_item(arg):
    out = run_sh(shell.join(["printf", "%s|", arg])).stdout.decode()
    assert out == arg + "|"


def test_env_travels_on_stdin_not_on_the_command_line():
    cmd, prefix = shell.with_env_from_stdin(["sh", "-c", 'printf %s "$SECRET"; cat'], {"SECRET": "can ary$(id)\n"})
    assert "can ary" not in cmd
    out = run_sh(cmd, prefix + b"|rest").stdout.decode()
    assert out == "can ary$(id)\n|rest"


@pytest.mark.parametrize("keep", [0, 5, 9, -1])
def test_env_cut_before_its_end_never_runs_the_command(keep):
    # a sender killed mid-prefix: the command must not run with part of its environment (or none)
    cmd, prefix = shell.with_env_from_stdin(["sh", "-c", 'echo ran "$A" "$B"'], {"A": "one", "B": "two"})
    out = run_sh(cmd, prefix[:keep])
    assert out.returncode == shell.CUT_INPUT_EXIT
    assert b"ran" not in out.stdout
    assert b"environment came cut" in out.stderr


def test_env_rejects_bad_names():
    with pytest.raises(ValueError):
        shell.with_env_from_stdin("true", {"A B": "x"})


def test_deadline_kills_the_whole_process_group():
    marker = "sleep 31.5"
    proc = run_sh(shell.with_deadline(f"{marker} & {marker}; wait", 1))
    assert proc.returncode == shell.TIMEOUT_EXIT
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1


def test_tethered_command_dies_when_stdin_closes():
    marker = "sleep 32.5"
    proc = subprocess.Popen(["sh", "-c", shell.tethered(f"echo up; {marker}")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"up\n"
    proc.stdin.close()
    assert proc.wait(timeout=10) != 0
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1


def test_tethered_keeps_exit_status_while_tethered():
    # stdin stays open (our end is alive): the command ends on its own, with its own status.
    proc = subprocess.Popen(["sh", "-c", shell.tethered("exit 7")], stdin=subprocess.PIPE)
    try:
        assert proc.wait(timeout=10) == 7
    finally:
        proc.stdin.close()
