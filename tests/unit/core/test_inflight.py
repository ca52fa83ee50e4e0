"""Fenced session commands (workbench.inflight) and the fence a restorer puts up (hostguard.fence),
run for real on this machine: real flock, real processes, a FIFO to hold a command in flight."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workbench import hostguard, inflight
from workbench.errors import SessionFenced
from workbench.hosts import LocalHost, Result

SID = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def fenced(tmp_path: Path) -> tuple[LocalHost, inflight.Fence]:
    record = tmp_path / "session.json"
    record.write_text(json.dumps({"id": SID, "created": ["v.service"], "fenced_by": None}, indent=1))
    host = LocalHost("bed")
    fence = inflight.Fence(str(tmp_path), str(record), SID)
    inflight.apply(host, fence)
    return host, fence


def _in_flight(host: LocalHost, tmp: Path, then: str) -> tuple[threading.Thread, list[Result], Path]:
    """A fenced command that says it started, then waits on a FIFO before doing ``then``."""
    fifo, started = tmp / "go", tmp / "started"
    os.mkfifo(fifo)
    out: list[Result] = []
    t = threading.Thread(target=lambda: out.append(host.run(f"touch {started}; read x < {fifo}; {then}", timeout=60)))
    t.start()
    return t, out, started


def _wait_for(path: Path) -> None:
    for _ in range(400):
        if path.exists():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{path} never appeared")


def test_a_fenced_command_runs_while_the_record_is_the_sessions(fenced, tmp_path):
    host, _fence = fenced
    res = host.run(["sh", "-c", 'printf "%s" "$1"', "x", "hello 'quoted'"])
    assert res.ok and res.stdout == "hello 'quoted'"
    assert host.run("exit 3").exited == 3  # the command's own exit status comes through
    assert host.run(f"exit {inflight.FENCED_EXIT}").exited == inflight.FENCED_EXIT  # its own 86 is no refusal
    assert host.run(["cat"], input="from stdin").stdout == "from stdin"


@pytest.mark.parametrize("record", [None, {"id": "another"}, {"id": SID, "fenced_by": {"by": "guard", "at": 1}},
                                    {"id": SID, "fenced_by": {"by": "guard", "at": 1, "why": "no heartbeat for 23 s"}}])
def test_a_fenced_command_is_refused_once_the_record_is_not_the_sessions(fenced, tmp_path, record):
    host, fence = fenced
    if record is None:
        Path(fence.record).unlink()
    else:
        Path(fence.record).write_text(json.dumps(record, indent=1))
    for check in (False, True):  # refused is an error whether or not the caller checks the exit
        with pytest.raises(SessionFenced, match="this session's commands are refused") as info:
            host.run(["touch", str(tmp_path / "late")], check=check)
        assert info.value.result.exited == inflight.FENCED_EXIT and "fenced off" in info.value.result.stderr
        why = ((record or {}).get("fenced_by") or {}).get("why", "")
        assert info.value.why == why and (f"({why})" in str(info.value)) == bool(why)
    assert not (tmp_path / "late").exists()


def test_fence_waits_for_the_command_in_flight_then_refuses_later_ones(fenced, tmp_path):
    host, fence = fenced
    t, out, started = _in_flight(host, tmp_path, f"touch {tmp_path / 'installed'}")
    _wait_for(started)
    done: list[tuple[object, dict]] = []
    f = threading.Thread(target=lambda: done.append(hostguard.fence(fence.record, fence.lock, SID, "test", 30)))
    f.start()
    f.join(0.5)
    assert f.is_alive() and not done  # still waiting: the install has not ended
    assert json.loads(Path(fence.record).read_text())[inflight.MARK]["by"] == "test"  # marked before waiting
    (tmp_path / "go").write_text("now\n")  # the install ends, late
    f.join(10)
    t.join(10)
    fd, what = done[0]
    assert fd is not None and what["fenced"] and what["ended_groups"] == []
    assert out[0].ok and (tmp_path / "installed").exists()  # finished *before* the fence returned
    assert not Path(fence.lock).exists()
    with pytest.raises(SessionFenced):  # a new lock file: refused by the record's mark
        host.run(["touch", str(tmp_path / "late")])
    assert not (tmp_path / "late").exists()
    os.close(fd)  # type: ignore[arg-type]


def test_fence_ends_a_command_that_outlives_its_wait(fenced, tmp_path):
    host, fence = fenced
    t, out, started = _in_flight(host, tmp_path, f"touch {tmp_path / 'installed'}")
    _wait_for(started)
    fd, what = hostguard.fence(fence.record, fence.lock, SID, "test", 0.3)
    assert fd is not None and what["fenced"] and len(what["ended_groups"]) == 1
    t.join(10)
    assert not t.is_alive() and not out[0].ok
    with pytest.raises(OSError):  # nothing reads the FIFO any more: the install can never happen
        os.open(tmp_path / "go", os.O_WRONLY | os.O_NONBLOCK)
    assert not (tmp_path / "installed").exists()
    os.close(fd)


def test_fence_of_no_record_does_nothing(tmp_path):
    fd, what = hostguard.fence(str(tmp_path / "none.json"), str(tmp_path / "l.lock"), SID, "test", 1)
    assert fd is None and what == {"fenced": False, "why": "no record of this session"}


def test_fence_from_the_controller_side_runs_the_script_on_stdin(fenced, tmp_path):
    host, fence = fenced
    inflight.apply(host, None)  # a restorer's own commands are not fenced
    argv = inflight.fence_argv(record=fence.record, lock=fence.lock, session_id=SID, by="next session",
                               why="its controller was gone")
    res = host.run([sys.executable if a == "python3" else a for a in argv], input=inflight.script(), timeout=30)
    assert res.ok, res.stderr
    what = json.loads(res.stdout.splitlines()[-1])
    mark = json.loads(Path(fence.record).read_text())[inflight.MARK]
    assert what["fenced"] and mark["by"] == "next session" and mark["why"] == "its controller was gone"


def test_the_guard_restores_after_the_in_flight_install_so_its_file_is_removed(fenced, tmp_path):
    """The race of a controller killed mid-install: the install places its file after the guard
    took over; the guard's undo (which removes it) runs only after the install ended."""
    host, fence = fenced
    variant = tmp_path / "v.service"
    record = {"id": SID, "created": ["v.service"], "snapshots": {}, "fenced_by": None,
              "undo": [{"do": "remove", "unit": "v.service", "argv": ["rm", "-f", str(variant)]}]}
    Path(fence.record).write_text(json.dumps(record, indent=1))
    lock = tmp_path / "session.lock"
    t, _out, started = _in_flight(host, tmp_path, f"touch {variant}")
    _wait_for(started)
    g = subprocess.Popen([sys.executable, hostguard.__file__, "--id", SID, "--record", fence.record, "--beat",
                          str(tmp_path / "beat"), "--lock", str(lock), "--owner", str(tmp_path / "owner.json"),
                          "--inflight", fence.lock, "--fence-wait", "30"], stdout=subprocess.PIPE, text=True)
    assert g.stdout is not None
    assert "armed for session" in g.stdout.readline()
    # The session's lock is free (its holder is gone): the guard fences, then waits on the install.
    while inflight.MARK + '": {' not in Path(fence.record).read_text():
        assert g.poll() is None
        threading.Event().wait(0.02)
    # Who fenced it and why, for its controller should it still be alive (it reads them).
    assert json.loads(Path(fence.record).read_text())[inflight.MARK]["why"] == "its lock was released without a restore"
    (tmp_path / "go").write_text("now\n")
    out_text, _ = g.communicate(timeout=30)
    t.join(10)
    assert g.returncode == 0, out_text
    assert "host restored" in out_text and "fenced the session's commands off" in out_text
    assert not variant.exists() and not Path(fence.record).exists()


