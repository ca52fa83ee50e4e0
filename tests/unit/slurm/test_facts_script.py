"""Slurm facts on real scheduler output (tests/fixtures/slurm/22.05, made by capture.sh there)
and job-script variants (quoting, headers, the server line)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from workbench.errors import ConfigError, ParseError
from workbench.slurm import facts
from workbench.slurm.script import JobScript, find_server, sbatch_argv

F = Path(__file__).resolve().parents[2] / "fixtures" / "slurm" / "22.05"


def _job(name: str) -> facts.JobInfo:
    return facts.parse_job((F / f"show_job_{name}.out").read_text().strip())


def test_job_states_from_real_records() -> None:
    done, failed, running, pending = _job("completed"), _job("failed"), _job("running"), _job("pending")
    assert (done.state, done.exit_status, done.ended) == ("COMPLETED", 0, True)
    assert (failed.state, failed.reason, failed.exit_status) == ("FAILED", "NonZeroExitCode", 3)
    assert running.running and running.nodes == ("localhost",) and running.queue_seconds is not None
    assert pending.state == "PENDING" and pending.reason == "Resources" and pending.nodes == ()
    assert pending.queue_seconds is None and pending.start_time is None
    assert running.fields["TresPerNode"] == "gres:gpu:8"


def test_cancelled_and_timed_out_jobs() -> None:
    assert _job("cancelled_running").state == "CANCELLED"
    assert _job("cancelled_pending").state == "CANCELLED"
    t = _job("timeout")
    assert (t.state, t.reason, t.exit_signal) == ("TIMEOUT", "TimeLimit", 15)
    assert "TIMEOUT" in t.describe() and "signal 15" in t.describe()


def test_values_with_spaces_stay_whole() -> None:
    node = facts.parse_keyvalues((F / "show_node.out").read_text().strip())
    assert node["OS"].startswith("Linux ") and node["Gres"] == "gpu:8" and node["State"] == "MIXED"  # captured while a job ran


def test_sinfo_and_partitions() -> None:
    nodes = facts.parse_sinfo_nodes((F / "sinfo_nodes.out").read_text())
    assert [(n.name, n.gpus, n.partitions) for n in nodes] == [("localhost", 8, ("gpu",))]
    parts = facts.parse_partitions((F / "show_partition.out").read_text())
    assert parts[0]["PartitionName"] == "gpu" and parts[0]["State"] == "UP"
    with pytest.raises(ParseError):
        facts.parse_sinfo_nodes("a|b|c\n")


def test_sbatch_parsable_and_errors() -> None:
    assert facts.parse_sbatch((F / "sbatch_parsable.out").read_text()).isdigit()
    assert facts.parse_sbatch("42;testbed\n") == "42"
    with pytest.raises(ParseError):
        facts.parse_sbatch((F / "sbatch_bad_partition.out").read_text())
    assert "invalid partition" in (F / "sbatch_bad_partition.err").read_text()
    assert (F / "show_job_unknown.rc").read_text().strip() == "1"
    assert "Invalid job id" in (F / "show_job_unknown.err").read_text()


@pytest.mark.parametrize(("expr", "names"), [
    ("localhost", ["localhost"]), ("n[1-3]", ["n1", "n2", "n3"]), ("gpu[01-02],login", ["gpu01", "gpu02", "login"]),
    ("a[1,3-4]b", ["a1b", "a3b", "a4b"]), ("", []),
])
def test_hostlists(expr: str, names: list[str]) -> None:
    assert facts.expand_hostlist(expr) == names


SCRIPT = """#!/bin/bash
#SBATCH --nodes=2 --gres=gpu:8
#SBATCH --output=/logs/%x-%j.log   # a comment
HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
srun --ntasks-per-node=1 python3 -m sglang.launch_server --model-path '/models/K 2.6' \\
    --tp 16 --nnodes 2 --node-rank $SLURM_NODEID --dist-init-addr "$HEAD:5000" --port 30000
echo done
"""


def test_server_line_and_headers() -> None:
    js = JobScript(SCRIPT)
    assert js.headers == ["--nodes=2", "--gres=gpu:8", "--output=/logs/%x-%j.log"]
    srv = find_server(SCRIPT)
    assert (srv.first, srv.last) == (4, 5)
    assert js.argv[:4] == ["python3", "-m", "sglang.launch_server", "--model-path"]
    assert js.argv[4] == "/models/K 2.6"


def test_variant_keeps_shell_words_and_quotes_new_values() -> None:
    evil = "8; touch /tmp/pwned"
    v = JobScript(SCRIPT).with_edits({"--ep-size": evil, "--tp": "8", "--enable-nccl-nvls": True})
    line = next(ln for ln in v.text.splitlines() if "sglang.launch_server" in ln)
    assert line.startswith("srun --ntasks-per-node=1 python3 -m sglang.launch_server")
    assert "$SLURM_NODEID" in line and '"$HEAD:5000"' in line  # still expanded on the node
    assert "--ep-size '8; touch /tmp/pwned'" in line
    assert shlex.split(line.replace("$SLURM_NODEID", "1").replace('"$HEAD:5000"', "h:5000"))[-3:] == \
        ["--ep-size", evil, "--enable-nccl-nvls"]
    assert "--tp 8 " in line and "echo done" in v.text and "#SBATCH --nodes=2" in v.text
    assert JobScript(SCRIPT).text == SCRIPT  # the base is never modified


def test_marked_server_line_and_missing_server() -> None:
    text = "#!/bin/sh\n# workbench: server\n/opt/bin/python3.12 serve.py --port 1\n"
    assert JobScript(text).with_edits({"--port": "2"}).argv == ["/opt/bin/python3.12", "serve.py", "--port", "2"]
    with pytest.raises(ConfigError, match="no server command line"):
        JobScript("#!/bin/sh\necho hi\n").server  # noqa: B018


def test_sbatch_options_are_validated_and_secrets_stay_off_the_command_line() -> None:
    argv = sbatch_argv(job_name="wb-x", time_limit="30", partition="gpu", export=["HF_TOKEN"])
    assert argv[-1] == "--export=ALL,HF_TOKEN" and not any("hf_" in a for a in argv)
    for bad in ({"time_limit": "soon"}, {"partition": "gpu; rm"}, {"export": ["A=b"]}):
        with pytest.raises(ConfigError):
            sbatch_argv(job_name="wb-x", **bad)  # type: ignore[arg-type]
