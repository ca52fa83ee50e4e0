"""``up``, ``status`` and ``down`` of the testbed (nspawn backend; see :mod:`.local` for the other).

State lives in :func:`paths.state_dir`: ``state.json`` (what ``up`` started:
PIDs, namespaces, mounts), the client key, ``known_hosts`` and ``ssh_config``.
``up`` is idempotent and first clears whatever a crashed earlier run left;
``down`` stops exactly the processes ``up`` started (by PID, checked against
their command line) and removes every namespace, link and mount it made.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.errors import ConfigError, WorkbenchError
from workbench.inventory import write_entries
from workbench.testbed import net, nspawn, paths, rootfs, sshconf
from workbench.testbed.containers import ContainersProvisioner
from workbench.testbed.provision import PROVISIONERS, Provisioner
from workbench.testbed.slurm_hosts import SlurmProvisioner

PROVISIONERS.register("containers", ContainersProvisioner.prepare)
PROVISIONERS.register("slurm", SlurmProvisioner.prepare)

Progress = Callable[[str], None]
HOST_NAMES = [f"gpu-{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
DEFAULT_PROVISION = ("sim",)


@dataclass
class HostState:
    name: str
    address: str
    netns: str
    veth: str
    root: str
    upper: str
    work: str
    pid: int = 0
    log: str = ""


@dataclass
class State:
    backend: str
    hosts: list[HostState] = field(default_factory=list)
    subnet: str = net.DEFAULT_SUBNET
    rootfs: str = ""
    provision: list[str] = field(default_factory=list)
    started_at: float = 0.0

    @property
    def ssh_config(self) -> Path:
        return paths.state_dir() / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return paths.state_dir() / "known_hosts"

    @property
    def key(self) -> Path:
        return paths.state_dir() / "id_ed25519"


def _state_file() -> Path:
    return paths.state_dir() / "state.json"


# The nspawn testbed is one per machine (its bridge and namespace names are fixed):
# this file names the state directory of the one that runs.
OWNER_FILE = Path("/run/workbench-testbed.owner")
NSPAWN_MARKER = f"--network-namespace-path=/run/netns/{net.PREFIX}-"


def _check_owner() -> None:
    try:
        owner = OWNER_FILE.read_text().strip()
    except OSError:
        return
    if owner and owner != str(paths.state_dir()) and Path(owner, "state.json").exists():
        raise ConfigError(
            f"another testbed runs on this machine (state in {owner}); stop it with "
            f"`WORKBENCH_TESTBED_DIR={owner} workbench testbed down`, or use it by setting WORKBENCH_TESTBED_DIR"
        )


def _stray_nspawn() -> list[int]:
    """nspawn processes of a testbed (by our namespace naming) that no state file accounts for."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"systemd-nspawn") and any(a.startswith(NSPAWN_MARKER.encode()) for a in argv):
            pids.append(int(proc.name))
    return pids


def load() -> State | None:
    try:
        raw = json.loads(_state_file().read_text())
    except (OSError, ValueError):
        return None
    hosts = [HostState(**h) for h in raw.pop("hosts", [])]
    return State(hosts=hosts, **raw)


def _save(state: State) -> None:
    path = _state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2))
    tmp.replace(path)


def can_use_nspawn() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "not root"
    for tool in ("systemd-nspawn", "debootstrap", "ip", "ssh", "ssh-keygen"):
        if not shutil.which(tool):
            return False, f"{tool} not installed"
    return True, "root with systemd-nspawn"


# ---------------------------------------------------------------------------


LOCK_FILE = Path("/run/workbench-testbed.lock")


