"""Trials as jobs reuse earlier runs' verdicts as a host's trials do, with the same keys (host,
fingerprint, script text, edits): the cluster is the host, whatever node a job ran on."""

from __future__ import annotations

import pandas as pd
import pytest

from workbench.redact import Redactor
from workbench.runbooks.bisect import known_trials
from workbench.runs import Ledger, Run
from workbench.slurm.runbook import cluster_host
from workbench.slurm.script import JobScript
from workbench.slurm.search import bisect_jobs
from workbench.testbed.slurm import BASE_SCRIPT, job_scripts
from workbench.trials import TrialRecord, signature_of, unit_hash
from workbench.variants import edits_key, normalize_edits

TEXT = job_scripts(logs="/l", sim_site="/s", model_dir="/m", draft_dir="/d", port=30000, init_port=5000)[BASE_SCRIPT]
EP8, NVLS = ("--ep-size", "8"), ("--enable-nccl-nvls", True)


def _rec(edits: list[tuple[str, object]], *, node: str = "node1", fingerprint: str = "F", reused: bool = False,
         fails: bool = True) -> TrialRecord:
    exc, msg, phase = ("AttributeError", "'X' object has no attribute 'topk_ids'", "cuda_graph_capture") if fails \
        else (None, None, "serving")
    words, sig_id = signature_of(exc, msg, phase) if fails else (None, None)
    return TrialRecord(edits=[list(e) for e in edits], outcome="failed" if fails else "ready", phase=phase,
                       exception_type=exc, signature=words, signature_id=sig_id, message=msg, seconds=3.0,
                       reused=reused, host=f"slurm:c/{node}", base_unit=BASE_SCRIPT, unit_hash=unit_hash(TEXT),
                       fingerprint=fingerprint, edits_key=edits_key(normalize_edits(edits)), invocation="17",
                       started_at=1.0)


def _ledger(tmp_path, records: list[TrialRecord]) -> Ledger:
    run = Run.create("bisect", data_dir=tmp_path)
    run.table("trials", pd.DataFrame([r.row() for r in records]))
    return Ledger(tmp_path)


def test_the_cluster_is_the_host_whatever_node_a_job_ran_on(tmp_path) -> None:
    ledger = _ledger(tmp_path, [_rec([EP8], node="node2"), _rec([NVLS], fails=False, node="node[1-2]"),
                                _rec([EP8, NVLS], fingerprint="other"), _rec([EP8, NVLS], reused=True)])
    subsets = [(EP8,), (NVLS,), (EP8, NVLS)]
    got = known_trials(ledger, {"slurm:c": "F"}, unit_hash(TEXT), subsets, Redactor(), host_of=cluster_host)
    assert [(r.edits, r.outcome, r.reused) for r in got] == [([list(EP8)], "failed", True),
                                                             ([list(NVLS)], "ready", True)]
    # another cluster, another script text, or the row's host read as written: nothing
    assert known_trials(ledger, {"slurm:d": "F"}, unit_hash(TEXT), subsets, Redactor(), host_of=cluster_host) == []
    assert known_trials(ledger, {"slurm:c": "F"}, unit_hash(TEXT + "#"), subsets, Redactor(),
                        host_of=cluster_host) == []
    assert known_trials(ledger, {"slurm:c": "F"}, unit_hash(TEXT), subsets, Redactor()) == []


class NoJobs:
    """A cluster where submitting anything is a failure of the test: every verdict is known."""

    name = "c"

    def read_script(self, name: str) -> JobScript:
        return JobScript(TEXT)

    def submit(self, *a: object, **kw: object) -> str:
        raise AssertionError("a known trial was submitted")

    def jobs(self, **kw: object) -> list[object]:
        return []


def test_a_bisect_whose_every_set_is_known_submits_no_job() -> None:
    known = [_rec([EP8]), _rec([NVLS], fails=False), _rec([EP8, NVLS])]
    found = bisect_jobs(NoJobs(), BASE_SCRIPT, [EP8, NVLS], known=known)  # type: ignore[arg-type]
    assert found.trials == [] and found.starts == 0
    assert [(c["edits"], c["exception_type"], c["phase"]) for c in found.culprits] == [
        ([list(EP8)], "AttributeError", "cuda_graph_capture")]


def test_a_partly_known_bisect_submits_only_the_rest() -> None:
    with pytest.raises(AssertionError, match="known trial was submitted"):
        bisect_jobs(NoJobs(), BASE_SCRIPT, [EP8, NVLS], known=[_rec([EP8])])  # type: ignore[arg-type]
