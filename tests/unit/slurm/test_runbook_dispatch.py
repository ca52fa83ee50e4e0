"""factorial, ab and sweep on ``slurm:NAME``: what is refused before anything touches a cluster, how
``-p host`` reaches a runbook that takes ``hosts``, and the jobs' pool stopping on an interruption."""

from __future__ import annotations

import argparse
import threading

import pytest

from workbench.cli.run import gather
from workbench.errors import ConfigError
from workbench.slurm.trial import in_flight


def _args(*params: tuple[str, str], host: list[str] | None = None) -> argparse.Namespace:
    return argparse.Namespace(yaml=None, parameter=list(params), host=host, ssh_config=None)


def test_p_host_becomes_hosts_where_the_runbook_takes_hosts() -> None:
    assert gather(_args(("host", "slurm:testbed")), {"hosts", "base_unit"})["hosts"] == ["slurm:testbed"]
    assert gather(_args(("host", "slurm:testbed")), {"host", "hosts"}) == {"host": "slurm:testbed"}
    assert "host" not in gather(_args(("host", "slurm:x")), {"hosts"})


def test_a_cluster_with_other_hosts_is_refused_before_any_connection(tmp_path) -> None:
    from workbench.runbooks import ab, factorial

    fp = factorial.FactorialParams(hosts=["slurm:testbed", "gpu-a"], base_unit="x.sbatch",
                                   factors={"--ep-size": "8"}, data_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="only host"):
        factorial.run(fp)
    ap = ab.ABParams(hosts=["slurm:testbed", "gpu-a"], base_unit="x.sbatch", edits={"--enable-nccl-nvls": True},
                     repeats=2, data_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="only host"):
        ab.run(ap)
    assert not (tmp_path / "runs").exists()  # no run directory either


@pytest.mark.parametrize("runbook", ["factorial", "ab", "sweep"])
def test_an_unknown_cluster_is_a_failed_run_that_left_nothing(runbook, tmp_path, monkeypatch) -> None:
    from workbench.runbooks import ab, factorial, sweep

    monkeypatch.setenv("WORKBENCH_SLURM_CLUSTERS", str(tmp_path / "none.toml"))
    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path / "tb"))
    common = {"base_unit": "x.sbatch", "data_dir": str(tmp_path)}
    if runbook == "factorial":
        _, result = factorial.run(factorial.FactorialParams(hosts=["slurm:nosuch"], factors={"--ep-size": "8"},
                                                            **common))
    elif runbook == "ab":
        _, result = ab.run(ab.ABParams(hosts=["slurm:nosuch"], edits={"--enable-nccl-nvls": True}, repeats=2,
                                       **common), progress=lambda _: None)
    else:
        _, result = sweep.run(sweep.SweepParams(host="slurm:nosuch", grid={"--enable-nccl-nvls": [False, True]},
                                                **common), progress=lambda _: None)
    assert result["status"] == "failed" and "no Slurm cluster 'nosuch'" in result["failure"]["message"]
    assert result["host_restored"] is True and result["jobs_left"] == [] and result["server_starts"] == 0


def test_an_interrupted_pool_calls_on_stop_before_waiting_for_work_that_ignores_stop() -> None:
    release = threading.Event()
    started = threading.Event()
    calls: list[str] = []

    def work(item: int, stop: threading.Event) -> int:
        if item == 1:
            started.set()
            assert release.wait(10)  # a measurement: it does not look at stop, it ends when its job is cancelled
            return 1
        assert started.wait(10)
        raise KeyboardInterrupt  # the caller interrupted while the other one measures

    def on_stop() -> None:
        calls.append("stop")
        release.set()  # cancelling the jobs ends the measurement

    with pytest.raises(KeyboardInterrupt):
        in_flight(work, [0, 1], max_parallel=2, on_stop=on_stop)
    assert calls == ["stop"]


def test_a_sigterm_another_thread_received_stops_the_pool_at_once() -> None:
    """CI stop 49: the runbook's SIGTERM (a Ctrl-C in its kernel) reached a worker thread, not the main one, which
    waited on a trial that measured for minutes. The pool wakes now and then, so the handler runs at once."""
    import signal
    import time

    told: list[bool] = []
    both = threading.Barrier(2, timeout=10)

    def work(item: int, stop: threading.Event) -> int:
        if both.wait() == 0:  # both trials run: one of their threads receives the signal
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        told.append(stop.wait(30))  # a trial that ends when it is told to stop
        return item

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        in_flight(work, [0, 1], max_parallel=2)
    assert time.monotonic() - t0 < 10 and told == [True, True]
