"""A non-editable install works: the wheel built from this tree, installed into a fresh venv, finds
its runbooks (packaged from the top-level ``runbooks/``) and runs one end to end on the testbed.

The build uses pip's configured indexes for setuptools/wheel (build isolation); the install is
offline (``--no-index --no-deps``), the dependencies coming from this interpreter's site-packages
through a path line in the new venv (not its .pth files: the project venv's editable install of
the checkout must not leak in) and their data files (nbconvert's templates) through JUPYTER_PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.testbed
ROOT = Path(__file__).resolve().parents[2]


def _copy_tree(dest: Path) -> None:
    """The files of this checkout (tracked and new, not ignored ones: no .venv, data/runs, build)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            timeout=60)
    if listed.returncode != 0:  # not a git checkout: everything but the venv and the run data
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".venv", "data", "build", "*.egg-info"))
        return
    for rel in filter(None, listed.stdout.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its bin directory."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    _copy_tree(src)
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "wheels"), str(src)])
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp / "wheels").glob("workbench-*.whl")
    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    assert made.returncode == 0, made.stderr
    py = venv / "bin" / "python"
    done = _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-index", "--no-deps",
                 str(wheel)])
    assert done.returncode == 0, done.stderr[-3000:]
    purelib = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (purelib / "zz_project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def test_the_wheel_carries_the_runbooks_and_runs_one(installed: Path, testbed, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{installed}:{env.get('PATH', '/usr/bin:/bin')}"
    # The dependencies' data files (nbconvert's templates) as a real install would have in its prefix.
    env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")
    where = _run([str(installed / "python"), "-c",
                  "import workbench, workbench.runbooks.execute as e; print(workbench.__file__); print(e.runbooks())"],
                 cwd=tmp_path, env=env)
    file, names = where.stdout.splitlines()
    assert file.startswith(str(installed.parent)), file  # the installed copy, not the checkout
    assert {"bisect", "triage", "benchmark"} <= set(eval(names))
    bad = _run([str(installed / "workbench"), "run", "triage", "-p", "no_such_parameter", "1"], cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "no_such_parameter" in bad.stderr, bad.stderr
    run = _run([str(installed / "workbench"), "run", "triage", "--host", "gpu-a", "-p", "unit", "sglang-k26-ddtree.service",
                "--data-dir", str(tmp_path / "data"),
                "--ssh-config", str(testbed.ssh_config), "--no-progress"], cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    (run_dir,) = (tmp_path / "data" / "runs").iterdir()
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "ok" and result["runbook"] == "triage"
    import jsonschema

    schema = json.loads((ROOT / "docs" / "schemas" / "triage.result.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(result)
    assert (run_dir / "report.html").stat().st_size > 10_000
