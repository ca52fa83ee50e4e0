"""Service control on the testbed's real systemd: the claims of reliability_anchors.md (S, A, L)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import LockHeld, UnitNotFound, VariantError
from workbench.journal.read import invocation_text
from workbench.lock import HostLock
from workbench.services import SystemdServices
from workbench.session import HostSession, plan
from workbench.systemd import UnitStatus
from workbench.variants import Variant
from workbench.watch import PortInUse, watch_start

from .conftest import BASE, BASE_TEXT, SIM_BASE, as_found, tree_digest

pytestmark = pytest.mark.testbed

def test_missing_unit_is_reported_missing_never_inactive_exit_0(toy):
    st = SystemdServices(toy).status("no-such-unit-4f2a.service")
    assert st.missing and st.load_state == "not-found" and st.exit_status is None
    with pytest.raises(UnitNotFound):
        HostSession(toy).protect("no-such-unit-4f2a.service")


def test_failing_variant_reports_phase_exit_code_and_restores(toy):
    with HostSession(toy, purpose="test") as s:
        trial = s.run_variant(BASE, {"--mode": "fail", "--exit-code": "3"}, timeout=60)
        assert trial.outcome.outcome == "failed"
        assert trial.outcome.phase == "cuda_graph_capture"
        assert trial.exit_status == 3 and trial.exit_code == "exited"
        assert any("RuntimeError: toy capture failure" in line for line in trial.outcome.tail)
        assert not SystemdServices(toy).status(BASE).running  # the base stays stopped during the session
    as_found(toy)


def test_a_failed_start_read_beside_its_removal_is_the_invocation_read_after_it(toy):
    """``read_log``: the failed invocation's text, read on a second channel while the variant is
    removed, is what reading it afterwards gives; a start that became ready reads nothing."""
    with HostSession(toy, purpose="test") as s:
        trial = s.run_variant(BASE, {"--mode": "fail", "--exit-code": "3"}, timeout=60, read_log=True)
        assert trial.outcome.outcome == "failed" and trial.log_text is not None
        assert "RuntimeError: toy capture failure" in trial.log_text
        assert not SystemdServices(toy).variant_files()  # removed meanwhile
        assert trial.log_text == invocation_text(s.svc, trial.variant, trial.outcome.invocation_id)
        ready = s.run_variant(BASE, {"--mode": "ok", "--delay": "0"}, timeout=60, read_log=True)
        assert ready.outcome.ok and ready.log_text is None
    as_found(toy)


def test_a_health_answer_from_another_process_on_the_port_is_not_readiness(toy):
    """The port was free when the start was asked for; while the variant loads, another server
    takes it and answers 200.  That is not the variant's readiness: the variant then fails to bind."""
    svc = SystemdServices(toy)
    foreign = ["systemd-run", "--unit=toy-foreign", "--collect", "/usr/bin/python3", "/opt/toy/toy_server.py",
               "--port", "31000", "--delay", "0"]
    started: list[bool] = []

    def take_the_port(ev) -> None:
        if ev.phase == "weight_loading" and not started:
            started.append(toy.run(foreign).ok)

    try:
        with HostSession(toy, purpose="test") as s:
            v = s.variant(BASE, {"--delay": "4"})
            s.record.created.append(v.name)
            s.protect(BASE)
            svc.install_variant(v)
            svc.stop(BASE)
            out = watch_start(svc, v.name, timeout=60, on_event=take_the_port)
            assert started == [True]
            assert out.outcome == "failed", out.describe()  # it could not bind: never "ready"
            assert any("Address already in use" in line for line in out.tail), out.tail[-5:]
            toy.run("systemctl stop toy-foreign.service", check=True)  # the base's port free for the restore
    finally:
        toy.run("systemctl stop toy-foreign.service 2>/dev/null; true")
    as_found(toy)


