"""The container backend on a real Docker: ``dockerd`` on this machine (Debian's ``docker.io``).

Docker cannot run inside the testbed's nspawn hosts (their cgroups are read-only, and Docker has no
``--cgroups=disabled``), so the daemon runs here, with a data root, socket and containerd of its
own, no bridge and no iptables rules (``--bridge=none --iptables=false``): nothing of the machine's
network changes; the containers use host networking on a loopback port. The image is built from
local files (``docker import`` of a tar of empty directories; ``/usr`` and ``/etc`` of this machine,
the simulator and its model files bind-mounted read-only). The host is ``LocalHost`` with the
container backend; ``DOCKER_HOST`` points the CLI at this daemon.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.hosts import LocalHost
from workbench.journal.read import invocation_text
from workbench.services import ContainerServices, inventory
from workbench.session import HostSession
from workbench.testbed.ports import free_port
from workbench.tracebacks import analyze

from .test_restore import CONTROLLER

ROOT = Path(__file__).parents[2]
BASE = "wb-docker-sglang"
IMAGE = "localhost/wb-docker-base:local"
BOUND_KILLED = 60.0  # the guard's promise (docs/guard.md)


def _image_tar() -> bytes:
    """Empty directories and the merged-/usr links: the rest is bind-mounted from this machine.
    ``/sbin`` is a directory of its own: Docker mounts its init there (``/sbin/docker-init``), which
    the read-only ``/usr`` could not take."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("usr", "etc", "tmp", "root", "proc", "sys", "dev", "run", "sim", "models", "sbin"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        for link in ("bin", "lib", "lib64"):
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, f"usr/{link}"
            tar.addfile(info)
    return buf.getvalue()