def _holder(path: Path, wait: float = 0) -> tuple[subprocess.Popen[str], int]:
    from workbench.lock import lock_argv

    p = subprocess.Popen(lock_argv(str(path), wait), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    word, pid = p.stdout.readline().split()
    assert word == "LOCKED"
    return p, int(pid)


def test_the_host_lock_leaves_no_file_and_a_waiter_takes_the_new_one(tmp_path):
    path = tmp_path / "workbench.lock"
    a, pid = _holder(path)
    # the PID printed is the reader's (what the guard ends): a subshell of the holder, naming the lock file
    assert os.fsencode(str(path)) in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:] and pid != a.pid
    assert path.exists()
    got: list[tuple[subprocess.Popen[str], int]] = []
    b_thread = threading.Thread(target=lambda: got.append(_holder(path, wait=20)))
    b_thread.start()
    b_thread.join(0.5)
    assert b_thread.is_alive()  # waiting on a's lock
    assert a.stdin is not None
    a.stdin.close()  # a lets go: its file is removed while still locked; b re-opens the new one
    assert a.wait(10) == 0
    b_thread.join(20)
    b, _ = got[0]
    assert path.exists()
    c = subprocess.run(["flock", "-n", "-E", "75", str(path), "true"])  # b holds the file at the path
    assert c.returncode == 75
    assert b.stdin is not None
    b.stdin.close()
    assert b.wait(10) == 0 and not path.exists()


def test_a_command_after_the_restorer_removed_the_state_dir_is_refused_too(fenced, tmp_path):
    """The restorer is done: it removed the record and the empty state dir; flock cannot make the lock
    file (exit 66) -- a refusal as well, not a command failure."""
    host, fence = fenced
    state = tmp_path / "state"
    state.mkdir()
    moved = inflight.Fence(str(state), str(state / "session.json"), SID)
    inflight.apply(host, moved)
    state.rmdir()
    with pytest.raises(SessionFenced):
        host.run(["touch", str(tmp_path / "late")])
    assert not (tmp_path / "late").exists()
    inflight.apply(host, fence)
    other = tmp_path / "nodir" / "x.lock"  # another path's open failure is that command's own
    assert host.run(["flock", "-n", str(other), "true"]).exited == inflight.FLOCK_CANNOT_OPEN
