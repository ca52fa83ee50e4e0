"""A systemd unit whose ExecStart is `podman run` / `docker run`: the server's flags after the image,
the variant's own container, the port through the run's publish settings."""

from __future__ import annotations

import pytest

from workbench import containerunit
from workbench.errors import ConfigError
from workbench.services.base import exec_argv
from workbench.testbed.containers import PODMAN_CONTAINER, PODMAN_PORT, podman_unit_text
from workbench.unitfile import UnitFile
from workbench.variants import Variant

UNIT = "sglang-k26-podman.service"
# As the SGLang docs deploy it (docker run --gpus all -p 30000:30000 --ipc=host lmsysorg/sglang ...).
DOCKER_UNIT = """[Unit]
Description=SGLang in docker

[Service]
ExecStartPre=-/usr/bin/docker rm -f sglang
ExecStart=/usr/bin/docker run --rm --name sglang --gpus all --shm-size 32g -p 8080:30000 \\
    -v /root/.cache/huggingface:/root/.cache/huggingface --env HF_TOKEN=secret --ipc=host \\
    lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct \\
    --host 0.0.0.0 --port 30000
Restart=always
"""


def test_the_run_splits_into_options_image_and_server_flags() -> None:
    run = containerunit.parse(exec_argv(DOCKER_UNIT))
    assert run is not None and run.runtime == "docker" and run.image == "lmsysorg/sglang:latest"
    assert run.command[:3] == ["python3", "-m", "sglang.launch_server"] and run.name == "sglang"
    assert run.published() == {30000: 8080} and not run.host_network
    assert containerunit.host_port(run, 30000) == 8080
    with pytest.raises(ConfigError, match="publishes only \\[30000\\]"):
        containerunit.host_port(run, 8000)
    assert containerunit.parse(["/usr/bin/python3", "-m", "sglang.launch_server"]) is None
    assert containerunit.parse(["/usr/bin/podman", "start", "-a", "x"]) is None
    host = containerunit.parse(exec_argv(podman_unit_text()))
    assert host is not None and host.host_network and containerunit.host_port(host, 30001) == 30001


def test_a_variant_edits_the_server_flags_and_gets_its_own_container() -> None:
    v = Variant.build(UNIT, podman_unit_text(), {"--ep-size": "8", "--port": None}, {"NCCL_DEBUG": "INFO"})
    run = containerunit.parse(v.argv()[1])
    base = containerunit.parse(exec_argv(podman_unit_text()))
    assert run is not None and base is not None
    assert v.container == f"{PODMAN_CONTAINER}-wb-{v.digest}" and run.name == v.container
    assert run.image == base.image and run.head == base.head
    assert run.command == [*[a for a in base.command if a not in ("--port", PODMAN_PORT)], "--ep-size", "8"]
    assert v.server_argv() == run.command
    # the runtime's options are the base's, the env edit is one of them, not the unit's Environment=
    assert run.options[-2:] == ["-e", "NCCL_DEBUG=INFO"] and "--rm" in run.options
    text = UnitFile.parse(v.render(), source=v.name)
    assert text.get_all("Service", "Environment") == []
    assert text.get_all("Service", "ExecStopPost") == [f"-/usr/bin/podman rm -f -- {v.container}"]


def test_a_flag_that_is_also_a_runtime_option_is_only_edited_in_the_server() -> None:
    """`--name`/`-e` before the image are podman's; `--host` after it is the server's."""
    v = Variant.build("sglang-docker.service", DOCKER_UNIT, {"--host": "127.0.0.1", "--shm-size": "1g"})
    run = containerunit.parse(v.argv()[1])
    assert run is not None
    assert run.values("--shm-size") == ["32g"]  # podman's option untouched
    assert run.command[-2:] == ["--shm-size", "1g"] and "127.0.0.1" in run.command


def test_an_image_cmd_cannot_be_edited() -> None:
    text = "[Service]\nExecStart=/usr/bin/podman run --rm --name vllm -p 8000:8000 vllm/vllm-openai:latest\n"
    with pytest.raises(ConfigError, match="comes from the image's CMD"):
        Variant.build("vllm.service", text, {"--max-model-len": "4096"}).argv()


def test_docker_cannot_unset_an_image_variable() -> None:
    with pytest.raises(ConfigError, match="docker cannot unset"):
        Variant.build("sglang-docker.service", DOCKER_UNIT, {}, {"HF_TOKEN": None}).argv()


def test_the_plan_is_the_backends_own_commands() -> None:
    """session.plan asks the backend: the systemd backend's plan for a podman-run unit names the variant
    unit it would start and the removal that also daemon-reloads; nothing runs on a host."""
    from workbench.services import SystemdServices

    class NoHost:
        name = "h"

        def run(self, *a: object, **k: object) -> None:
            raise AssertionError("a plan runs nothing")

    v = Variant.build(UNIT, podman_unit_text(), {"--ep-size": "8"})
    where, cmds = SystemdServices(NoHost()).plan(v)  # type: ignore[arg-type]
    assert where == v.path
    assert any(c.startswith(f"systemctl start --no-block -- {v.name}") for c in cmds)
    assert any("daemon-reload" in c and v.name in c for c in cmds)
    assert cmds[-1].startswith(f"systemctl start --no-block -- {UNIT}")
