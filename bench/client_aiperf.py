"""NVIDIA AIPerf as one more load client of bench/client_accuracy.py: its own venv, an offline tokenizer, its files read.

    .venv/bin/python bench/client_aiperf.py --install      # ~/.cache/workbench/aiperf-env (aiperf 0.13.0, ~1.2 GB)
    .venv/bin/python bench/client_aiperf.py ARTIFACT_DIR   # the figures read from a run's files

AIPerf runs in a venv of its own (``--install`` makes it with this machine's ``/usr/bin/python3``
from the PyPI mirror; never by ``make test``). Its ``--tokenizer`` takes a local directory only
while the hub is reachable: with ``HF_HUB_OFFLINE=1`` AIPerf 0.13.0 resolves every name through
``snapshot_download(local_files_only=True)``, which refuses a path (``HFValidationError: Repo id
must be in the form 'repo_name' or 'namespace/repo_name'``). So the word-level tokenizer of
``bench/client_tokenizer.py`` is laid out as a hub cache of its own (``HF_HUB_CACHE``, repo
``workbench/wordlevel``) and AIPerf runs offline against that: it never reaches for the hub.

Its files are read by ``workbench.bench.ingest.load_results`` (the artifact directory:
``profile_export_aiperf.json``, the profiling phase's summary, and ``profile_export.jsonl``, one
record per request, warmup records included and dropped there); field names and units in
docs/metrics.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workbench.bench.ingest import Ingested, load_results

ENV = Path.home() / ".cache" / "workbench" / "aiperf-env"
VERSION = "0.13.0"
REPO = "workbench/wordlevel"
REVISION = "0" * 40


def install(env: Path = ENV) -> Path:
    """The venv with AIPerf (made once; a second call only checks it)."""
    exe = env / "bin" / "aiperf"
    if not exe.exists():
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(env)], check=True)
        subprocess.run([str(env / "bin" / "pip"), "install", "-q", f"aiperf=={VERSION}"], check=True)
    return exe


def hub_cache(tokenizer_dir: Path, cache: Path) -> Path:
    """``tokenizer_dir`` as the snapshot of ``REPO`` in a hub cache at ``cache`` (for HF_HUB_CACHE)."""
    repo = cache / ("models--" + REPO.replace("/", "--"))
    snap = repo / "snapshots" / REVISION
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(REVISION)
    for f in tokenizer_dir.iterdir():
        shutil.copy(f, snap / f.name)
    return cache


def command(exe: str, url: str, c: int, n: int, out_len: int, artifacts: Path, *, in_len: int = 32,
            warmup: int = 0) -> list[str]:
    cmd = [exe, "profile", "--endpoint-type", "completions", "--streaming", "--url", url, "--model", "fixed",
           "--tokenizer", REPO, "--isl", str(in_len), "--osl", str(out_len), "--request-count", str(n),
           "--concurrency", str(c), "--extra-inputs", "ignore_eos:true", "--ui", "none", "--no-server-metrics",
           "--no-gpu-telemetry", "--artifact-dir", str(artifacts)]
    return cmd + (["--warmup-request-count", str(warmup)] if warmup else [])


def run(exe: str, tokenizer_dir: Path, url: str, c: int, n: int, out_len: int, *, warmup: int = 0,
        keep: Path | None = None) -> Ingested:
    """One AIPerf run against ``url``, its artifact directory read. ``keep``: copy the directory there."""
    with tempfile.TemporaryDirectory(prefix="wb-aiperf-") as d:
        cache = hub_cache(tokenizer_dir, Path(d) / "hub")
        artifacts = Path(d) / "artifacts"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "NO_COLOR": "1"}
        p = subprocess.run(command(exe, url, c, n, out_len, artifacts, warmup=warmup), capture_output=True,
                           text=True, env=env, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"aiperf exited {p.returncode}: {(p.stdout + p.stderr)[-2000:]}")
        if keep is not None:
            shutil.copytree(artifacts, keep, dirs_exist_ok=True)
        return load_results(artifacts)


if __name__ == "__main__":
    if sys.argv[1:] == ["--install"]:
        print(install())
    else:
        print(load_results(sys.argv[1]).table.T.to_string())
