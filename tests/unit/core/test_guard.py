"""The host's guard (hostguard.py) run for real on this machine: real flock, real processes, real files."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench import hostguard
from workbench.lock import lock_argv
from workbench.services import ProcessServices, SystemdServices
from workbench.session import Record, Snapshot, undo_steps

SCRIPT = Path(hostguard.__file__)


class Bed:
    """A session's files as the controller leaves them: record, lock (held by flock + cat), heartbeat."""

    def __init__(self, tmp: Path, *, stale: float = 30.0) -> None:
        self.tmp = tmp
        self.record, self.lock, self.owner, self.beat = (tmp / n for n in ("session.json", "l.lock", "o.json", "b"))
        self.base = tmp / "base.service"
        self.base.write_text("[Service]\nExecStart=/bin/true\n")
        self.stale = stale
        self.holder = subprocess.Popen(lock_argv(str(self.lock)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True)
        assert self.holder.stdout is not None
        word, pid = self.holder.stdout.readline().split()
        assert word == "LOCKED"
        self.holder_pid = int(pid)
        self.owner.write_text(json.dumps({"host_pid": self.holder_pid}))
        self.beat.touch()

    def write_record(self, session_id: str = "s1", files: dict[str, str] | None = None) -> None:
        digest = hashlib.sha256(self.base.read_bytes()).hexdigest()
        rec = {"id": session_id, "owner": {"host_pid": self.holder_pid}, "created": ["v.service"],
               "snapshots": {"base.service": {"files": files or {str(self.base): digest}}},
               "undo": [{"do": "remove", "unit": "v.service", "argv": ["touch", str(self.tmp / "removed")]},
                        {"do": "start", "unit": "base.service", "argv": ["touch", str(self.tmp / "started")],
                         "check": ["test", "-e", str(self.tmp / "started")]}]}
        self.record.write_text(json.dumps(rec))

    def guard(self, session_id: str = "s1") -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, str(SCRIPT), "--id", session_id, "--record", str(self.record),
                                 "--beat", str(self.beat), "--lock", str(self.lock), "--owner", str(self.owner),
                                 "--inflight", str(self.tmp / "inflight.lock"), "--stale", str(self.stale)], stdout=subprocess.PIPE, text=True)

    def close(self) -> None:
        if self.holder.poll() is None:
            self.holder.kill()
        self.holder.wait()


@pytest.fixture
def bed(tmp_path):
    b = Bed(tmp_path)
    yield b
    b.close()


def armed(g: subprocess.Popen[str]) -> None:
    assert g.stdout is not None
    assert "armed for session" in g.stdout.readline()


def test_controller_gone_lock_released_guard_restores_from_the_record(bed):
    bed.write_record()
    g = bed.guard()
    armed(g)
    assert bed.holder.stdin is not None
    bed.holder.stdin.close()  # what the host sees when the controller dies: EOF, cat exits, flock frees
    out, _ = g.communicate(timeout=20)
    assert g.returncode == 0, out
    assert "its lock was released without a restore" in out and "host restored" in out
    assert (bed.tmp / "removed").exists() and (bed.tmp / "started").exists()
    assert not bed.record.exists() and not bed.owner.exists() and not bed.beat.exists()


def test_stale_heartbeat_guard_ends_the_frozen_holder_and_restores(tmp_path):
    bed = Bed(tmp_path, stale=1.0)
    try:
        bed.write_record()
        g = bed.guard()
        armed(g)  # the holder stays (a partition: its channel never closes); no more heartbeats
        out, _ = g.communicate(timeout=20)
        assert g.returncode == 0, out
        assert "no heartbeat for" in out and "host restored" in out
        assert bed.holder.wait(timeout=5) is not None  # its cat was ended, flock let go
        assert (bed.tmp / "started").exists()
    finally:
        bed.close()


def test_a_base_changed_since_the_record_is_not_guessed_at(bed):
    bed.write_record()
    bed.base.write_text("[Service]\nExecStart=/bin/false\n")  # edited while the session ran
    g = bed.guard()
    armed(g)
    assert bed.holder.stdin is not None
    bed.holder.stdin.close()
    out, _ = g.communicate(timeout=20)
    assert g.returncode == 1, out
    assert (bed.tmp / "removed").exists() and not (bed.tmp / "started").exists()
    rec = json.loads(bed.record.read_text())
    assert rec["created"] == [] and "unit files changed" in rec["guard"]["problems"][0]
    assert "--accept-current" in out


def test_disarmed_by_sigterm_does_nothing(bed):
    bed.write_record()
    g = bed.guard()
    armed(g)
    g.send_signal(signal.SIGTERM)
    assert g.wait(timeout=10) == 0
    assert bed.record.exists() and not (bed.tmp / "removed").exists()