@contextlib.contextmanager
def _exclusive() -> Iterator[None]:
    """One ``up``/``down`` at a time on this machine: a second caller waits, then sees the result."""
    with open(LOCK_FILE, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def up(
    n_hosts: int = 2,
    *,
    provision: tuple[str, ...] = DEFAULT_PROVISION,
    subnet: str = net.DEFAULT_SUBNET,
    progress: Progress = print,
) -> State:
    """Bring ``n_hosts`` hosts up (idempotent: running hosts that match are kept)."""
    with _exclusive():
        return _up(n_hosts, provision=provision, subnet=subnet, progress=progress)


def down(*, progress: Progress = print) -> list[str]:
    """Stop every host ``up`` started and remove every trace; return what was removed."""
    with _exclusive():
        return _down(progress=progress)


def _up(
    n_hosts: int = 2,
    *,
    provision: tuple[str, ...] = DEFAULT_PROVISION,
    subnet: str = net.DEFAULT_SUBNET,
    progress: Progress = print,
) -> State:
    """Bring ``n_hosts`` hosts up (idempotent: running hosts that match are kept)."""
    if not 1 <= n_hosts <= len(HOST_NAMES):
        raise ConfigError(f"--hosts must be between 1 and {len(HOST_NAMES)}")
    ok, why = can_use_nspawn()
    if not ok:
        raise ConfigError(f"the nspawn testbed needs root and systemd-nspawn ({why}); use --backend local")
    provisioners = PROVISIONERS.make(list(provision))
    n_hosts = max([n_hosts] + [HOST_NAMES.index(h) + 1 for p in provisioners for h in _own_hosts(p)])
    _check_owner()
    current = load()
    if current and current.backend == "nspawn" and _healthy(current) and set(provisioned(current)) <= set(provision) \
            and set(provision) != set(provisioned(current)) and _only_new_hosts(current, provisioners, provision):
        return _add_hosts(current, n_hosts, provision, provisioners, progress)
    if current and current.backend == "nspawn" and _healthy(current) and len(current.hosts) >= n_hosts \
            and set(provision) <= set(provisioned(current)):
        provisioners = PROVISIONERS.make(provisioned(current))
        for p in provisioners:  # refresh provisioned files in the running hosts
            for h in current.hosts:
                p.install(Path(h.root), h.name)
        for h in current.hosts:  # let systemd see refreshed unit files (no pending reload left behind)
            subprocess.run(["ssh", "-F", str(current.ssh_config), h.name, "systemctl", "daemon-reload"],
                           capture_output=True, timeout=60)
        _write_inventory(current, provisioners)
        progress(f"testbed already up: {', '.join(h.name for h in current.hosts)}")
        return current
    if current or _leftovers():
        progress("clearing a previous testbed first")
        _down(progress=progress)

    base = rootfs.build(progress=progress)
    sd = paths.state_dir()
    sd.mkdir(parents=True, exist_ok=True)
    adding = [p.name for p in provisioners if _own_hosts(p)]
    state = State(backend="nspawn", subnet=subnet, rootfs=str(base), provision=[p for p in provision if p not in adding],
                  started_at=time.time())
    _save_extra(adding)
    sshconf.ensure_client_key(state.key)
    OWNER_FILE.write_text(str(sd) + "\n")
    _save(state)  # from here on, a crash leaves a record that the next up/down clears
    for cmd in net.bridge_up(subnet):
        nspawn.run(cmd)
    hosts = []
    for i in range(n_hosts):
        hn = net.host_net(HOST_NAMES[i], i, subnet)
        hdir = sd / "hosts" / hn.name
        hosts.append(HostState(name=hn.name, address=hn.address, netns=hn.netns, veth=hn.veth,
                               root=str(hdir / "root"), upper=str(hdir / "upper"), work=str(hdir / "work"),
                               log=str(hdir / "nspawn.log")))
    state.hosts = hosts
    _save(state)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=n_hosts) as pool:
        pids = list(pool.map(lambda h: _boot_host(h, state, provisioners, subnet), hosts))
    for h, pid in zip(hosts, pids, strict=True):
        h.pid = pid
    _save(state)
    _write_ssh(state)
    for h in hosts:
        _wait_ssh(h.name, state.ssh_config)
    _after_boot(state, hosts, provisioners)
    _write_inventory(state, provisioners)
    progress(f"testbed up: {n_hosts} host(s) booted in {time.monotonic() - started:.1f} s; "
             f"ssh -F {state.ssh_config} {hosts[0].name}")
    return state


