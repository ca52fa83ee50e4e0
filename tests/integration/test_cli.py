"""The ``workbench`` command on the testbed: the README's host example, ``variant --json`` as pure JSON,
global options after the subcommand, ``journal -f`` stopped by Ctrl-C (exit 130) and by ``--until``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.unit.cli.test_readme import blocks, needs_host

pytestmark = pytest.mark.testbed
ROOT = Path(__file__).resolve().parents[2]
UNIT = "sglang-k26-ddtree.service"


def _workbench(*argv: str, **kw: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "workbench.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, **kw)  # type: ignore[call-overload]


def test_readme_host_example_runs(testbed, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(testbed.ssh_config))
    (code,) = [b for b in blocks("python") if needs_host(b)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    text = out.getvalue()
    assert "FAILED in cuda_graph_capture" in text and "RuntimeError" in text, text


def test_variant_json_is_only_json_and_ssh_config_goes_after(testbed) -> None:
    proc = _workbench("variant", "gpu-a", UNIT, "--set", "ep-size=8", "--json", "--lock-wait", "600",
                      "--ssh-config", str(testbed.ssh_config))
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err  # the variant fails to start: a failure found
    doc = json.loads(out)  # nothing but the JSON object on stdout
    assert doc["outcome"] == "failed" and doc["phase"] == "cuda_graph_capture" and doc["tail"]
    assert "cuda_graph_capture" in err  # the phase lines went to stderr


def test_journal_follow_stops_on_ctrl_c_and_on_until(testbed) -> None:
    cfg = str(testbed.ssh_config)
    proc = _workbench("journal", "gpu-a", UNIT, "-f", "-n", "3", "--interval", "0.5", "--ssh-config", cfg)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the last lines came: it is following now
    assert first.strip(), proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 130
    started = time.time()
    proc = _workbench("journal", "gpu-a", UNIT, "-f", "-n", "1", "--json", "--until", str(started + 3),
                      "--ssh-config", cfg)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert [json.loads(line)["host"] for line in out.splitlines()] == ["gpu-a"]
    assert time.time() - started >= 3
