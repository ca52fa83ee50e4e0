"""The heartbeat through the lock holder (HostLock.beat), run for real: real flock, real sh, real files."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from workbench import hostguard
from workbench.hosts import LocalHost
from workbench.lock import HostLock


@pytest.fixture
def lock(tmp_path: Path):
    lk = HostLock(LocalHost(), name="beat-test", lock_dir=str(tmp_path / "lock"))
    lk.acquire()
    yield lk
    lk.release()


def test_a_beat_appends_to_the_file_and_is_answered(lock: HostLock, tmp_path: Path) -> None:
    beat = tmp_path / "g.beat"
    beat.touch()
    os.utime(beat, (1, 1))
    assert lock.beat(str(beat), 5)
    assert beat.stat().st_mtime > time.time() - 60 and beat.read_bytes() == b"."
    assert lock.beat(str(beat), 5) and lock.beat(str(beat), 5)
    assert beat.read_bytes() == b"..." and lock.held


def test_a_beat_never_makes_the_file_and_is_not_acknowledged_without_it(lock: HostLock, tmp_path: Path) -> None:
    beat = tmp_path / "gone.beat"
    assert not lock.beat(str(beat), 5)
    assert not lock.beat(str(beat), 5)
    assert not beat.exists() and lock.held and lock._unacked == 0  # answered "no": nothing left owed
    beat.touch()
    assert lock.beat(str(beat), 5, reopen=True)  # the file made since: the next beats land
    assert beat.read_bytes() == b"."


def test_a_removed_file_is_not_brought_back_and_a_new_one_is_opened_on_reopen(lock: HostLock, tmp_path: Path) -> None:
    beat = tmp_path / "g.beat"
    beat.touch()
    assert lock.beat(str(beat), 5)
    beat.unlink()
    assert lock.beat(str(beat), 5)  # the holder still has the removed file open: it is not made again
    assert not beat.exists()
    beat.touch()
    os.utime(beat, (1, 1))
    assert lock.beat(str(beat), 5, reopen=True)
    assert beat.read_bytes() == b"." and beat.stat().st_mtime > 1


def test_the_guard_ends_the_reader_and_the_lock_is_free(lock: HostLock, tmp_path: Path) -> None:
    """hostguard.holder_pid takes the recorded reader (its command line names the lock file), and
    ending it frees the lock, removes the lock file and ends the stream -- a beat then says False."""
    assert lock.owner_info is not None
    pid = lock.owner_info["host_pid"]
    owner = tmp_path / "owner.json"
    owner.write_text(f'{{"host_pid": {pid}}}')
    assert hostguard.holder_pid(str(owner), pid, lock.path) == pid
    assert hostguard.holder_pid(str(owner), pid, str(tmp_path / "other.lock")) is None
    assert hostguard.holder_pid(str(owner), pid + 1, lock.path) is None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while lock.held:
        assert time.monotonic() < deadline
        assert not lock.beat(str(tmp_path / "x"), 0.2)
    assert not Path(lock.path).exists()
    assert not lock.beat(str(tmp_path / "x"), 0.2)


def test_beats_answered_late_are_counted_not_taken_for_the_current_one(tmp_path: Path) -> None:
    """A holder that answers nothing for a while (here: stopped) fails the beats sent meanwhile; once it
    runs again its answers catch up, and the next beat is True only when all of them were answered."""
    lk = HostLock(LocalHost(), name="late", lock_dir=str(tmp_path / "lock")).acquire()
    try:
        beat = tmp_path / "g.beat"
        beat.touch()
        assert lk.beat(str(beat), 5)
        assert lk.owner_info is not None
        pid = lk.owner_info["host_pid"]
        os.kill(pid, signal.SIGSTOP)
        try:
            assert not lk.beat(str(beat), 0.3)
            assert not lk.beat(str(beat), 0.3)
            assert lk._unacked == 2
        finally:
            os.kill(pid, signal.SIGCONT)
        assert lk.beat(str(beat), 5)
        assert lk._unacked == 0 and beat.read_bytes() == b"...."
    finally:
        lk.release()


def test_a_beat_whose_write_finds_the_holder_gone_says_false(lock: HostLock, tmp_path: Path, monkeypatch) -> None:
    """The holder died (the guard ended it) a moment before the beat and its stream has not seen the end yet: the
    write's broken pipe is a False beat, not an exception (a unit run here hit one between the kill and the end)."""
    assert lock._stream is not None

    def gone(_data: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(lock._stream, "write", gone)
    assert not lock.beat(str(tmp_path / "x"), 0.2)
