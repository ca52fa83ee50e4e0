"""Every runbook end to end through ``workbench run`` (papermill) on gpu-b: conclusions, restored hosts,
offline reports, the canary test (N1), resume after the kernel is killed mid-run, and reuse on rerun.

The module shares one data directory, so its bisect runs build one ledger: the
run killed after its first trial is resumed by the next run (which must reuse
what was recorded and conclude the seeds' culprits), and a third run reuses
every trial.  About five runbook executions in all.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from workbench.lock import HostLock
from workbench.runbooks.report import external_refs
from workbench.services import SystemdServices
from workbench.session import leftover_record
from workbench.ssh import SSHHost
from workbench.watch import watch_start

pytestmark = pytest.mark.testbed
REPO = Path(__file__).resolve().parents[2]
HOST = "gpu-b"
BASE = "sglang-k26-ddtree.service"
CANARY_BASE = "sglang-canary.service"
LOCK_WAIT = "240"  # other sessions (other test suites) may hold gpu-b for a while
SEEDS_CULPRITS = {
    (frozenset({"--ep-size"}), "AttributeError", "cuda_graph_capture"),
    (frozenset({"--ep-size", "--enable-nccl-nvls"}), "RuntimeError", "cuda_graph_capture"),
}


def workbench(ssh_config: str, *args: str, env: dict[str, str] | None = None, timeout: float = 540,
              ) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "workbench", "--ssh-config", ssh_config, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, **(env or {})})


def bisect_args(data_dir: Path, *extra: str) -> list[str]:
    return ["run", "bisect", "--preset", "seeds-k26", "--host", HOST, "--data-dir", str(data_dir),
            "-p", "start_timeout", "120",
            "-p", "lock_wait", LOCK_WAIT, *extra]


def run_dir_of(stdout: str) -> Path:
    m = re.search(r"^run directory: (\S+)$", stdout, re.M)
    assert m, stdout
    return Path(m.group(1))


def result_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "result.json").read_text())


def culprits(result: dict) -> set[tuple[frozenset[str], str, str]]:
    return {(frozenset(e[0] for e in c["edits"]), c["exception_type"], c["phase"]) for c in result["culprits"]}


def assert_as_found(host) -> None:
    """No session record, no variant, the base running — checked holding the host's lock, since other
    suites' sessions may be at work on the host (each restores it before it lets the lock go)."""
    svc = SystemdServices(host)
    with HostLock(host, purpose="test: check the host is as found", wait=float(LOCK_WAIT)):
        assert leftover_record(host) is None
        assert svc.variant_files() == {}
        assert svc.status(BASE).running


def assert_offline_report(run_dir: Path) -> str:
    html = (run_dir / "report.html").read_text()
    assert external_refs(html) == []
    return html


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("runbooks-data")


@pytest.fixture(scope="module")
def gpu_b(testbed):
    host = SSHHost(HOST, ssh_config=str(testbed.ssh_config))
    svc = SystemdServices(host)
    with HostLock(host, purpose="test: base running", wait=float(LOCK_WAIT)):
        if not svc.status(BASE).running:  # another suite left it stopped: the runs expect it up
            assert watch_start(svc, BASE, timeout=120).ok
    yield host
    host.close()