def test_a_server_hung_after_its_failure_is_failed_not_a_timeout(toy):
    """The traceback logged, then the process neither exits nor logs (a stalled teardown): failed
    in the failure's phase once ``hang_grace`` of silence has passed, long before the timeout."""
    svc = SystemdServices(toy)
    with HostSession(toy, purpose="test") as s:
        v = s.variant(BASE, {"--mode": "fail-hang"})
        s.record.created.append(v.name)
        s.protect(BASE)
        svc.install_variant(v)
        svc.stop(BASE)
        t0 = time.monotonic()
        out = watch_start(svc, v.name, timeout=120, hang_grace=3)
        took = time.monotonic() - t0
        assert out.outcome == "failed" and out.phase == "cuda_graph_capture", out.describe()
        assert out.reason.startswith("hung after a failure in cuda_graph_capture: nothing logged for"), out.reason
        assert svc.status(v.name).running and took < 60, took  # judged while it still runs
        with pytest.raises(Exception, match="hang_grace"):
            watch_start(svc, v.name, start=False, timeout=5, hang_grace=0)
    as_found(toy)  # the session stopped and removed the hung variant


def test_a_start_told_to_stop_ends_its_watch_at_once_and_the_session_restores(toy):
    """``stop`` (a fleet's interrupted search tells its hosts' trials so): a start that would hang until its
    timeout (never ready, never failed) is left at once, mid-capture, and the session's exit restores."""
    from workbench.errors import Stopped

    stop = threading.Event()
    phases: list[str] = []

    def seen(ev) -> None:  # the stop comes once the start is in its last phase before the hang
        phases.append(ev.phase)
        if ev.phase == "cuda_graph_capture":
            stop.set()

    with HostSession(toy, purpose="test") as s:
        t0 = time.monotonic()
        with pytest.raises(Stopped, match="stopped"):
            s.run_variant(BASE, {"--mode": "hang", "--delay": "0"}, timeout=300, on_event=seen, stop=stop)
        assert time.monotonic() - t0 < 60 and phases[-1] == "cuda_graph_capture"
        assert SystemdServices(toy).variant_files()  # left for the session's exit, as after a Ctrl-C
    as_found(toy)


def test_ready_variant_and_argv_reaches_the_process_exactly(toy):
    evil = ["a b", "it's", '"dq"', "$(touch /tmp/pwned);x", "semi;colon", "new\nline", "100%", "back\\slash"]
    edits = {f"--x{i}": v for i, v in enumerate(evil)}
    with HostSession(toy) as s:
        trial = s.run_variant(BASE, edits, timeout=60, keep=True)
        assert trial.outcome.ok, trial.outcome.describe()
        line = next(x for x in trial.outcome.tail if x.startswith("argv="))
        argv = json.loads(line[5:])
        for i, v in enumerate(evil):
            assert argv[argv.index(f"--x{i}") + 1] == v
        assert toy.run(["test", "-e", "/tmp/pwned"]).exited == 1
    as_found(toy)


def test_missing_binary_fails_fast_and_is_never_ready(toy):
    base_text = BASE_TEXT.replace("/usr/bin/python3 /opt/toy", "/usr/bin/no-such-python /opt/toy")
    toy.put(base_text.encode(), "/etc/systemd/system/toy-missing.service")
    toy.run("systemctl daemon-reload", check=True)
    try:
        svc = SystemdServices(toy)
        v = Variant.build("toy-missing.service", svc.unit_text("toy-missing.service"), {})
        with pytest.raises(VariantError, match="not executable"):
            svc.install_variant(v)  # caught by systemd-analyze verify before it is placed
        assert toy.run(["test", "-e", v.path]).exited == 1
        # Placed anyway (verification bypassed): Type=exec makes the start itself fail, never "ready".
        toy.put(v.render().encode(), v.path)
        svc.daemon_reload()
        t0 = time.monotonic()
        toy.run(["systemctl", "stop", BASE], check=True)
        try:
            out = watch_start(svc, v.name, port=31000, timeout=30)
        finally:
            toy.run(["systemctl", "start", BASE], check=True)
        assert out.outcome == "failed" and time.monotonic() - t0 < 5, out.describe()
        svc.remove_variant(v.name)
    finally:
        toy.run("rm -f /etc/systemd/system/toy-missing.service; systemctl daemon-reload")


