"""Slurm: job scripts as services, trials as jobs (``slurm:NAME`` where a host goes).

* :mod:`~workbench.slurm.facts` — command builders and parsers of Slurm's real output (pure);
* :mod:`~workbench.slurm.script` — job scripts, their server line, variants (pure);
* :mod:`~workbench.slurm.cluster` — the verbs that touch the scheduler through a submit host;
* :mod:`~workbench.slurm.trial` — one trial as one job (submit, watch, classify, cancel),
  several with ``max_parallel`` in flight, and the bisect oracle over them.
"""

from workbench.slurm.cluster import JobNotFound, SlurmCluster, SubmitError
from workbench.slurm.facts import JobInfo, NodeInfo
from workbench.slurm.script import JobScript
from workbench.slurm.trial import JobTrial, run_job_trial, run_many

__all__ = ["JobInfo", "JobNotFound", "JobScript", "JobTrial", "NodeInfo", "SlurmCluster", "SubmitError",
           "run_job_trial", "run_many"]
