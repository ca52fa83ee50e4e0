"""Fleet: one session per host held by its own worker, trials at the same time, each host restored."""

import threading
import time
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


# -- spares: a host that finds no job while run waits runs what the source names ---------------------------

A, B, C = (("--a", True),), (("--b", True),), (("--c", True),)


def record(session, subset):
    return TrialRecord(edits=[list(e) for e in subset], outcome="ready", phase="serving", exception_type=None,
                       signature=None, message=None, seconds=0.1, host=session.host.name)


def once(subset, asked):
    """A spare source that names ``subset`` once (while it is not busy), then nothing."""
    def source(busy):
        asked.append(list(busy))
        if len(asked) == 1 and subset not in busy:
            return subset
        return None
    return source


def test_an_idle_host_runs_a_spare_and_run_waits_for_it_instead_of_starting_it_again(fakes, monkeypatch):
    calls, b_started, release = [], threading.Event(), threading.Event()

    def run_trial(session, base, subset, **kw):
        calls.append(tuple(subset))
        if tuple(subset) == B:
            b_started.set()
            assert release.wait(10)
        else:
            assert b_started.wait(10)  # A ends only once the spare runs beside it
        FakeSession.log.append(("trial", session.host.name))
        return record(session, subset)

    monkeypatch.setattr(fleet_mod, "run_trial", run_trial)
    asked = []
    with fleet_mod.Fleet([FakeHost("gpu-a"), FakeHost("gpu-b")], "base.service") as f:
        f.set_spares(once(B, asked))
        (ra,) = f.run([A])
        assert asked[0] == [A]  # asked with the sets queued or running
        assert f.take_spares() == []  # B still runs
        threading.Timer(0.2, release.set).start()
        (rb,) = f.run([B])  # B is running as a spare: run waits for that trial
        f.set_spares(None)
    assert calls.count(B) == 1 and rb.edits == [["--b", True]] and ra.edits == [["--a", True]]
    assert f.take_spares() == []  # claimed by run: not handed back a second time
    assert sum(r.trials for r in f.reports) == 2


def test_a_finished_spare_is_handed_back_once_and_close_waits_for_a_running_one(fakes, monkeypatch):
    calls, c_started, release = [], threading.Event(), threading.Event()

    def run_trial(session, base, subset, **kw):
        calls.append(tuple(subset))
        if tuple(subset) == A:
            assert c_started.wait(10)  # A ends once spare B has ended and spare C runs on the other host
        if tuple(subset) == C:
            c_started.set()
            assert release.wait(10)
        FakeSession.log.append(("trial", tuple(subset)))
        return record(session, subset)

    monkeypatch.setattr(fleet_mod, "run_trial", run_trial)

    def source(busy):
        left = [s for s in (B, C) if s not in busy and s not in calls]
        return left[0] if left else None

    with fleet_mod.Fleet([FakeHost("gpu-a"), FakeHost("gpu-b")], "base.service") as f:
        f.set_spares(source)
        f.run([A])
        first = f.take_spares()
        assert [(s, r.edits) for s, r in first] == [(B, [["--b", True]])]
        assert f.take_spares() == []  # handed back once; C still runs
        f.set_spares(None)
        threading.Timer(0.2, release.set).start()
    (last,) = f.take_spares()  # C ended while the fleet closed: its record is still there
    assert last[0] == C and sorted(calls) == sorted([A, B, C])
    log = FakeSession.log
    assert log.index(("trial", C)) < log.index(("restored", last[1].host))  # close waited, then restored the host


def test_no_spare_is_asked_for_unless_run_waits_nor_after_the_source_is_cleared(fakes, monkeypatch):
    monkeypatch.setattr(fleet_mod, "run_trial", lambda session, base, subset, **kw: record(session, subset))
    asked = []

    def source(busy):
        asked.append(list(busy))
        return None

    with fleet_mod.Fleet([FakeHost("gpu-a"), FakeHost("gpu-b")], "base.service") as f:
        f.set_spares(source)
        time.sleep(0.2)
        assert asked == []  # idle hosts, but no run waits: the search may be computing
        f.run([A, B])
        f.set_spares(None)
        before = len(asked)
        f.run([C])
        time.sleep(0.1)
        assert len(asked) == before  # the search is over: nobody asks it
    assert sum(r.trials for r in f.reports) == 3