def _extra_file() -> Path:
    return paths.state_dir() / "provision-extra.json"


def _save_extra(names: list[str]) -> None:
    """Provisioners that added hosts to a running testbed.  Kept apart from ``state.json``'s
    ``provision``, so that a tree which does not know them still reads the state (and keeps its
    hosts) instead of refusing an unknown provisioner."""
    _extra_file().write_text(json.dumps(names))


def provisioned(state: State) -> list[str]:
    """Every provisioner of the running testbed: those it was brought up with, then those that added hosts."""
    try:
        extra = [str(n) for n in json.loads(_extra_file().read_text())]
    except (OSError, ValueError):
        extra = []
    return list(dict.fromkeys([*state.provision, *extra]))


def _own_hosts(p: Provisioner) -> tuple[str, ...]:
    """The hosts a provisioner brings (``containers``: gpu-c); empty for one that goes on every host."""
    return tuple(getattr(p, "hosts", ()))


def _only_new_hosts(current: State, provisioners: list[Provisioner], provision: tuple[str, ...]) -> bool:
    """Whether the provisioners ``current`` lacks touch only hosts it does not have (then those hosts
    can join the running testbed without restarting anyone else's)."""
    names = {h.name for h in current.hosts}
    added = [p for p in provisioners if p.name not in provisioned(current)]
    return bool(added) and all(_own_hosts(p) and not set(_own_hosts(p)) & names for p in added)


def _add_hosts(current: State, n_hosts: int, provision: tuple[str, ...], provisioners: list[Provisioner],
               progress: Progress) -> State:
    """Boot the hosts ``current`` lacks (up to ``n_hosts``) beside the running ones."""
    sd = paths.state_dir()
    new = []
    for i in range(len(current.hosts), n_hosts):
        hn = net.host_net(HOST_NAMES[i], i, current.subnet)
        hdir = sd / "hosts" / hn.name
        new.append(HostState(name=hn.name, address=hn.address, netns=hn.netns, veth=hn.veth,
                             root=str(hdir / "root"), upper=str(hdir / "upper"), work=str(hdir / "work"),
                             log=str(hdir / "nspawn.log")))
    current.hosts += new
    before = _extra_file().read_text() if _extra_file().is_file() else None  # put back if the new hosts fail
    _save_extra([p for p in provision if p not in current.provision])
    started = time.monotonic()
    try:
        for h in new:
            h.pid = _boot_host(h, current, provisioners, current.subnet)
        _write_ssh(current)
        for h in new:
            _wait_ssh(h.name, current.ssh_config)
        _after_boot(current, new, provisioners)
    except BaseException:
        # The running testbed stays as it was: a half-booted host must not make it look unhealthy.
        for h in new:
            if h.pid:
                nspawn.stop(h.pid, argv_marker=f"--directory={h.root}")
            nspawn.umount(Path(h.root))
            for cmd in net.host_down(net.host_net(h.name, HOST_NAMES.index(h.name), current.subnet)):
                nspawn.run(cmd, check=False)
        current.hosts = [h for h in current.hosts if h not in new]
        _write_ssh(current)
        if before is None:
            _extra_file().unlink(missing_ok=True)
        else:  # the provisioners that added hosts before this attempt stay recorded
            _extra_file().write_text(before)
        raise
    _save(current)
    _write_inventory(current, provisioners)
    progress(f"testbed: {', '.join(h.name for h in new)} joined in {time.monotonic() - started:.1f} s")
    return current


