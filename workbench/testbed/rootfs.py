"""The testbed hosts' root filesystem: built once with debootstrap, cached by recipe hash.

A rebuild happens only when the :class:`Recipe` changes (suite, mirror,
packages, or the post-install configuration below).  The build goes to a
temporary directory and is renamed into place only when complete, so an
interrupted build is never mistaken for a cached one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.errors import ConfigError, WorkbenchError
from workbench.testbed import paths

PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "openssh-server",
    "python3",
    "iproute2",
    "procps",
    "sudo",
)

# Post-install configuration, applied inside the fresh tree (as files, no chroot
# needed).  Part of the recipe hash: editing it rebuilds the cache.
POST_INSTALL_VERSION = 3

_JOURNALD_CONF = """\
# workbench testbed: keep the journal on disk so invocations outlive restarts of journald
[Journal]
Storage=persistent
"""

_SSHD_CONF = """\
# workbench testbed
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
ClientAliveInterval 10
ClientAliveCountMax 3
MaxSessions 64
MaxStartups 64:30:128
"""


@dataclass(frozen=True)
class Recipe:
    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    variant: str = "minbase"
    packages: tuple[str, ...] = PACKAGES
    post_install: int = POST_INSTALL_VERSION
    extra: dict[str, str] = field(default_factory=dict)

    def digest(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def debootstrap_argv(self, target: Path) -> list[str]:
        return [
            "debootstrap",
            f"--variant={self.variant}",
            f"--include={','.join(self.packages)}",
            self.suite,
            str(target),
            self.mirror,
        ]


def post_install(root: Path) -> None:
    """Shape a fresh tree into a testbed host template (pure file edits)."""
    # Host keys are per host: the template must not carry any.
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    (root / "etc/ssh/sshd_config.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/ssh/sshd_config.d/workbench.conf").write_text(_SSHD_CONF)
    (root / "etc/systemd/journald.conf.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/systemd/journald.conf.d/workbench.conf").write_text(_JOURNALD_CONF)
    (root / "var/log/journal").mkdir(parents=True, exist_ok=True)
    # Each booted host draws its own machine id.
    (root / "etc/machine-id").write_text("")
    # No login prompt on a console nobody reads.
    wants = root / "etc/systemd/system/getty.target.wants"
    if wants.exists():
        shutil.rmtree(wants)
    (root / "etc/systemd/system/console-getty.service").unlink(missing_ok=True)
    (root / "etc/systemd/system/console-getty.service").symlink_to("/dev/null")
    (root / "root/.ssh").mkdir(mode=0o700, parents=True, exist_ok=True)


def cached(recipe: Recipe | None = None) -> Path | None:
    """The cached tree for ``recipe`` if it was built completely, else None."""
    recipe = recipe or Recipe()
    target = paths.rootfs_cache() / recipe.digest()
    return target if (target / ".workbench-complete").is_file() else None


def build(recipe: Recipe | None = None, *, log: Path | None = None, progress: Callable[[str], None] = print) -> Path:
    """Return the cached tree for ``recipe``, building it with debootstrap if needed."""
    recipe = recipe or Recipe()
    found = cached(recipe)
    if found:
        return found
    if os.geteuid() != 0:
        raise ConfigError("building the testbed root filesystem needs root (debootstrap)")
    if not shutil.which("debootstrap"):
        raise ConfigError("debootstrap is not installed (apt-get install debootstrap)")
    base = paths.rootfs_cache()
    base.mkdir(parents=True, exist_ok=True)
    target = base / recipe.digest()
    tmp = base / f".build-{recipe.digest()}-{os.getpid()}"
    for stale in base.glob(f".build-{recipe.digest()}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    log = log or base / f"{recipe.digest()}.log"
    progress(f"building root filesystem {recipe.suite} ({recipe.digest()}) with debootstrap; log: {log}")
    started = time.monotonic()
    with open(log, "wb") as fh:
        proc = subprocess.run(recipe.debootstrap_argv(tmp), stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise WorkbenchError(f"debootstrap failed (exit {proc.returncode}):\n" + "\n".join(tail))
    post_install(tmp)
    (tmp / ".workbench-complete").write_text(json.dumps(asdict(recipe), sort_keys=True))
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)
    progress(f"root filesystem ready in {time.monotonic() - started:.0f} s: {target}")
    return target


@dataclass(frozen=True)
class Layer:
    """Packages installed on top of a base tree (``apt-get`` in a chroot of an overlay), plus files.

    Cached as the overlay's upper directory, by a digest of the base, the packages and the files;
    a host stacks it over the base (``lowerdir=layer:base``)."""

    name: str
    packages: tuple[str, ...]
    files: tuple[tuple[str, str], ...] = ()

    def digest(self, base: Path) -> str:
        blob = json.dumps([base.name, self.name, self.packages, self.files]).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def build_layer(base: Path, layer: Layer, *, progress: Callable[[str], None] = print) -> Path:
    """The cached upper directory of ``layer`` over ``base``, built if needed (needs root and the network
    to the Debian mirror, like debootstrap)."""
    cache = paths.rootfs_cache()
    target = cache / f"layer-{layer.name}-{layer.digest(base)}"
    if (target / ".workbench-complete").is_file():
        return target
    if os.geteuid() != 0:
        raise ConfigError("building a testbed layer needs root (chroot apt-get)")
    tmp = cache / f".layer-{layer.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    upper, work, merged = tmp / "upper", tmp / "work", tmp / "merged"
    for d in (upper, work, merged):
        d.mkdir(parents=True)
    log = cache / f"layer-{layer.name}.log"
    progress(f"building layer {layer.name} ({', '.join(layer.packages)}); log: {log}")
    started = time.monotonic()
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={base},upperdir={upper},workdir={work}",
                    str(merged)], check=True)
    try:
        shutil.copyfile("/etc/resolv.conf", merged / "etc/resolv.conf")
        script = ("mount -t proc proc /proc && export DEBIAN_FRONTEND=noninteractive && apt-get update -q && "
                  f"apt-get install -y -q --no-install-recommends {' '.join(layer.packages)}; rc=$?; "
                  "apt-get clean; rm -rf /var/lib/apt/lists/*; umount /proc; exit $rc")
        with open(log, "wb") as fh:
            proc = subprocess.run(["chroot", str(merged), "sh", "-c", script], stdout=fh, stderr=subprocess.STDOUT)
        (merged / "etc/resolv.conf").unlink(missing_ok=True)
        for path, text in layer.files:
            dst = merged / path.lstrip("/")
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(text)
    finally:
        subprocess.run(["umount", str(merged)], check=False)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tail = log.read_text(errors="replace").splitlines()[-10:]
        raise WorkbenchError(f"layer {layer.name}: apt-get failed (exit {proc.returncode}):\n" + "\n".join(tail))
    (upper / ".workbench-complete").write_text(json.dumps(asdict(layer)))
    shutil.rmtree(target, ignore_errors=True)
    upper.rename(target)
    shutil.rmtree(tmp, ignore_errors=True)
    progress(f"layer {layer.name} ready in {time.monotonic() - started:.0f} s: {target}")
    return target
