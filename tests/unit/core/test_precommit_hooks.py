"""The pre-commit hooks (claim N4) on a scratch git repository: nbstripout drops outputs and papermill
metadata, the secret scanner stops a commit that carries a token or an address and never prints it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "hf_" + "Zq8" * 8


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.fail("git is needed for the pre-commit hook tests")
    r = tmp_path / "repo"
    r.mkdir()
    shutil.copy(ROOT / ".pre-commit-config.yaml", r)
    (r / ".venv").symlink_to(Path(sys.prefix))  # the hooks' entries name .venv/bin/...
    for d in ("notebooks", "data"):
        (r / d).mkdir()
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    return r


def _precommit(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pch")}
    return subprocess.run([str(Path(sys.prefix) / "bin" / "pre-commit"), "run", "--all-files"],
                          cwd=repo, capture_output=True, text=True, timeout=300, env=env)


def _notebook(source: str, outputs: list[dict[str, object]]) -> dict[str, object]:
    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                     "papermill": {"parameters": {"host": "gpu-a"}, "input_path": "runbooks/bisect.ipynb"}},
        "cells": [{"cell_type": "code", "id": "cell-0", "execution_count": 3, "source": source,
                   "metadata": {"papermill": {"duration": 1.5}}, "outputs": outputs}],
    }


def test_outputs_counts_and_papermill_metadata_are_stripped(repo: Path, tmp_path: Path) -> None:
    nb = repo / "notebooks" / "run.ipynb"
    nb.write_text(json.dumps(_notebook("print(1)", [{"output_type": "stream", "name": "stdout", "text": "1\n"}])))
    first = _precommit(repo, tmp_path)
    assert first.returncode == 1  # pre-commit fails when a hook changed a file
    got = json.loads(nb.read_text())
    cell = got["cells"][0]
    assert cell["outputs"] == [] and cell["execution_count"] is None and cell["id"] == "cell-0"
    assert "papermill" not in got["metadata"] and "papermill" not in cell["metadata"]
    assert got["metadata"]["kernelspec"]["name"] == "python3"
    assert _precommit(repo, tmp_path).returncode == 0  # stripped: clean now


def test_a_token_or_an_address_stops_the_commit_without_being_printed(repo: Path, tmp_path: Path) -> None:
    (repo / "data" / "result.json").write_text(json.dumps({"note": "ok", "server": "10.20.30.40"}, indent=1))
    (repo / "notebooks" / "leak.ipynb").write_text(json.dumps(_notebook(f"token = {TOKEN!r}", []), indent=1))
    (repo / "notebooks" / "fine.ipynb").write_text(json.dumps(_notebook("x = 1", []), indent=1))
    res = _precommit(repo, tmp_path)
    assert res.returncode == 1
    out = res.stdout + res.stderr
    assert "data/result.json: secret or address on line(s) 3" in out
    assert "notebooks/leak.ipynb: secret or address" in out
    assert "fine.ipynb: secret" not in out
    assert TOKEN not in out and "10.20.30.40" not in out


def test_the_projects_own_notebooks_pass_both_hooks(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (pre-commit works on git files)")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pch")}
    files = sorted(str(p.relative_to(ROOT)) for d in ("notebooks", "runbooks") for p in (ROOT / d).glob("*.ipynb"))
    assert files
    res = subprocess.run([str(Path(sys.prefix) / "bin" / "pre-commit"), "run", "--files", *files],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
