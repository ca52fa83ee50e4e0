"""Container facts from podman's real output (captured on a testbed-style nspawn host, podman 4.3.1)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from workbench import containers as ct
from workbench.errors import ConfigError
from workbench.services.base import exec_argv
from workbench.systemd import UnitStatus
from workbench.variants import Variant

CAP = Path(__file__).parents[2] / "fixtures" / "captured" / "podman"


def _one(name: str) -> ct.ContainerInfo:
    (info,) = ct.parse_inspect((CAP / name).read_text())
    return info


def test_inspect_of_an_exited_container() -> None:
    info = _one("inspect_exited.json")
    assert (info.name, info.status, info.exit_code, info.restarts) == ("dies", "exited", 3, 0)
    assert info.argv == ["sh", "-c", "echo boom >&2; exit 3"]
    assert info.image == "localhost/wbtest:latest" and info.image_id.startswith("81b1db2bd7ad")
    assert info.network_mode == "host" and info.ports == {}
    assert info.started_usec == ct.parse_time("2026-12-01T10:29:53.612475973Z")
    assert info.create_command is not None and info.create_command[:2] == ["podman", "--storage-driver"]
    st = UnitStatus.from_show(ct.status_props(info, info.name))
    assert st.active_state == "failed" and st.exit_status == 3 and not st.running
    assert st.invocation_id == info.invocation and len(st.invocation_id) == 32
    assert ct.invocation_start(st.invocation_id) == info.started_usec


def test_stopped_by_us_is_not_a_failure() -> None:
    info = replace(_one("inspect_exited.json"), exit_code=143)
    assert UnitStatus.from_show(ct.status_props(info, info.name, stopped_by_us=True)).active_state == "inactive"
    assert UnitStatus.from_show(ct.status_props(info, info.name)).active_state == "failed"


def test_created_never_started_and_missing() -> None:
    info = _one("inspect_nobin.json")
    st = UnitStatus.from_show(ct.status_props(info, info.name))
    assert (st.active_state, st.invocation_id) == ("inactive", "")
    assert ct.parse_inspect("[]") == []
    assert UnitStatus.from_show(ct.status_props(None, "nosuch")).missing


def test_running_published_container_and_its_port() -> None:
    info = _one("inspect_pub.json")
    assert info.running and info.pid > 0 and info.ports == {"8080/tcp": [18080]}
    assert ct.server_port(info, 8080) == 18080
    with pytest.raises(ConfigError, match="not published"):
        ct.server_port(info, 30000)
    assert ct.server_port(_one("inspect_exited.json"), 30000) == 30000  # host network


def test_unit_text_round_trips_the_command() -> None:
    info = _one("inspect_exited.json")
    assert exec_argv(ct.unit_text(info), info.name) == info.argv


def test_logs_split_per_start_at_init_events() -> None:
    logs = (CAP / "logs_dies.txt").read_text()
    bounds = ct.start_boundaries((CAP / "events_dies.jsonl").read_text())
    assert len(bounds) == 2
    first = ct.parse_time("2026-12-01T10:29:52.512Z")
    second = _one("inspect_exited.json").started_usec
    assert ct.split_invocation(logs, "dies", first, bounds) == ["boom"]
    assert ct.split_invocation(logs, "dies", second, bounds) == ["boom"]
    assert ct.split_invocation(logs, "dies", second, []) == ["boom"]  # no events: from the start on
    e = ct.parse_log_line("2026-12-01T10:29:52.514293512Z boom", "dies")
    assert e is not None and e.message == "boom" and e.usec == 1796120992514293
    assert ct.parse_log_line("garbage", "dies") is None


SGLANG_RUN = ["podman", "run", "-d", "--name", "sglang-k26-ddtree", "--network", "host", "-v", "/models:/models:ro",
              "-e", "PYTHONUNBUFFERED=1", "--restart", "on-failure", "--shm-size=32g", "-it",
              "localhost/sglang-sim:latest", "python3", "-m", "sglang.launch_server", "--port", "30000",
              "--tp-size", "8", "--enable-metrics"]


def test_split_run_finds_options_image_and_command() -> None:
    head, opts, rest = ct.split_run(SGLANG_RUN)
    assert head == ["podman", "run"] and rest[0] == "localhost/sglang-sim:latest"
    assert rest[1:4] == ["python3", "-m", "sglang.launch_server"] and rest[1:] == SGLANG_RUN[16:]
    assert "-it" in opts and "--shm-size=32g" in opts
    with pytest.raises(ConfigError):
        ct.split_run(["podman", "ps"])
    with pytest.raises(ConfigError, match="no image"):
        ct.split_run(["podman", "run", "-d", "--name", "x"])


def test_variant_create_keeps_the_base_options_and_edits_the_command() -> None:
    base = replace(_one("inspect_exited.json"), name="sglang-k26-ddtree", create_command=SGLANG_RUN,
                   argv=SGLANG_RUN[16:])
    v = Variant.build(base.name, ct.unit_text(base), {"--tp-size": "4", "--enable-metrics": None}, {"NCCL_DEBUG": "INFO"})
    argv = ct.create_argv("podman", base, ct.check_name(v.name), v.argv()[1], list(v.env), timeout_s=600)
    assert argv[:2] == ["podman", "create"]
    joined = " ".join(argv)
    for kept in ("--network host", "-v /models:/models:ro", "-e PYTHONUNBUFFERED=1", "--shm-size=32g"):
        assert kept in joined
    for dropped in ("-d ", "-it", "--restart on-failure", "--name sglang-k26-ddtree "):
        assert dropped not in joined
    assert f"--name {ct.check_name(v.name)}" in joined and "--restart no" in joined and "--pull never" in joined
    assert f"--label {ct.VARIANT_LABEL}=sglang-k26-ddtree" in joined and "--timeout 600" in joined
    assert "-e NCCL_DEBUG=INFO" in joined
    i = argv.index("--entrypoint")
    assert argv[i + 1] == "python3" and argv[i + 2] == base.image_id
    assert argv[i + 3:] == ["-m", "sglang.launch_server", "--port", "30000", "--tp-size", "4"]


def test_docker_variant_is_rebuilt_from_inspect() -> None:
    raw = json.loads((CAP / "inspect_pub.json").read_text())
    raw[0]["Config"]["CreateCommand"] = None
    raw[0]["HostConfig"]["Binds"] = ["/models:/models:ro"]
    raw[0]["HostConfig"]["DeviceRequests"] = [{"Driver": "", "Count": -1, "DeviceIDs": None}]
    (base,) = ct.parse_inspect(json.dumps(raw))
    argv = ct.create_argv("docker", base, "pub-wb-1", ["sleep", "5"], [], timeout_s=600)
    joined = " ".join(argv)
    assert "-p 18080:8080/tcp" in joined and "-v /models:/models:ro" in joined and "--gpus all" in joined
    assert "--timeout" not in joined and "--pull" not in joined
    with pytest.raises(ConfigError, match="cannot unset"):
        ct.create_argv("docker", base, "pub-wb-1", ["sleep", "5"], [("X", None)], timeout_s=None)


@pytest.mark.parametrize("bad", ["", "-rf", "a b", "x;y", "a" * 200])
def test_bad_container_names(bad: str) -> None:
    with pytest.raises(ConfigError):
        ct.check_name(bad)