def test_a_spare_source_that_raises_costs_the_spares_never_a_host(fakes, monkeypatch):
    monkeypatch.setattr(fleet_mod, "run_trial", lambda session, base, subset, **kw: record(session, subset))

    def source(busy):
        raise RuntimeError("search state")

    with fleet_mod.Fleet([FakeHost("gpu-a"), FakeHost("gpu-b")], "base.service") as f:
        f.set_spares(source)
        assert [r.edits for r in f.run([A])] == [[["--a", True]]]
        assert [r.edits for r in f.run([B, C])] == [[["--b", True]], [["--c", True]]]
    assert not f.errors and all(r.restored and not r.error for r in f.reports)


def test_a_host_that_ends_the_batch_takes_the_next_batch_not_a_spare(fakes, monkeypatch):
    # the host that ran the batch's last trial must not start a spare before run() has its records: the next
    # batch would wait for it (the source was asked while run's wait had not yet woken)
    monkeypatch.setattr(fleet_mod, "run_trial", lambda session, base, subset, **kw: record(session, subset))
    asked = []
    with fleet_mod.Fleet([FakeHost("gpu-a")], "base.service") as f:
        f.set_spares(lambda busy: asked.append(busy) or B)
        for _ in range(20):
            f.run([A])
            time.sleep(0.005)
    assert asked == [] and sum(r.trials for r in f.reports) == 20


def _interrupted_trials(calls: list, told: list[bool]):
    """A ``run_trial`` for two hosts: once both run, one of their threads receives a Ctrl-C (``pthread_kill``: not
    the main thread); each then waits to be told to stop (``told``) and raises ``Stopped``, as the start watch does."""
    import signal

    from workbench.errors import Stopped

    both = threading.Barrier(2, timeout=10)

    def run_trial(session, base, subset, *, stop, **kw):
        calls.append(tuple(subset))
        if both.wait() == 0:
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        told.append(stop.wait(10))
        raise Stopped(f"{session.host.name}: the watch of the start was stopped")

    return run_trial


def test_an_interrupted_search_stops_the_trials_running_and_starts_none_queued(fakes, monkeypatch):
    """Ctrl-C while a batch runs on two hosts: both running trials are told to stop and both hosts are restored;
    the set queued behind them never starts a server."""
    calls: list = []
    told: list[bool] = []
    monkeypatch.setattr(fleet_mod, "run_trial", _interrupted_trials(calls, told))
    with pytest.raises(KeyboardInterrupt), fleet_mod.Fleet([FakeHost("gpu-a"), FakeHost("gpu-b")], "base.service") as f:
        f.run([A, B, C])
    assert sorted(calls) == sorted([A, B]) and told == [True, True]
    assert all(r.restored for r in f.reports), f.reports
    assert sorted(e for e in FakeSession.log if e[0] == "restored") == [("restored", "gpu-a"), ("restored", "gpu-b")]


def test_run_many_interrupted_stops_the_running_trials_and_starts_none_queued(fakes, monkeypatch):
    """The factorial's fleet (``run_many``): the same, and both hosts are restored before the interrupt reaches
    the caller."""
    class Svc:
        def unit_text(self, base):
            return "[Service]\nExecStart=/bin/true\n"

    class Session(FakeSession):
        svc = Svc()

    calls: list = []
    told: list[bool] = []
    monkeypatch.setattr(fleet_mod, "HostSession", Session)
    monkeypatch.setattr(fleet_mod, "run_trial", _interrupted_trials(calls, told))
    with pytest.raises(KeyboardInterrupt):
        fleet_mod.run_many([FakeHost("gpu-a"), FakeHost("gpu-b")], "base.service", [A, B, C])
    assert sorted(calls) == sorted([A, B]) and told == [True, True]
    assert sorted(e for e in FakeSession.log if e[0] == "restored") == [("restored", "gpu-a"), ("restored", "gpu-b")]