def test_exit_code_survives_until_read(toy):
    with HostSession(toy) as s:
        trial = s.run_variant(BASE, {"--mode": "fail", "--exit-code": "42"}, timeout=60, keep=True)
        st = SystemdServices(toy).status(trial.variant)
        assert st.active_state == "failed" and st.exit_status == 42
    as_found(toy)


def test_dead_man_switch_stops_a_variant_on_its_own(toy):
    with HostSession(toy) as s:
        v = s.variant(BASE, {"--mode": "hang"}, runtime_max_sec=2)
        s.record.created.append(v.name)
        s.protect(BASE)
        s.svc.install_variant(v)
        s.svc.stop(BASE)
        s.svc.start(v.name)
        deadline = time.monotonic() + 20
        st: UnitStatus = s.svc.status(v.name)
        while time.monotonic() < deadline and st.active_state != "failed":
            time.sleep(0.2)
            st = s.svc.status(v.name)
        assert st.active_state == "failed" and st.result == "timeout"
    as_found(toy)


def test_same_variant_twice_is_no_change(toy):
    with HostSession(toy) as s:
        first = s.run_variant(BASE, {"--mode": "fail"}, timeout=60, keep=True)
        digest = tree_digest(toy)
        second = s.run_variant(BASE, {"--mode": "fail"}, timeout=60, keep=True)
        assert first.changed and not second.changed and first.variant == second.variant
        assert tree_digest(toy) == digest
    as_found(toy)


def test_plan_changes_nothing(toy):
    before = tree_digest(toy)
    p = plan(toy, BASE, {"--ep-size": "8", "--enable-nccl-nvls": True})
    assert "+ExecStart=" in p.diff and "--enable-nccl-nvls" in p.unit_text
    assert any("daemon-reload" in c for c in p.commands)
    assert tree_digest(toy) == before


def test_invalid_unit_never_reaches_a_unit_path(toy):
    svc = SystemdServices(toy)
    bad = "[Service]\nExecStart=relative/path --x\nType=nonsense\n"
    with pytest.raises(VariantError):
        svc.verify(bad, "toy-wb-invalid.service")
    assert toy.run(["test", "-e", "/run/systemd/system/toy-wb-invalid.service"]).exited == 1


def test_pending_daemon_reload_of_someone_else_blocks_variants(toy):
    toy.put((BASE_TEXT + "\n# edited by someone\n").encode(), "/etc/systemd/system/toy.service")
    try:
        with pytest.raises(VariantError, match="daemon-reload"), HostSession(toy) as s:
            s.run_variant(BASE, {"--mode": "fail"}, timeout=30)
    finally:
        toy.put(BASE_TEXT.encode(), "/etc/systemd/system/toy.service")
        toy.run("systemctl daemon-reload", check=True)
    as_found(toy)


def test_a_removed_variant_is_unloaded_without_a_daemon_reload_and_keeps_its_journal(toy):
    """Stopped, reset and deleted, the variant is collected by PID 1: not-found, listed by nothing,
    nothing left waiting for a reload, and the failed start's journal still readable."""
    with HostSession(toy, purpose="test") as s:
        trial = s.run_variant(BASE, {"--mode": "fail", "--exit-code": "5"}, timeout=60)
        assert trial.outcome.outcome == "failed" and trial.exit_status == 5
        name = trial.variant
        assert toy.run(["test", "-e", f"/run/systemd/system/{name}"]).exited == 1
        assert toy.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "--", name]).stdout.strip() == ""
        st = SystemdServices(toy).status(name)
        assert st.load_state == "not-found" and not st.need_daemon_reload
        assert name not in SystemdServices(toy).pending_reloads()
        assert toy.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "--", name]).stdout.strip() == ""
        journal = toy.run(["journalctl", "--no-pager", "-o", "cat", "-u", name], check=True).stdout
        assert "toy capture failure" in journal
    as_found(toy)


