"""The container backend through a fake host (our Host seam) that answers with podman's captured output."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from workbench.errors import ContainerRuntimeMissing, UnitNotFound
from workbench.hosts import Result
from workbench.services import ContainerServices, WithContainers

CAP = Path(__file__).parents[2] / "fixtures" / "captured" / "podman"


class FakeHost:
    """Answers commands by their first words; records what ran."""

    name = "fake"

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.ran: list[str] = []

    def run(self, cmd, **kw) -> Result:  # type: ignore[no-untyped-def]
        text = cmd if isinstance(cmd, str) else shlex.join(cmd)
        self.ran.append(text)
        for prefix, (rc, out, err) in self.answers.items():
            if text.startswith(prefix):
                return Result(text, out, err, rc, self.name)
        return Result(text, "", f"unexpected: {text}", 99, self.name)


def test_status_from_inspect_and_a_missing_container() -> None:
    inspect = (CAP / "inspect_exited.json").read_text()
    host = FakeHost({"podman container inspect -- dies": (0, inspect, ""),
                     "podman container inspect -- nosuch": (125, "[]", 'Error: no such object: "nosuch"')})
    svc = ContainerServices(host, "podman")  # type: ignore[arg-type]
    st = svc.status("dies.service")
    assert (st.unit, st.active_state, st.exit_status) == ("dies", "failed", 3)
    assert svc.status("nosuch").missing
    with pytest.raises(UnitNotFound, match="no container named 'nosuch'"):
        svc.unit_text("nosuch")


def test_runtime_absent() -> None:
    host = FakeHost({"sh -c 'command -v podman || command -v docker'": (1, "", "")})
    with pytest.raises(ContainerRuntimeMissing, match="no container runtime"):
        ContainerServices(host).status("x")  # type: ignore[arg-type]


def test_with_containers_routes_by_name() -> None:
    class Units:
        kind, state_dir, lock_dir = "systemd", "/run/workbench", "/run/lock"

        def __init__(self, host: FakeHost) -> None:
            self.host = host

        def host_port(self, unit: str, argv: list[str]) -> int:
            return 30000

        def units(self, pattern: str = "*") -> list[str]:
            return ["ssh.service"]

    host = FakeHost({"podman ps -a --format": (0, "dies\n", "")})
    both = WithContainers(Units(host), ContainerServices(host, "podman"))  # type: ignore[arg-type]
    assert both.backend("dies") is both.containers and both.backend("dies.service") is both.containers
    assert both.backend("ssh.service") is both.units_backend
    # a variant of a container, removed since: still the container's (its logs are kept)
    assert both.backend("dies-wb-0123456789.service") is both.containers
    assert both.backend("ssh-wb-0123456789.service") is both.units_backend
    assert both.units() == ["ssh.service", "dies"]
    assert both.host_port("ssh.service", ["python3", "-m", "sglang.launch_server"]) == 30000


def test_a_variant_not_created_yet_is_undone_where_its_base_lives() -> None:
    """The record (and the guard's undo steps) names a variant before its container exists: its
    removal must be the container runtime's, not the units backend's (which would leave it)."""
    from workbench.services import SystemdServices

    host = FakeHost({"podman ps -a --format": (0, "dies\n", "")})
    units, containers = SystemdServices(host), ContainerServices(host, "podman")  # type: ignore[arg-type]
    both = WithContainers(units, containers)
    assert both.remove_variant_argv("dies-wb-0123456789.service") == containers.remove_variant_argv(
        "dies-wb-0123456789.service")
    assert both.remove_variant_argv("ssh-wb-0123456789.service") == units.remove_variant_argv(
        "ssh-wb-0123456789.service")  # a unit's variant
    assert units.remove_variant_argv("dies-wb-0123456789.service") != containers.remove_variant_argv(
        "dies-wb-0123456789.service")
