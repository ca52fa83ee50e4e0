"""A job's output as the journal frame: one invocation per job, the node and rank of each line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from workbench.slurm import facts
from workbench.slurm.journal import job_rows

FIX = Path(__file__).parents[2] / "fixtures" / "slurm" / "22.05"


def _job():
    return facts.parse_job((FIX / "show_job_running.out").read_text().strip())


def test_an_unlabelled_single_node_log_is_one_job_in_file_order() -> None:
    job = _job()
    rows = job_rows(job, "[2026-12-01 10:00:00 TP0] Load weight begin.\nplain line\n")
    assert rows["message"] == ["[2026-12-01 10:00:00 TP0] Load weight begin.", "plain line"]
    assert rows["invocation"] == [job.job_id] * 2 and rows["unit"] == [job.name] * 2
    assert rows["host"] == [job.node_list] * 2 and rows["identifier"] == ["job", "job"]
    assert rows["usec"][1] == rows["usec"][0] + 1 and rows["usec"][0] > 0


def test_srun_labels_name_the_task_and_its_node() -> None:
    job = dataclasses.replace(_job(), nodes=("node1", "node2"), node_list="node[1-2]")
    rows = job_rows(job, "0: [TP0] ready\n1: Traceback (most recent call last):\n   1: x\nunlabelled\n")
    assert rows["message"] == ["[TP0] ready", "Traceback (most recent call last):", "x", "unlabelled"]
    assert rows["host"] == ["node1", "node2", "node2", "node1"]
    assert rows["identifier"] == ["task 0", "task 1", "task 1", "job"]


def test_follow_shows_what_the_file_held_then_new_lines_until_the_job_ends(tmp_path) -> None:
    """``journal -f``: the output file followed with the real ``tail -F`` on this machine; the job's
    state (running, then ended) from a stand-in for the scheduler."""
    import threading
    import time

    from workbench.hosts import LocalHost
    from workbench.slurm.cluster import SlurmCluster
    from workbench.slurm.journal import follow_job

    log = tmp_path / "job.log"
    log.write_text("".join(f"old {i}\n" for i in range(30)))
    running = dataclasses.replace(_job(), stdout=str(log))
    ended = dataclasses.replace(running, state="FAILED", exit_status=1)
    done = threading.Event()
    cluster = SlurmCluster(LocalHost("submit"), name="c")
    cluster.job = lambda job_id: ended if done.is_set() else running  # type: ignore[method-assign]

    def write() -> None:
        time.sleep(0.5)
        with log.open("a") as f:
            for i in range(3):
                f.write(f"new {i}\n")
                f.flush()
                time.sleep(0.1)
        done.set()
        with log.open("a") as f:  # the server's last words, written as the job ends
            f.write("Traceback (most recent call last):\n")

    events: list[tuple[str, str]] = []
    threading.Thread(target=write, daemon=True).start()
    frames = list(follow_job(cluster, running.job_id, poll=0.2, on_event=lambda k, t: events.append((k, t))))
    first, rest = frames[0], [m for f in frames[1:] for m in f["message"]]
    assert list(first["message"]) == [f"old {i}" for i in range(30)]
    assert rest == ["new 0", "new 1", "new 2", "Traceback (most recent call last):"]
    assert [k for k, _ in events] == ["ended"] and "FAILED" in events[0][1]
    cursors = [c for f in frames for c in f["cursor"]]
    assert cursors == [f"{running.job_id}:{i}" for i in range(34)]  # line numbers go on across frames


def test_follow_of_an_ended_job_is_its_whole_output_once(tmp_path) -> None:
    from workbench.hosts import LocalHost
    from workbench.slurm.cluster import SlurmCluster
    from workbench.slurm.journal import follow_job

    log = tmp_path / "job.log"
    log.write_text("a\nb\n")
    ended = dataclasses.replace(_job(), stdout=str(log), state="COMPLETED")
    cluster = SlurmCluster(LocalHost("submit"), name="c")
    cluster.job = lambda job_id: ended  # type: ignore[method-assign]
    frames = list(follow_job(cluster, ended.job_id, poll=0.2))
    assert len(frames) == 1 and list(frames[0]["message"]) == ["a", "b"]


def test_follow_waits_for_a_pending_job_saying_why_once_per_reason(tmp_path) -> None:
    import threading

    from workbench.hosts import LocalHost
    from workbench.slurm.cluster import SlurmCluster
    from workbench.slurm.journal import follow_job

    log = tmp_path / "job.log"
    log.write_text("done\n")
    pending = dataclasses.replace(_job(), state="PENDING", reason=None, nodes=(), node_list="")
    states = [pending, pending, dataclasses.replace(pending, reason="Resources"), pending]
    ended = dataclasses.replace(_job(), stdout=str(log), state="COMPLETED")
    cluster = SlurmCluster(LocalHost("submit"), name="c")
    cluster.job = lambda job_id: states.pop(0) if states else ended  # type: ignore[method-assign]
    events: list[str] = []
    frames = list(follow_job(cluster, ended.job_id, poll=0.01, on_event=lambda k, t: events.append(t)))
    assert [e.split("(")[-1] for e in events[:-1]] == ["-)", "Resources)", "-)"] and "COMPLETED" in events[-1]
    assert [list(f["message"]) for f in frames] == [["done"]]
    stop = threading.Event()
    stop.set()
    states[:] = [pending]
    assert list(follow_job(cluster, ended.job_id, stop=stop, poll=0.01)) == []  # Ctrl-C while it waits
