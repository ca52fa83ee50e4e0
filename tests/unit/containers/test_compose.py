"""Compose files read into one container's ``podman run``: the real compose files of SGLang
(sgl-project/sglang docker/compose.yaml) and vLLM (vllm-project/vllm-gaudi .cd/docker-compose.yml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench import compose, containerunit
from workbench.errors import ConfigError

FIX = Path(__file__).parents[2] / "fixtures" / "compose"
SGLANG = FIX / "sglang-compose.yaml"
GAUDI = FIX / "vllm-gaudi" / "docker-compose.yml"
GAUDI_ENV = {"DOCKER_IMAGE": "vault.habana.ai/gaudi-docker/1.22.0/vllm:latest", "MODEL": "Qwen/Qwen3-8B",
             "VLLM_SERVER_CONFIG_FILE": "server/settings.yaml", "VLLM_SERVER_CONFIG_NAME": "qwen3-8b"}


def test_sglangs_compose_is_one_container_on_the_host_network() -> None:
    svc = compose.load(SGLANG, env={"HOME": "/home/me"})
    assert (svc.name, svc.container_name, svc.image) == ("sglang", "sglang", "lmsysorg/sglang:latest")
    assert svc.entrypoint == ["python3", "-m", "sglang.launch_server"]
    assert svc.command == ["--model-path", "meta-llama/Meta-Llama-3.1-8B-Instruct", "--host", "0.0.0.0",
                           "--port", "30000"]
    assert svc.environment == {"HF_TOKEN": "<secret>"} and svc.network_mode == "host" and svc.ipc == "host"
    assert svc.gpus == "device=0" and svc.volumes == ["/home/me/.cache/huggingface:/root/.cache/huggingface"]
    assert svc.ulimits == ["memlock=-1", "stack=67108864"] and svc.restart == "always" and svc.unset == []
    argv = compose.run_argv(svc, "podman")
    assert argv[:2] == ["podman", "run"] and "-d" in argv
    run = containerunit.parse(argv)
    assert run is not None and run.name == "sglang" and run.host_network and run.image == "lmsysorg/sglang:latest"
    assert run.values("--entrypoint") == ["python3"] and run.values("--gpus") == ["device=0"]
    # the server's flags follow the image: what variants edit, where the port is read
    assert run.command == ["-m", "sglang.launch_server", *svc.command]
    assert containerunit.host_port(run, 30000) == 30000
    assert run.values("--label") == [f"{compose.COMPOSE_LABEL}=sglang-compose.yaml:sglang"]


def test_vllms_compose_interpolates_passes_through_and_reads_its_env_file() -> None:
    svc = compose.load(GAUDI, "vllm-server", env={**GAUDI_ENV, "HF_TOKEN": "hf_x"}, project="cd")
    assert svc.image == GAUDI_ENV["DOCKER_IMAGE"] and svc.container_name == "cd-vllm-server-1"
    assert svc.command == ["server", "--config-file", "server/settings.yaml", "--config-name", "qwen3-8b"]
    assert svc.environment["MODEL"] == "Qwen/Qwen3-8B" and svc.environment["HF_TOKEN"] == "hf_x"  # passed through
    assert svc.environment["HABANA_VISIBLE_DEVICES"] == "all" and svc.environment["DRY_RUN"] == "0"  # defaults
    assert svc.environment["MAX_MODEL_LEN"] == "4096"  # from env_file, relative to the compose file
    assert svc.ports == ["8000:8000"] and svc.cap_add == ["SYS_NICE"] and svc.runtime == "habana"
    assert svc.volumes[1] == f"{GAUDI.parent.resolve()}:/local"  # ${PWD}: the compose file's directory
    docker = compose.run_argv(svc, "docker")
    assert docker[docker.index("--runtime") + 1] == "habana"
    podman = compose.run_argv(svc, "podman")
    assert "--runtime" not in podman and "--entrypoint" not in podman
    run = containerunit.parse(podman)
    assert run is not None and run.published() == {8000: 8000} and run.command == svc.command


def test_unset_variables_are_listed_and_required_ones_refused(tmp_path: Path) -> None:
    svc = compose.load(GAUDI, "vllm-server", env={"DOCKER_IMAGE": "img"})
    # DRY_RUN: the healthcheck's "$DRY_RUN" is interpolated too (compose warns about it the same way)
    assert svc.unset == ["DRY_RUN", "VLLM_SERVER_CONFIG_FILE", "VLLM_SERVER_CONFIG_NAME"]
    assert "MODEL" not in svc.environment  # a pass-through of nothing sets nothing
    with pytest.raises(ConfigError, match=r"no image .*DOCKER_IMAGE"):
        compose.load(GAUDI, "vllm-server", env={})
    f = tmp_path / "compose.yaml"
    f.write_text("services:\n  s:\n    image: ${IMG:?give the image}\n    command: echo $$HOME\n")
    with pytest.raises(ConfigError, match="IMG is required: give the image"):
        compose.load(f, env={})
    assert compose.load(f, env={"IMG": "x"}).command == ["echo", "$HOME"]


def test_bad_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="several services \\(vllm-server, benchmark\\)"):
        compose.load(GAUDI, env=GAUDI_ENV)
    with pytest.raises(ConfigError, match="no service 'nope'"):
        compose.load(SGLANG, "nope", env={})
    with pytest.raises(ConfigError, match="joins another service's container's network"):
        compose.load(GAUDI, "benchmark", env={**GAUDI_ENV, "VLLM_BENCHMARK_CONFIG_FILE": "b", "VLLM_BENCHMARK_CONFIG_NAME": "c"})
    f = tmp_path / "c.yaml"
    f.write_text("services:\n  s:\n    build: .\n")
    with pytest.raises(ConfigError, match="is built"):
        compose.load(f, env={})
    f.write_text("version: '3'\n")
    with pytest.raises(ConfigError, match="no services"):
        compose.load(f, env={})
    with pytest.raises(ConfigError, match="cannot read compose file"):
        compose.load(tmp_path / "missing.yaml", env={})