def test_a_variant_still_referenced_at_its_removal_gets_the_reload(toy):
    """Something else keeps the variant loaded (a unit that wants it): the removal reloads, so systemd
    forgets the deleted file, and once the reference is gone nothing is listed."""
    with HostSession(toy, purpose="test") as s:
        trial = s.run_variant(BASE, {"--mode": "fail"}, timeout=60, keep=True)
        ref = "toy-ref-4c1d.service"
        toy.run(["systemd-run", f"--unit={ref}", f"--property=Wants={trial.variant}", "--quiet", "--",
                 "sleep", "60"], check=True)
        try:
            assert s.svc.remove_variant(trial.variant)
            st = s.svc.status(trial.variant)
            assert st.load_state == "not-found" and not st.need_daemon_reload
        finally:
            toy.run(["systemctl", "stop", "--", ref])
        assert toy.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "--",
                        trial.variant]).stdout.strip() == ""
    as_found(toy)


def test_someone_elses_pending_edit_is_left_pending(toy):
    """A variant placed without a reload applies nobody else's half-done edit (the unit stays pending)."""
    other = "/etc/systemd/system/toy-other-4c1d.service"
    text = "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n"  # stays loaded once started
    with HostSession(toy, purpose="test") as s:
        try:
            toy.put(text.encode(), other)
            toy.run("systemctl daemon-reload && systemctl start toy-other-4c1d.service", check=True)
            toy.put((text + "# edited by someone\n").encode(), other)
            assert "toy-other-4c1d.service" in s.svc.pending_reloads()
            trial = s.run_variant(BASE, {"--mode": "fail"}, timeout=60)
            assert trial.outcome.outcome == "failed"
            assert "toy-other-4c1d.service" in s.svc.pending_reloads()
        finally:
            toy.run("systemctl stop toy-other-4c1d.service; rm -f /etc/systemd/system/toy-other-4c1d.service; "
                    "systemctl daemon-reload", check=True)
    as_found(toy)


