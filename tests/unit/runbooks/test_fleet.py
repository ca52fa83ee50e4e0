"""Fleet: one session per host held by its own worker, trials at the same time, each host restored."""

import threading
from typing import ClassVar

import pytest

from workbench import fleet as fleet_mod
from workbench.errors import HostError
from workbench.trials import TrialRecord


class FakeHost:
    def __init__(self, name):
        self.name = name


class FakeSession:
    log: ClassVar[list] = []

    def __init__(self, host, **kw):
        self.host, self.restored = host, False
        if host.name == "broken":
            raise HostError("ssh: connection refused", host=host.name)

    def __enter__(self):
        FakeSession.log.append(("enter", self.host.name))
        return self

    def __exit__(self, *exc):
        self.restored = True
        FakeSession.log.append(("restored", self.host.name))

    def base_text(self, base):
        return "[Service]\nExecStart=/bin/true\n"


@pytest.fixture
def fakes(monkeypatch):
    FakeSession.log = []
    monkeypatch.setattr(fleet_mod, "HostSession", FakeSession)
    monkeypatch.setattr(fleet_mod, "host_fingerprint", lambda host: f"fp-{host.name}")
    both = threading.Barrier(2, timeout=10)  # passes only if two trials run at the same time

    def run_trial(session, base, subset, **kw):
        both.wait()
        return TrialRecord(edits=[list(e) for e in subset], outcome="ready", phase="serving", exception_type=None,
                           signature=None, message=None, seconds=1.0, host=session.host.name)

    monkeypatch.setattr(fleet_mod, "run_trial", run_trial)


def test_two_hosts_run_two_trials_at_once_and_are_restored(fakes):
    hosts = [FakeHost("gpu-a"), FakeHost("gpu-b")]
    with fleet_mod.Fleet(hosts, "base.service") as f:
        assert f.width == 2
        recs = f.run([(("--a", True),), (("--b", True),)])
        recs += f.run([(("--c", True),), (("--d", True),)])
    assert [r.edits for r in recs] == [[["--a", True]], [["--b", True]], [["--c", True]], [["--d", True]]]
    assert {r.host for r in recs} == {"gpu-a", "gpu-b"}
    assert all(r.restored for r in f.reports) and sorted(e for e in FakeSession.log if e[0] == "restored") == [
        ("restored", "gpu-a"), ("restored", "gpu-b")]


def test_a_host_that_cannot_open_leaves_the_others_working(fakes, monkeypatch):
    monkeypatch.setattr(fleet_mod, "run_trial", lambda session, base, subset, **kw: TrialRecord(
        edits=[], outcome="ready", phase="serving", exception_type=None, signature=None, message=None, seconds=0.1,
        host=session.host.name))
    with fleet_mod.Fleet([FakeHost("broken"), FakeHost("gpu-a")], "base.service") as f:
        assert f.width == 1
        assert [r.host for r in f.run([(), ()])] == ["gpu-a", "gpu-a"]
    assert f.reports[0].error and "connection refused" in f.reports[0].error


def test_no_host_opens_raises_the_first_error(fakes):
    with pytest.raises(HostError), fleet_mod.Fleet([FakeHost("broken")], "base.service"):
        pass


def test_hosts_are_locked_one_after_the_other_in_name_order(fakes):
    with fleet_mod.Fleet([FakeHost("gpu-b"), FakeHost("gpu-a")], "base.service", teardown=lambda s: FakeSession.log.append(
            ("teardown", s.host.name))):
        pass
    entered = [name for what, name in FakeSession.log if what == "enter"]
    assert entered == ["gpu-a", "gpu-b"]
    assert sorted(name for what, name in FakeSession.log if what == "teardown") == ["gpu-a", "gpu-b"]