def _after_boot(state: State, hosts: list[HostState], provisioners: list[Provisioner]) -> None:
    """Commands provisioners run on a host once it answers over SSH (the containers' baseline start)."""
    for h in hosts:
        for p in provisioners:
            argv = getattr(p, "after_boot", lambda _n: None)(h.name)
            if argv:
                proc = subprocess.run(["ssh", "-F", str(state.ssh_config), h.name, "--", *argv], capture_output=True,
                                      text=True, timeout=120)
                if proc.returncode != 0:
                    raise WorkbenchError(f"{h.name}: {p.name}: {' '.join(argv)} failed: {proc.stderr.strip()[-300:]}")


def _write_ssh(state: State) -> None:
    entries = [(h.address, key) for h in state.hosts for key in sshconf.host_public_keys(Path(h.root))]
    state.known_hosts.write_text(sshconf.render_known_hosts(entries))
    state.ssh_config.write_text(sshconf.render_ssh_config([(h.name, h.address) for h in state.hosts],
                                                          key=state.key, known_hosts=state.known_hosts))


def _write_inventory(state: State, provisioners: list[Provisioner]) -> None:
    """Announce the hosts to :mod:`workbench.inventory` (aliases of our ssh_config, their backends)."""
    hosts = {}
    for h in state.hosts:
        backends = ["systemd"] + [b for p in provisioners for b in getattr(p, "backends", lambda _n: [])(h.name)]
        hosts[h.name] = {"transport": "ssh", "backends": backends}
    write_entries(paths.inventory_file(), hosts=hosts, source="testbed", ssh_config=str(state.ssh_config),
                  groups={"testbed": [h.name for h in state.hosts]}, extra={"backend": "nspawn"})


def _boot_host(h: HostState, state: State, provisioners: list[Provisioner], subnet: str) -> int:
    hn = net.host_net(h.name, HOST_NAMES.index(h.name), subnet)
    for cmd in net.host_up(hn):
        nspawn.run(cmd)
    root = Path(h.root)
    layers = [lw for p in provisioners if (lw := getattr(p, "lower", lambda _n: None)(h.name))]
    nspawn.mount_overlay(Path(":".join([*layers, state.rootfs])), Path(h.upper), Path(h.work), root)
    (root / "etc/hostname").write_text(h.name + "\n")
    (root / "etc/machine-id").write_text(uuid.uuid4().hex + "\n")
    (root / "etc/hosts").write_text(f"127.0.0.1 localhost\n127.0.1.1 {h.name}\n")
    sshconf.generate_host_keys(root)
    auth = root / "root/.ssh/authorized_keys"
    auth.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    auth.write_text(state.key.with_suffix(".pub").read_text())
    auth.chmod(0o600)
    binds: list[tuple[str, str]] = []
    for p in provisioners:
        p.install(root, h.name)
        binds.extend(p.binds())
    extra = [a for p in provisioners for a in getattr(p, "nspawn_args", lambda _n: [])(h.name)]
    env = {k: v for p in provisioners for k, v in getattr(p, "nspawn_env", lambda _n: {})(h.name).items()}
    argv = nspawn.nspawn_argv(h.name, root, h.netns, binds, extra)
    return nspawn.boot(argv, Path(h.log), env=env)


