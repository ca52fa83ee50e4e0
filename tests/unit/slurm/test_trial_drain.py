"""A job that ends before its log follower delivered its last lines: the trial's timeline reads them
from the file, so the failure's phase is the last one the job entered (as on the testbed, where a
quiet poll after the follower's last delivery saw the job ended and judged it in weight loading)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from workbench.hosts import LineStream
from workbench.slurm import facts
from workbench.slurm.script import JobScript
from workbench.slurm.trial import run_job_trial

SCRIPT = JobScript("#!/bin/bash\n#SBATCH --output=/logs/t.log\n"
                   "python3 -m sglang.launch_server --model-path /m --port 30000\n")
LOG = [
    "[2026-12-03 10:00:00] server_args=ServerArgs(model_path='/m')",
    "[2026-12-03 10:00:01 TP0] Load weight begin. avail mem=80.00 GB",
    "[2026-12-03 10:00:03 TP0] Load weight end. type=DeepseekV3ForCausalLM, avail mem=40.00 GB",
    "[2026-12-03 10:00:04 TP0] KV Cache is allocated. #tokens: 100000",
    "[2026-12-03 10:00:05 TP0] Capture cuda graph begin. This can take up to several minutes.",
    "[2026-12-03 10:00:06 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/srt/model_executor/cuda_graph_runner.py", line 300, in capture',
    "    self.capture_one_batch_size(bs, forward)",
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx`",
]
DELIVERED = 3  # the follower delivered these before the job ended; the rest was still on its way


def _job(state: str) -> facts.JobInfo:
    return facts.JobInfo(job_id="7", name="wb-trial", state=state, reason=None, nodes=("node1",), node_list="node1",
                         partition="gpu", exit_status=1 if state == "FAILED" else 0, exit_signal=0, submit_time=None,
                         start_time=None, end_time=None, time_limit=None, stdout="/logs/t.log", stderr=None,
                         command=None)


class Cluster:
    name = "c"

    def __init__(self) -> None:
        self.states = iter(["RUNNING", "RUNNING", "FAILED"])
        self.after: list[int] = []
        cluster = self

        class Host:
            name = "submit"

            def stream(self, argv: list[str], **kw: Any) -> LineStream:
                s = LineStream(lambda: None, "submit")
                for line in LOG[:DELIVERED]:
                    s._feed(line)
                return s

        self.host = Host()
        self.cluster = cluster

    def submit(self, script: JobScript, **kw: Any) -> str:
        return "7"

    def job(self, job_id: str) -> facts.JobInfo:
        return _job(next(self.states, "FAILED"))

    def output_after(self, job: facts.JobInfo, lines: int) -> str:
        self.after.append(lines)
        return "".join(x + "\n" for x in LOG[lines:])

    def log(self, job: facts.JobInfo) -> str:
        return "".join(x + "\n" for x in LOG)

    def cancel(self, ids: list[str], **kw: Any) -> list[facts.JobInfo]:
        return [replace(_job("CANCELLED"))]


def test_the_lines_the_follower_had_not_delivered_give_the_failure_its_phase() -> None:
    cluster = Cluster()
    trial = run_job_trial(cluster, SCRIPT, [("--ep-size", "8")], timeout=60)  # type: ignore[arg-type]
    assert cluster.after == [DELIVERED]  # read from the first line the follower had not delivered
    assert trial.outcome == "failed" and trial.exception_type == "RuntimeError"
    assert [t["phase"] for t in trial.timeline][-3:] == ["weight_loading", "kv_cache_alloc", "cuda_graph_capture"]
    assert trial.phase == "cuda_graph_capture"


class PurgedCluster(Cluster):
    """The controller purged the job before the poll that saw it ended (``MinJobAge`` after its end,
    reached when polls come late on a loaded submit host): sacct answers, naming no output file,
    and the real :meth:`SlurmCluster.log` then reads nothing."""

    def job(self, job_id: str) -> facts.JobInfo:
        state = next(self.states, "FAILED")
        return _job(state) if state == "RUNNING" else replace(_job(state), stdout=None, source="sacct")

    def output_after(self, job: facts.JobInfo, lines: int) -> str:
        return super().output_after(job, lines) if job.stdout else ""

    def log(self, job: facts.JobInfo) -> str:
        return super().log(job) if job.stdout else ""


def test_a_job_answered_by_sacct_keeps_the_output_file_its_running_record_named() -> None:
    cluster = PurgedCluster()
    trial = run_job_trial(cluster, SCRIPT, [("--ep-size", "8")], timeout=60)  # type: ignore[arg-type]
    assert trial.outcome == "failed" and trial.state == "FAILED"
    assert trial.exception_type == "RuntimeError" and "CUBLAS_STATUS_EXECUTION_FAILED" in trial.message
    assert trial.phase == "cuda_graph_capture" and cluster.after == [DELIVERED]


class Completing(Cluster):
    """A job whose server died while Slurm holds it ``COMPLETING`` (a process it cannot reap yet)."""

    def __init__(self, states: list[str]) -> None:
        super().__init__()
        self.states = iter(states)

    def job(self, job_id: str) -> facts.JobInfo:
        return _job(next(self.states, "COMPLETING"))


def test_a_job_held_completing_is_judged_as_ended_not_timed_out() -> None:
    events: list[tuple[str, str]] = []
    cluster = Completing(["RUNNING", "RUNNING", "COMPLETING"])
    trial = run_job_trial(cluster, SCRIPT, [("--ep-size", "8")], timeout=30,  # type: ignore[arg-type]
                          on_event=lambda k, t: events.append((k, t)))
    assert trial.outcome == "failed" and trial.exception_type == "RuntimeError", trial
    assert trial.phase == "cuda_graph_capture" and "timeout" not in [k for k, _ in events]


def test_a_job_found_completing_at_its_first_look_is_not_waited_for_as_queued() -> None:
    trial = run_job_trial(Completing(["COMPLETING"]), SCRIPT, [], timeout=30,  # type: ignore[arg-type]
                          queue_timeout=2)
    assert trial.outcome == "failed" and trial.exception_type == "RuntimeError", trial


def test_facts_a_completing_job_has_finished_but_not_ended() -> None:
    job = _job("COMPLETING")
    assert job.finished and not job.ended and not job.running
    assert _job("FAILED").finished and not _job("RUNNING").finished and not _job("PENDING").finished
