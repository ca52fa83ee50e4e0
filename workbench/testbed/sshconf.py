"""The testbed's SSH material: a client key, ``known_hosts`` and ``ssh_config`` (pure rendering + keygen)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path


def render_ssh_config(hosts: Iterable[tuple[str, str]], *, key: Path, known_hosts: Path) -> str:
    """One ``Host`` block per (alias, address); host keys are checked strictly."""
    blocks = ["# Written by `workbench testbed up`; aliases of the simulated GPU hosts.\n"]
    for alias, address in hosts:
        blocks.append(
            f"Host {alias}\n"
            f"    HostName {address}\n"
            "    User root\n"
            f"    IdentityFile {key}\n"
            "    IdentitiesOnly yes\n"
            f"    UserKnownHostsFile {known_hosts}\n"
            "    GlobalKnownHostsFile /dev/null\n"
            "    StrictHostKeyChecking yes\n"
            "    ConnectTimeout 10\n"
            "    ServerAliveInterval 5\n"
            "    ServerAliveCountMax 3\n"
            "    BatchMode yes\n"
        )
    return "\n".join(blocks)


def render_known_hosts(entries: Iterable[tuple[str, str]]) -> str:
    """Lines ``address keytype base64`` from (address, public key line) pairs."""
    lines = []
    for address, pub in entries:
        parts = pub.split()
        lines.append(f"{address} {parts[0]} {parts[1]}")
    return "\n".join(lines) + "\n"


def host_public_keys(root: Path) -> list[str]:
    return [p.read_text().strip() for p in sorted((root / "etc/ssh").glob("ssh_host_*_key.pub"))]


def ensure_client_key(path: Path) -> Path:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "workbench-testbed", "-f", str(path)],
                       check=True)
    return path


def generate_host_keys(root: Path) -> None:
    """Fresh host keys for one host (``ssh-keygen -A`` under the host's tree)."""
    (root / "etc/ssh").mkdir(parents=True, exist_ok=True)
    if not list((root / "etc/ssh").glob("ssh_host_*_key")):
        subprocess.run(["ssh-keygen", "-A", "-f", str(root)], check=True, capture_output=True)