def _wait_ssh(alias: str, config: Path, timeout: float = 60.0) -> None:
    """Block until ``systemctl is-system-running --wait`` answers over SSH by alias."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(["ssh", "-F", str(config), alias, "systemctl", "is-system-running", "--wait"],
                              capture_output=True, text=True, timeout=timeout)
        last = (proc.stdout + proc.stderr).strip()
        if proc.stdout.strip() in ("running", "degraded"):
            return
        if "Connection refused" not in last and proc.returncode == 255:
            break
        time.sleep(0.2)  # sshd accepts a moment after READY=1; nothing to wait on from here
    raise WorkbenchError(f"{alias}: not reachable over SSH after boot: {last}")


def _healthy(state: State) -> bool:
    return all(h.pid and nspawn.is_ours(h.pid, f"--directory={h.root}") for h in state.hosts)


def _leftovers() -> list[str]:
    found = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [line.split()[0] for line in netns.splitlines() if line.startswith(f"{net.PREFIX}-")]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    found += [m for m in re.findall(r"^\d+: ([^:@]+)", links, re.M) if re.fullmatch(r"wb\d+h|wbbr0", m)]
    sd = str(paths.state_dir())
    found += [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
              if line.split()[1].startswith(sd)]
    found += [f"pid:{pid}" for pid in _stray_nspawn()]
    return found


def _other_owner() -> str | None:
    """The state directory of a testbed that runs from elsewhere (not ours to touch), if any."""
    try:
        owner = OWNER_FILE.read_text().strip()
    except OSError:
        return None
    if owner and owner != str(paths.state_dir()) and Path(owner, "state.json").exists():
        return owner
    return None


def _down(*, progress: Progress = print) -> list[str]:
    """Stop every host ``up`` started and remove every trace; return what was removed.

    Leftovers found by name (namespaces, links, stray nspawn processes) are removed only
    when no other state directory owns the running testbed.
    """
    state = load()
    removed: list[str] = []
    other = _other_owner()
    if other and not state:
        progress(f"testbed down: nothing of ours here; the running testbed belongs to {other}")
        return removed
    if state:
        for h in state.hosts:
            if h.pid and nspawn.stop(h.pid, argv_marker=f"--directory={h.root}"):
                removed.append(f"nspawn pid {h.pid} ({h.name})")
            nspawn.umount(Path(h.root))
    # Mounts, namespaces and links by name: also catches what a crashed run never recorded.
    sd = paths.state_dir()
    for mnt in sorted((line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                       if line.split()[1].startswith(str(sd))), reverse=True):
        nspawn.umount(Path(mnt))
        removed.append(f"mount {mnt}")
    for name in sorted(_leftovers(), key=lambda n: not n.startswith("pid:")):  # processes first
        if name.startswith("pid:"):
            pid = int(name[4:])
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if Path(f"/proc/{pid}").exists() else []
            marker = next((a.decode() for a in argv if a.startswith(b"--directory=")), "")
            if marker and nspawn.stop(pid, argv_marker=marker):
                removed.append(f"stray nspawn pid {pid}")
            continue
        if name.startswith(f"{net.PREFIX}-"):
            nspawn.run(["ip", "netns", "del", name], check=False)
            removed.append(f"netns {name}")
        elif not name.startswith("/"):
            nspawn.run(["ip", "link", "del", name], check=False)
            removed.append(f"link {name}")
    hosts_dir = sd / "hosts"
    if hosts_dir.exists():
        shutil.rmtree(hosts_dir)
    for name in ("state.json", "ssh_config", "known_hosts", "provision-extra.json", "slurm.json"):
        (sd / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError, ValueError):
        if json.loads(paths.inventory_file().read_text()).get("backend") == "nspawn":
            paths.inventory_file().unlink()
    OWNER_FILE.unlink(missing_ok=True)
    for h in state.hosts if state else []:
        shutil.rmtree(f"/run/systemd/nspawn/propagate/{h.name}", ignore_errors=True)
    progress("testbed down" + (f": removed {len(removed)} item(s)" if removed else ": nothing was running"))
    return removed


def status() -> dict[str, object]:
    state = load()
    if not state:
        return {"running": False, "leftovers": _leftovers()}
    hosts = []
    for h in state.hosts:
        alive = bool(h.pid) and nspawn.is_ours(h.pid, f"--directory={h.root}")
        hosts.append({"name": h.name, "pid": h.pid, "alive": alive})
    return {"running": all(h["alive"] for h in hosts), "backend": state.backend, "hosts": hosts,
            "ssh_config": str(state.ssh_config), "provision": provisioned(state)}
