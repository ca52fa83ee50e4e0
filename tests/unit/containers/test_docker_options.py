"""A Docker variant's ``create`` options, rebuilt from a real ``docker container inspect`` (Docker
keeps no command line): every option of the base that changes how the server runs comes back."""

from __future__ import annotations

import itertools
from pathlib import Path

from workbench import containers as ct

FIXTURE = Path(__file__).parents[2] / "fixtures" / "captured" / "docker" / "inspect_sglang_flags.json"


def test_variant_options_keep_init_privileges_limits_ipc_mounts_and_env():
    (info,) = ct.parse_inspect(FIXTURE.read_text())
    assert info.create_command is None  # docker: rebuilt from HostConfig
    argv = ct.create_argv("docker", info, "sglang-real-flags-wb-0123456789", [*info.argv, "--ep-size", "8"], [],
                          timeout_s=None)
    opts = argv[argv.index("create") + 1: argv.index("--entrypoint")]
    pairs = list(itertools.pairwise(opts))
    assert "--init" in opts  # without it the server is PID 1 and cannot end its own process tree
    assert "--privileged" in opts
    assert ("--cap-add", "CAP_SYS_PTRACE") in pairs
    assert ("--ulimit", "memlock=-1:-1") in pairs and ("--ulimit", "stack=67108864:67108864") in pairs
    assert ("--security-opt", "seccomp=unconfined") in pairs
    assert ("--ipc", "host") in pairs and ("--network", "host") in pairs
    assert ("--shm-size", "34359738368") in pairs and ("-v", "/models:/models:ro") in pairs
    assert ("-e", "HF_HOME=/models") in pairs and ("-w", "/sgl-workspace") in pairs
    assert "--runtime" not in opts  # runc: the default, not repeated
    assert argv[-2:] == ["--ep-size", "8"] and "--pull" not in argv  # podman's own options stay podman's
