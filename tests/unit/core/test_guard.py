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
