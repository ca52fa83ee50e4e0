"""Ended jobs from the accounting database: ``sacct`` records parsed from real output
(tests/fixtures/slurm/22.05, capture.sh there, on a cluster with slurmdbd), and the cluster's
way back to them once ``scontrol`` has purged a job, or the clear error where it keeps none."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from workbench.errors import ParseError, ServiceError
from workbench.hosts import Result
from workbench.slurm import JobNotFound, facts
from workbench.slurm.cluster import SlurmCluster, job_row

FIX = Path(__file__).parents[2] / "fixtures" / "slurm" / "22.05"


def _sacct() -> dict[str, facts.JobInfo]:
    return {j.name: j for j in facts.parse_sacct((FIX / "sacct_jobs.out").read_text())}


def test_states_exit_codes_nodes_and_times_from_real_sacct_records() -> None:
    jobs = _sacct()
    ok, fail, ran, pend, live = (jobs[n] for n in ("cap-ok", "fail.sh", "running", "pending", "timeout.sh"))
    assert (ok.state, ok.exit_status, ok.ended, ok.node_list, ok.nodes) == ("COMPLETED", 0, True, "node1", ("node1",))
    assert (fail.state, fail.exit_status, fail.exit_signal) == ("FAILED", 3, 0)
    assert ran.state == "CANCELLED" and ran.fields["State"] == "CANCELLED by 0"  # who cancelled it, kept aside
    assert (pend.state, pend.node_list, pend.nodes, pend.partition) == ("CANCELLED", "", (), "gpu")
    assert live.running and live.end_time is None and live.start_time is not None
    assert ok.queue_seconds is not None and ok.end_time is not None and ok.time_limit == "UNLIMITED"
    assert all(j.source == "sacct" and j.stdout is None and j.reason is None for j in jobs.values())
    assert ok.fields["WorkDir"].startswith("/") and facts.job_user(ok) == ""  # sacct's User field, not UserId
    assert "FAILED" in fail.describe() and "exit 3" in fail.describe()


def test_a_job_name_holding_the_separator_and_bad_lines() -> None:
    line = "42|wb-a|b|FAILED|1:0|None|n[1-2]|gpu|2026-12-02T07:54:06|2026-12-02T07:54:07|2026-12-02T07:55:07|" \
           "00:30:00|root|/w"
    [job] = facts.parse_sacct(line + "\n\n")
    assert (job.job_id, job.name, job.state, job.nodes, job.exit_status) == ("42", "wb-a|b", "FAILED", ("n1", "n2"), 1)
    with pytest.raises(ParseError, match="sacct line"):
        facts.parse_sacct("JobIDRaw|JobName\n")
    assert facts.parse_sacct((FIX / "sacct_unknown.out").read_text()) == []


def test_sacct_argv_asks_for_allocations_only_by_id_or_by_name_since() -> None:
    fields = ",".join(facts.SACCT_FIELDS)
    assert facts.sacct_jobs(["7", "8"]) == ["sacct", "-P", "-n", "-X", "-o", fields, "-j", "7,8"]
    assert facts.sacct_jobs(names=["wb-base-x.sbatch"], since="now-1days")[-4:] == [
        "-S", "now-1days", "--name", "wb-base-x.sbatch"]


class FakeHost:
    """The submit host: scontrol has purged every job; sacct answers from a fixture file."""

    name = "submit"

    def __init__(self, sacct: str, *, disabled: bool = False) -> None:
        self.sacct, self.disabled, self.commands = sacct, disabled, []

    def run(self, argv: list[str], **kw: object) -> Result:
        cmd = shlex.join(argv)
        self.commands.append(cmd)
        if argv[:3] == ["scontrol", "show", "job"]:
            if len(argv) == 4:
                return Result(cmd, "No jobs in the system\n", "", 0)
            return Result(cmd, "", "slurm_load_jobs error: Invalid job id specified\n", 1)
        if argv[0] == "sacct":
            if self.disabled:
                return Result(cmd, "", (FIX / "sacct_disabled.err").read_text(), 1)
            want = argv[argv.index("-j") + 1].split(",") if "-j" in argv else None
            lines = [x for x in self.sacct.splitlines() if want is None or x.split("|")[0] in want]
            return Result(cmd, "".join(x + "\n" for x in lines), "", 0)
        raise AssertionError(cmd)


def test_a_purged_job_comes_from_sacct_where_the_cluster_keeps_accounting() -> None:
    host = FakeHost((FIX / "sacct_jobs.out").read_text())
    cluster = SlurmCluster(host, name="c")  # type: ignore[arg-type]
    job = cluster.job("2")
    assert (job.job_id, job.state, job.exit_status, job.source) == ("2", "FAILED", 3, "sacct")
    assert job_row(job)["source"] == "sacct" and cluster.accounting is True
    with pytest.raises(JobNotFound, match="its accounting has no record of it"):
        cluster.job("999")
    # history: the workbench's jobs (wb-) only; none of the fixture's are
    assert cluster.history() == [] and cluster.history(names=["wb-x"]) == []
    assert "--name wb-x" in host.commands[-1]


def test_without_accounting_a_purged_job_is_a_clear_error_and_sacct_is_asked_once() -> None:
    host = FakeHost("", disabled=True)
    cluster = SlurmCluster(host, name="c")  # type: ignore[arg-type]
    for _ in range(2):
        with pytest.raises(JobNotFound, match="keeps no accounting"):
            cluster.job("2")
    assert cluster.accounting is False and cluster.history() is None
    assert sum(c.startswith("sacct") for c in host.commands) == 1


def test_an_accounting_database_that_does_not_answer_is_said_and_not_remembered() -> None:
    class Down(FakeHost):
        def run(self, argv: list[str], **kw: object) -> Result:
            if argv[0] == "sacct":
                cmd = shlex.join(argv)
                self.commands.append(cmd)
                return Result(cmd, "", "sacct: error: Problem talking to the database: Connection refused\n", 1)
            return super().run(argv, **kw)

    host = Down("")
    cluster = SlurmCluster(host, name="c")  # type: ignore[arg-type]
    assert cluster.accounting is False and cluster.accounting is False
    assert sum(c.startswith("sacct") for c in host.commands) == 2  # asked again: it may come back
    with pytest.raises(ServiceError, match=r"sacct failed: .*Problem talking to the database"):
        cluster.job("2")