def kernel_pids(root: int) -> list[int]:
    """The ipykernel processes below ``root`` (walking /proc children)."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
        if pid != root:
            try:
                if b"ipykernel" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
            except OSError:
                pass
    return found


# A host command in flight when the kernel dies (the variant's install) cannot land after the
# restore: whoever restores fences the dead session's commands off first (workbench.inflight;
# the drill: test_guard.py::test_controller_killed_while_its_install_runs_...).
def test_kernel_killed_mid_run_is_recorded_and_the_host_restored(gpu_b, ssh_config, data_dir):
    cmd = [sys.executable, "-m", "workbench", "--ssh-config", ssh_config, *bisect_args(data_dir), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        deadline = time.monotonic() + 400
        while not list(data_dir.glob("runs/*/trials.parquet")):  # the first trial is recorded
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no trial recorded"
            time.sleep(0.2)
        kernels = kernel_pids(proc.pid)
        assert len(kernels) == 1, kernels
        os.kill(kernels[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, out + err[-3000:]
    run_dir = run_dir_of(out)
    result = result_of(run_dir)
    assert result["status"] == "failed" and result["failure"]["kind"] == "kernel_died"
    assert result["trials"] and result["host_restored"] is True, result.get("restore_notes")
    assert "kernel_died" in assert_offline_report(run_dir)
    assert (run_dir / "notebook.ipynb").exists()
    assert_as_found(gpu_b)


def test_bisect_finds_the_seeds_culprits_resuming_from_the_ledger(gpu_b, ssh_config, data_dir):
    recorded = sum(len(pd.read_parquet(p)) for p in data_dir.glob("runs/*/trials.parquet"))
    proc = workbench(ssh_config, *bisect_args(data_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    run_dir = run_dir_of(proc.stdout)
    assert "status: ok" in proc.stdout and "2 minimal culprit(s)" in proc.stdout
    result = result_of(run_dir)
    assert culprits(result) == SEEDS_CULPRITS
    cublas = next(c for c in result["culprits"] if c["exception_type"] == "RuntimeError")
    assert "CUBLAS" in cublas["message"]
    reused = sum(1 for t in result["trials"] if t["reused"])
    assert reused >= min(recorded, 1) and result["server_starts"] + reused == len(result["trials"])
    # 3 edits: the guarantee (blockers, masking) needs every set: 7 starts at most, fewer with the ledger
    assert result["server_starts"] <= 7 and result["host_restored"] is True and result["guarantee"]["complete"]
    assert all(c["signature_id"] and c["phase"] in c["signature"] for c in result["culprits"])
    assert all(t["host"] == HOST for t in result["trials"])
    html = assert_offline_report(run_dir)
    assert html.index("minimal culprit") < html.index('id="Trials"') < html.index('id="Provenance"')
    assert_as_found(gpu_b)


def test_rerun_reuses_every_trial(gpu_b, ssh_config, data_dir):
    proc = workbench(ssh_config, *bisect_args(data_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    result = result_of(run_dir_of(proc.stdout))
    assert result["server_starts"] == 0 and all(t["reused"] for t in result["trials"])
    assert culprits(result) == SEEDS_CULPRITS
    assert_as_found(gpu_b)


def test_isolate_runbook_end_to_end(gpu_b, ssh_config, tmp_path):
    with HostLock(gpu_b, purpose="test: wait for gpu-b", wait=float(LOCK_WAIT)):
        pass  # this runbook does not wait for the lock itself
    factors = json.dumps({"--ep-size": "8", "--enable-nccl-nvls": True})
    proc = workbench(ssh_config, "run", "isolate_ep_vs_nvls", "--host", HOST, "--data-dir", str(tmp_path),
                     "-p", "factors", factors, "-p", "start_timeout", "120")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    run_dir = run_dir_of(proc.stdout)
    result = result_of(run_dir)
    # the old name is the generic runbook's preset: same content, named for what it is
    assert result["runbook"] == "factorial" and result["preset"] == "isolate-ep-vs-nvls"
    assert result["base_unit"] == "sglang-k26-ddtree.service"
    causes = {(frozenset(c["factors"]), c["exception_type"]) for c in result["causes"]}
    assert causes == {(frozenset({"--ep-size"}), "AttributeError"),
                      (frozenset({"--ep-size", "--enable-nccl-nvls"}), "RuntimeError")}
    assert "<svg" in assert_offline_report(run_dir)  # the matrix chart, inline
    assert_as_found(gpu_b)


# -- N1: the canary test ----------------------------------------------------------------------


@pytest.fixture
def canary_base(gpu_b):
    """A copy of the base unit with secret-looking Environment= values, installed for the test (the
    real base stopped meanwhile: they share port and GPUs); removed and the base restarted after."""
    unit_token = f"canary-unit-{secrets.token_hex(6)}"
    password = f"canary-pw-{secrets.token_hex(6)}"
    svc = SystemdServices(gpu_b)
    text = svc.unit_text(BASE)
    text = text.replace("[Service]\n", f"[Service]\nEnvironment=WB_CANARY_DB_PASSWORD={password}\n"
                                       f"Environment=WB_CANARY_API_TOKEN={unit_token}\n", 1)
    with HostLock(gpu_b, purpose="test: install the canary base", wait=float(LOCK_WAIT)):
        gpu_b.run(["systemctl", "stop", BASE], check=True)
        gpu_b.put(text.encode(), f"/etc/systemd/system/{CANARY_BASE}")
        gpu_b.run(["systemctl", "daemon-reload"], check=True)
    yield {"unit_token": unit_token, "password": password}
    with HostLock(gpu_b, purpose="test: remove the canary base", wait=float(LOCK_WAIT)):
        gpu_b.run(f"systemctl stop {CANARY_BASE}; rm -f /etc/systemd/system/{CANARY_BASE}; systemctl daemon-reload")
        assert watch_start(svc, BASE, timeout=120).ok


def test_canaries_appear_nowhere(gpu_b, ssh_config, tmp_path, canary_base):
    token = f"CANARY-TOKEN-{secrets.token_hex(6)}"
    password = canary_base["password"]
    ip = f"10.{secrets.randbelow(200) + 20}.{secrets.randbelow(250) + 1}.{secrets.randbelow(250) + 1}"
    edits = {"--ep-size": "8", "--api-key": token, "--served-model-name": password,
             "--dist-init-addr": f"{ip}:5000"}
    since = gpu_b.run(["date", "+%Y-%m-%d %H:%M:%S"], check=True).stdout.strip()
    proc = workbench(ssh_config, "run", "bisect", "--host", HOST, "--data-dir", str(tmp_path),
                     "-p", "base_unit", CANARY_BASE, "-p", "edits", json.dumps(edits), "-p", "start_timeout", "120",
                     "-p", "lock_wait", LOCK_WAIT, "-p", "secret_env", '["WB_CANARY_PASSWORD"]',
                     env={"WB_CANARY_PASSWORD": password})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    run_dir = run_dir_of(proc.stdout)
    result = result_of(run_dir)
    assert culprits(result) == {(frozenset({"--ep-size"}), "AttributeError", "cuda_graph_capture")}
    assert result["host_restored"] is True
    # Positive control: the secrets did reach the host (the server logs its arguments).
    journal = gpu_b.run(["journalctl", "--no-pager", "-o", "cat", "--since", since, "-u", "sglang-canary-wb-*"]).stdout
    assert token in journal and password in journal

    canaries = [token, password, canary_base["unit_token"], ip]
    places: dict[str, bytes] = {"stdout+stderr": (proc.stdout + proc.stderr).encode()}
    for path in sorted(tmp_path.rglob("*")):
        if path.is_file():
            places[str(path.relative_to(tmp_path))] = path.read_bytes()
            if path.suffix == ".parquet":
                places[f"{path.name} (decoded)"] = pd.read_parquet(path).to_json(date_format="iso").encode()
    assert {"notebook.ipynb", "report.html", "result.json", "trials.parquet"} <= {Path(p).name for p in places}
    git = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True)
    if git.returncode == 0:
        shas = "".join(line.split()[1] + "\n" for line in git.stdout.splitlines())
        places["git index"] = subprocess.run(["git", "cat-file", "--batch"], input=shas.encode(), cwd=REPO,
                                             capture_output=True, check=True).stdout
    hits = [(i, where) for where, blob in places.items() for i, c in enumerate(canaries) if c.encode() in blob]
    assert hits == [], f"canaries (0 token, 1 password, 2 unit token, 3 IP) found in: {hits}"
    html = assert_offline_report(run_dir)
    assert "[REDACTED]" in html and "[ADDRESS]" in html
    nb = json.loads((run_dir / "notebook.ipynb").read_text())
    assert nb["metadata"]["papermill"]["parameters"]["edits"]["--api-key"] == "[REDACTED]"