def test_another_sessions_record_is_left_alone(bed):
    bed.write_record(session_id="other")
    g = bed.guard("s1")
    out, _ = g.communicate(timeout=10)
    assert g.returncode == 0 and "nothing to guard" in out
    assert bed.record.exists() and not (bed.tmp / "removed").exists()


def test_the_guard_never_ends_a_holder_that_is_not_its_sessions(tmp_path):
    bed = Bed(tmp_path, stale=1.0)
    try:
        bed.write_record()
        bed.owner.write_text(json.dumps({"host_pid": os.getpid()}))  # a later session's holder, not ours
        g = bed.guard()
        armed(g)
        time.sleep(2.5)  # the heartbeat is stale; the guard may only wait for the lock
        assert bed.holder.poll() is None and g.poll() is None
        g.send_signal(signal.SIGTERM)
        g.wait(timeout=10)
    finally:
        bed.close()


def _record() -> Record:
    snap = Snapshot("base.service", True, "active", "enabled", {"/etc/systemd/system/base.service": "ab"})
    idle = Snapshot("other.service", False, "inactive", "disabled", {})
    return Record(snapshots={"base.service": snap, "other.service": idle}, created=["base-wb-1.service"])


@pytest.mark.parametrize("svc", [SystemdServices(None), ProcessServices(None, "/srv/wb")])  # type: ignore[arg-type]
def test_undo_steps_remove_variants_first_then_put_each_base_back(svc):
    steps = undo_steps(_record(), svc)
    assert [(s["do"], s["unit"]) for s in steps] == [("remove", "base-wb-1.service"), ("start", "base.service"),
                                                     ("stop", "other.service")]
    assert steps[0]["argv"] == svc.remove_variant_argv("base-wb-1.service")
    assert steps[1]["argv"] == svc.start_argv("base.service") and steps[1]["check"] == svc.running_argv("base.service")


def test_a_disarm_that_comes_while_the_guard_restores_waits_for_the_restore(bed):
    """A controller that restored itself through a new connection disarms the guard that took over at
    the same moment: the guard, which fenced the session already, finishes instead of leaving the
    host to nobody."""
    bed.write_record()
    rec = json.loads(bed.record.read_text())
    removing, go = bed.tmp / "removing", bed.tmp / "go"
    rec["undo"][0]["argv"] = ["sh", "-c", 'touch "$1"; i=0; while [ ! -e "$2" ] && [ $i -lt 200 ]; do '
                              'sleep 0.05; i=$((i+1)); done; touch "$3"', "step", str(removing), str(go),
                              str(bed.tmp / "removed")]
    bed.record.write_text(json.dumps(rec))
    g = bed.guard()
    armed(g)
    assert bed.holder.stdin is not None
    bed.holder.stdin.close()  # the controller's lock ends: the guard takes over
    deadline = time.monotonic() + 20
    while not removing.exists():  # the guard is in its restore, past the fence
        assert time.monotonic() < deadline and g.poll() is None
        time.sleep(0.05)
    g.send_signal(signal.SIGTERM)
    go.touch()
    out, _ = g.communicate(timeout=20)
    assert g.returncode == 0, out
    assert "finishing the restore first" in out and "host restored" in out
    assert (bed.tmp / "removed").exists() and (bed.tmp / "started").exists() and not bed.record.exists()


def test_the_mark_never_writes_back_a_record_removed_after_it_was_read(tmp_path, monkeypatch):
    """The controller's own restore removes the record between the guard's read and its write."""
    record = tmp_path / "session.json"
    record.write_text(json.dumps({"id": "s1"}))
    real = hostguard.load

    def read_then_removed(path):
        data = real(path)
        record.unlink(missing_ok=True)
        return data

    monkeypatch.setattr(hostguard, "load", read_then_removed)
    assert hostguard.mark(str(record), "s1", "guard 1") is None
    assert list(tmp_path.iterdir()) == []


def test_the_mark_lands_on_a_record_written_anew_after_it_was_read(tmp_path, monkeypatch):
    """A record write in flight (a new file renamed over it) lands between the read and the write:
    the newer record is the one marked."""
    record = tmp_path / "session.json"
    record.write_text(json.dumps({"id": "s1", "created": []}))
    real, calls = hostguard.load, []

    def read_then_rewritten(path):
        data = real(path)
        calls.append(path)
        if len(calls) == 1:
            (tmp_path / "new").write_text(json.dumps({"id": "s1", "created": ["v.service"]}))
            os.replace(tmp_path / "new", record)
        return data

    monkeypatch.setattr(hostguard, "load", read_then_rewritten)
    marked = hostguard.mark(str(record), "s1", "guard 1", "why")
    assert marked is not None and marked["created"] == ["v.service"]
    on_disk = json.loads(record.read_text())
    assert on_disk["created"] == ["v.service"] and on_disk[hostguard.MARK]["by"] == "guard 1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.json"]