def test_two_sessions_exactly_one_gets_the_lock(toy):
    results: list[object] = []
    barrier = threading.Barrier(2)

    def take() -> None:
        from workbench.ssh import SSHHost

        h = SSHHost("gpu-a", ssh_config=toy.ssh_config_path)
        lock = HostLock(h, purpose="race")
        barrier.wait()
        t0 = time.monotonic()
        try:
            lock.acquire()
            results.append("got")
            time.sleep(1.5)
            lock.release()
        except LockHeld as exc:
            results.append((exc, time.monotonic() - t0))
        finally:
            h.close()

    threads = [threading.Thread(target=take) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results.count("got") == 1
    exc, seconds = next(r for r in results if r != "got")  # type: ignore[misc]
    assert seconds < 1.0
    assert "purpose=race" in str(exc) or exc.owner == {}  # the holder may not have written its details yet


def test_port_already_in_use_is_refused_before_starting(toy):
    # The base still listens on 31000: a health check could answer for it, so nothing starts.
    svc = SystemdServices(toy)
    v = Variant.build(BASE, svc.unit_text(BASE), {"--delay": "0.1"})
    svc.install_variant(v)
    try:
        with pytest.raises(PortInUse, match=r"31000 is already in use by pid \d+ \(toy.service\)"):
            watch_start(svc, v.name, timeout=30)
        assert svc.status(v.name).active_state == "inactive"
    finally:
        svc.remove_variant(v.name)
    as_found(toy)


def test_a_start_systemd_failed_before_its_command_is_retried_as_our_own_start(toy, monkeypatch):
    """A start that the service manager failed in its own exec step is started once more.  With
    ``Restart=on-failure`` the unit then waits in ``auto-restart``: a plain start would wait for its
    timer and be systemd's retry (NRestarts + 1, judged "restarted" though the server came up).
    The retry cancels it first.  The transient step systemd hits in containers (219/CGROUP) cannot
    be provoked on purpose; 200/CHDIR runs the same path, its directory made after the first try."""
    import workbench.watch as watch

    unit = "toy-notrun.service"
    text = BASE_TEXT.replace("[Service]\n", "[Service]\nWorkingDirectory=/run/wb-notrun\n").replace(
        "RestartSec=1", "RestartSec=30")
    toy.run("rm -rf /run/wb-notrun", check=True)
    toy.put(text.encode(), f"/etc/systemd/system/{unit}")
    toy.run("systemctl daemon-reload", check=True)
    once = watch._watch_once
    firsts: list[str] = []

    def first_then_fix(svc, name, **kw):
        out = once(svc, name, **kw)
        if not firsts:
            firsts.append(out.describe())
            toy.run("mkdir -p /run/wb-notrun", check=True)
        return out

    monkeypatch.setattr(watch, "NOT_RUN_STEPS", frozenset({"CHDIR"}))
    monkeypatch.setattr(watch, "_watch_once", first_then_fix)
    svc = SystemdServices(toy)
    toy.run(["systemctl", "stop", BASE], check=True)
    try:
        out = watch_start(svc, unit, port=31000, timeout=20)
        assert "200/CHDIR" in firsts[0] or "auto-restart" in firsts[0], firsts
        assert out.ok, out.describe()  # before: waited 30 s for systemd's timer, then "restarted (1x)"
        assert "started a second time" in out.reason and "200/CHDIR" in out.reason, out.reason
        assert svc.status(unit).n_restarts == 0
    finally:
        toy.run(f"systemctl stop {unit}; rm -f /etc/systemd/system/{unit}; rm -rf /run/wb-notrun; "
                "systemctl daemon-reload; systemctl reset-failed; systemctl start toy.service", check=True)
    as_found(toy)


SEEDS = [
    ({}, "ready", None, None),                                                        # TP8 + DDTree works
    ({"--enable-nccl-nvls": True}, "ready", None, None),                              # TP8 + NVLS works
    ({"--ep-size": "8", "--enable-nccl-nvls": True, "--enable-flashinfer-allreduce-fusion": True},
     "failed", "RuntimeError", "CUBLAS_STATUS_EXECUTION_FAILED"),
    ({"--ep-size": "8", "--enable-nccl-nvls": True}, "failed", "RuntimeError", "CUBLAS_STATUS_EXECUTION_FAILED"),
    ({"--ep-size": "8"}, "failed", "AttributeError", "'NoneType' object has no attribute"),
]


def test_the_seeds_configurations_on_the_simulated_server(testbed):
    """The seeds' configurations as variants of the real unit, watched and classified, host restored."""
    from workbench.ssh import SSHHost
    from workbench.trials import run_trial

    host = SSHHost("gpu-b", ssh_config=str(testbed.ssh_config))
    svc = SystemdServices(host)
    before = svc.status(SIM_BASE)
    with HostSession(host, purpose="test: the seeds' configurations", lock_wait=600) as s:
        for edits, outcome, exc, text in SEEDS:
            rec = run_trial(s, SIM_BASE, edits, timeout=180)
            assert rec.outcome == outcome, (edits, rec.reason)
            if outcome == "failed":
                assert rec.phase == "cuda_graph_capture" and rec.exception_type == exc, (edits, rec)
                assert text in (rec.message or ""), rec.message
            else:
                assert rec.phase == "serving"
    after = svc.status(SIM_BASE)
    assert after.running == before.running and svc.variant_files() == {}
    host.close()


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
                        min_size=0, max_size=16), min_size=1, max_size=6))
def test_flag_values_reach_the_server_argv_exactly_fuzz(toy, values):
    edits = {f"--fuzz{i}": v for i, v in enumerate(values)}
    with HostSession(toy, lock_wait=600) as s:
        trial = s.run_variant(BASE, edits, timeout=60)
        assert trial.outcome.ok, trial.outcome.describe()
        argv = json.loads(next(x for x in trial.outcome.tail if x.startswith("argv="))[5:])
        for i, v in enumerate(values):
            assert argv[argv.index(f"--fuzz{i}") + 1] == v
    as_found(toy)
