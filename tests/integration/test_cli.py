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


READ_ONLY = ("status", "journal", "tracebacks", "--version")


def _readme_lines() -> list[list[str]]:
    import shlex

    lines = [line.split("  #")[0].strip() for b in blocks("sh") for line in b.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("workbench ")]


def _two_invocations(testbed) -> None:
    """gpu-a's base has started at least twice (a freshly booted testbed has one start): restarted
    as an operator would, and waited on until it serves again."""
    from workbench.journal.read import invocations
    from workbench.services import services_for
    from workbench.ssh import SSHHost
    from workbench.watch import watch_start

    host = SSHHost("gpu-a", ssh_config=str(testbed.ssh_config))
    try:
        svc = services_for(host)
        if len(invocations(svc, UNIT)) < 2:
            host.run(["systemctl", "restart", UNIT], check=True)
        out = watch_start(svc, UNIT, start=False, timeout=300)
        assert out.ok, out.describe()
    finally:
        host.close()


def test_readme_command_lines_that_only_read_run_on_the_testbed(testbed, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every README line that reads (status, journal without -f, tracebacks of a host, variant --plan,
    --version) runs as written against the testbed; the lines that start servers or runbooks are the
    other tests' (bisect, triage, factorial, bench: test_runbooks*, test_cli_workloads)."""
    from workbench.cli import main

    monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(testbed.ssh_config))
    _two_invocations(testbed)  # the README's `--invocation -2` names the start before the last
    ran = []
    for argv in _readme_lines():
        plan = argv[0] == "variant" and "--plan" in argv
        if not (argv[0] in READ_ONLY or plan) or "-f" in argv or argv[:2] == ["tracebacks", "server.log"]:
            continue
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # --version exits as argparse does
                code = int(exc.code or 0)
        # 0: nothing wrong; 1: tracebacks found a failure in gpu-a's journal (the seeds' crashes)
        assert code in (0, 1), f"{argv}: exit {code}: {err.getvalue()[-2000:]}"
        assert out.getvalue().strip() or "--grep" in argv, argv  # a healthy last start has no Error line
        if "--json" in argv:
            for line in out.getvalue().splitlines() if argv[0] == "journal" else [out.getvalue()]:
                json.loads(line)
        ran.append(argv[0] if not plan else "variant --plan")
    assert {"status", "journal", "tracebacks", "variant --plan", "--version"} <= set(ran), ran