@pytest.fixture(scope="module")
def docker(tmp_path_factory) -> Iterator[dict[str, str]]:
    """A private dockerd; yields the environment that reaches it."""
    if not shutil.which("dockerd") or os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run the Docker tests: docker.io is among the Makefile's Debian packages")
        pytest.skip("needs root and dockerd (Debian's docker.io)")
    for path in ("/bin", "/lib", "/lib64"):
        if not os.path.islink(path):
            pytest.skip(f"{path} is not a link into /usr: the image's bind mounts assume a merged /usr")
    d = Path(tempfile_dir := tmp_path_factory.mktemp("dockerd"))
    sock = d / "d.sock"
    env = {"DOCKER_HOST": f"unix://{sock}"}
    log = (d / "dockerd.log").open("wb")
    daemon = subprocess.Popen(["dockerd", "--data-root", str(d / "data"), "--exec-root", str(d / "exec"),
                               "-H", f"unix://{sock}", "--pidfile", str(d / "dockerd.pid"), "--bridge=none",
                               "--iptables=false", "--ip-masq=false"], stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    run_env = dict(os.environ, **env)
    try:
        deadline = time.monotonic() + 90
        while subprocess.run(["docker", "info"], env=run_env, capture_output=True).returncode != 0:
            assert daemon.poll() is None, (d / "dockerd.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "dockerd did not answer within 90 s"
            time.sleep(0.2)
        subprocess.run(["docker", "import", "-", IMAGE], input=_image_tar(), env=run_env, check=True,
                       capture_output=True)
        yield env
    finally:
        out = subprocess.run(["docker", "ps", "-aq"], env=run_env, capture_output=True, text=True).stdout.split()
        if out:
            subprocess.run(["docker", "rm", "-f", *out], env=run_env, capture_output=True)
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
        # dockerd leaves mounts behind (its netns file: nsfs on exec/netns/default): lift them first
        mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
        for m in sorted((m for m in mounts if m.startswith(str(d) + "/")), reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(tempfile_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def base(docker) -> Iterator[tuple[LocalHost, ContainerServices, int]]:
    """The seeds' baseline as a named Docker container with ``--init`` on host networking, running."""
    port = free_port()
    model = "/models/Kimi-K2.6"
    argv = ["/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", model, "--served-model-name",
            "kimi-k2.6", "--host", "127.0.0.1", "--port", str(port), "--tp-size", "8", "--trust-remote-code",
            "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", "/models/Kimi-K2.6-DFlash",
            "--speculative-num-steps", "3", "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8",
            "--mem-fraction-static", "0.85", "--cuda-graph-max-bs", "64", "--enable-metrics"]
    mounts = ["-v", "/usr:/usr:ro", "-v", "/etc:/etc:ro", "-v", f"{ROOT / 'workbench/sim'}:/sim:ro",
              "-v", f"{ROOT / 'workbench/testbed/models'}:/models:ro"]
    run_env = dict(os.environ, **docker)
    subprocess.run(["docker", "create", "--name", BASE, "--init", "--network", "host", "-w", "/root",
                    "-e", "PYTHONPATH=/sim", "-e", "PYTHONUNBUFFERED=1", *mounts, IMAGE, *argv],
                   env=run_env, check=True, capture_output=True)
    host = LocalHost("docker", env=docker)
    svc = ContainerServices(host)
    from workbench.watch import watch_start

    ready = watch_start(svc, BASE, timeout=180)
    assert ready.ok, ready.describe()
    yield host, svc, port


def _definition(svc: ContainerServices) -> dict[str, object]:
    (c,) = json.loads(svc.host.run(["docker", "container", "inspect", BASE], check=True).stdout)
    return {"id": c["Id"], "image": c["Image"], "cmd": c["Config"]["Cmd"], "env": c["Config"]["Env"],
            "host_config": {k: c["HostConfig"][k] for k in ("Binds", "Init", "NetworkMode", "RestartPolicy")}}


def _as_found(svc: ContainerServices, before: dict[str, object]) -> None:
    assert _definition(svc) == before
    assert svc.status(BASE).running
    assert svc.variant_files() == {}
    left = svc.host.run(["docker", "ps", "-a", "--format", "{{.Names}}"], check=True).stdout.split()
    assert left == [BASE], left


def test_status_names_docker_the_container_and_its_command(base) -> None:
    _host, svc, port = base
    assert svc.runtime == "docker"
    row = next(r for r in inventory(svc) if r.status.unit == BASE)
    assert row.backend == "container" and row.status.running and row.image == IMAGE
    assert row.argv[:3] == ["/usr/bin/python3", "-m", "sglang.launch_server"] and str(port) in row.argv


def test_variants_ready_and_failed_are_judged_and_the_container_is_as_found(base) -> None:
    """A ready variant and the seeds' EP8 failure, each a new container from the base's image with the
    base's options (its ``--init``: without it the failing server, PID 1, cannot kill itself and
    hangs), the failure's phase and exception from ``docker logs``, the base restarted."""
    host, svc, _port = base
    before = _definition(svc)
    with HostSession(host, services=svc, lock_wait=300) as s:
        ok = s.run_variant(BASE, {"--cuda-graph-max-bs": "32"}, timeout=120)
        assert ok.outcome.ok, ok.outcome.describe()
        bad = s.run_variant(BASE, {"--ep-size": "8"}, timeout=120)
        assert bad.outcome.outcome == "failed" and bad.outcome.phase == "cuda_graph_capture", bad.outcome.describe()
        assert "killed by signal 9" in bad.outcome.reason  # the server took its own tree down, as SGLang does
        report = analyze(invocation_text(svc, bad.variant, bad.outcome.invocation_id))
        assert report.root_cause is not None and report.root_cause.exception_type == "AttributeError"
        assert "'NoneType' object has no attribute 'topk_ids'" in report.root_cause.message
    _as_found(svc, before)


@pytest.mark.parametrize("step", ["after_stop_base", "during_watch"])
def test_controller_killed_the_guard_restores_the_docker_host(base, docker, step) -> None:
    """SIGKILL of the controller mid-trial: the guard (a detached process here) restores the base
    container and removes the variant, with no further workbench command."""
    _host, svc, _port = base
    before = _definition(svc)
    env = dict(os.environ, **docker, KILL_SIGNAL="KILL", PYTHONPATH=str(ROOT), GUARD="1",
               EDITS=json.dumps({"--ep-size": "8"}), PHASE="weight_loading", LOCK_WAIT="300")
    proc = subprocess.run([sys.executable, str(CONTROLLER), "docker", step, BASE], capture_output=True, text=True,
                          timeout=300, env=env)
    gone = time.monotonic()
    assert f"REACHED {step}" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == -signal.SIGKILL
    run_env = dict(os.environ, **docker)

    def state() -> list[str]:
        running = subprocess.run(["docker", "inspect", "--format", "{{.State.Running}}", BASE], env=run_env,
                                 capture_output=True, text=True).stdout.split()
        names = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], env=run_env, capture_output=True,
                               text=True).stdout.split()
        return [*running, str(len(names)), "record" if Path("/run/workbench/session.json").exists() else "no-record"]

    while (st := state()) != ["true", "1", "no-record"]:
        assert time.monotonic() - gone < BOUND_KILLED, f"not restored {BOUND_KILLED:.0f} s after the kill: {st}"
        time.sleep(0.2)
    print(f"\nGUARD-RESTORE docker-KILL@{step} {time.monotonic() - gone:.2f} s", flush=True)
    _as_found(svc, before)
