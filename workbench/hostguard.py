"""The host side of the guard: puts the host back when its session's controller is gone (stdlib only).

Shipped to the host and started detached by :mod:`workbench.guard` (a transient systemd unit,
or ``setsid`` where there is no systemd) before a session's first change.  It watches two things:

* the session's lock: the controller holds ``flock`` on the host over an SSH channel, and the
  kernel frees it when that channel ends (controller killed, crashed, its link closed).  The
  guard takes the lock the moment it is free;
* the heartbeat: the controller refreshes ``--beat`` every few seconds (a byte appended by the
  lock holder for each line the controller sends it).  When it is older than ``--stale`` seconds
  (network partition, power loss, sshd stopped) the guard ends the session's lock holder (the
  reader under ``flock``: the PID the lock recorded) and takes the lock.

Holding the lock, it reads the session record again and runs the record's own ``undo`` steps,
the ones the controller's restore runs (:func:`workbench.session.undo_steps`, built by the
service backend): remove every variant, then put each base unit back in its recorded run
state -- unless a base unit's files changed since they were recorded (not ours to guess:
the record stays, marked, for ``workbench restore HOST --accept-current``).  It checks the
result, removes the record when the host is as found, and logs every step (to the journal
under systemd, to ``--log`` otherwise).

A session that ends normally stops the guard (SIGTERM) after its own restore; a guard that
finds no record, or the record of another session, exits without doing anything.

Before it restores it fences the session off (:func:`fence`, :mod:`workbench.inflight`): it marks
the record, then waits for the session's commands still running on the host (at most
``--fence-wait`` seconds, then it ends their process groups), and no later one runs -- a command
in flight when the controller died (the variant's install) cannot land after the restore.

Usage: python3 hostguard.py --id ID --record PATH --beat PATH --lock PATH --owner PATH --inflight PATH
       [--stale S] [--fence-wait S]
       python3 - --fence --id ID --record PATH --inflight PATH --by WHO   (the fence alone, script on
       stdin: a controller-side restore of a dead session; prints one JSON line)
"""

import argparse
import fcntl
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

NEW_INVOCATION = "@@NEW_INVOCATION@@"
POLL_S = 0.5
MARK = "fenced_by"  # workbench.inflight.MARK


def log(msg):
    print(f"workbench-guard: {msg}", flush=True)


def load(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def write_json(path, data):
    os.replace(_write_tmp(path, data), path)


def _write_tmp(path, data):
    tmp = f"{path}.guard{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1)
    os.chmod(tmp, 0o600)
    return tmp


def _identity(path):
    """Which file ``path`` is now (device, inode), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def sha256(path):
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def container_id(where):
    """The id of the container ``container:RUNTIME:NAME`` names, or None when there is none."""
    _, runtime, name = where.split(":", 2)
    try:
        proc = subprocess.run([runtime, "container", "inspect", "--format", "{{.Id}}", "--", name],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None  # (stderr may hold the runtime's warnings)


def files_changed(snap):
    """What of a recorded unit's definition differs now: its files' contents (the recorded paths
    only), a container's id."""
    return [p for p, digest in sorted(snap.get("files", {}).items())
            if (container_id(p) if p.startswith("container:") else sha256(p)) != digest]


def run(argv, timeout=150):
    argv = [uuid.uuid4().hex if a == NEW_INVOCATION else a for a in argv]
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"ran past {timeout} s"
    except OSError as exc:
        return 127, str(exc)
    return proc.returncode, (proc.stderr or proc.stdout).strip()[-300:]


def holder_pid(owner_path, expected, lock):
    """The host PID holding the session's lock, if the owner file still names our session's holder:
    the lock script's reader (a subshell whose command line names the lock file)."""
    owner = load(owner_path) or {}
    pid = owner.get("host_pid")
    if not pid or pid != expected:
        return None
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as fh:
            cmd = fh.read().split(b"\0")
    except OSError:
        return None
    return int(pid) if os.fsencode(lock) in cmd[1:] else None


def _same_file(fd, path):
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def take_lock(path, wait):
    """flock ``path`` exclusively within ``wait`` s; the fd, or None.  A holder removes the file as it
    lets go (workbench.lock): a lock on a file that is no longer at ``path`` is dropped and retried."""
    deadline = time.monotonic() + wait
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _same_file(fd, path):
                return fd
        except BlockingIOError:
            pass
        os.close(fd)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def lock_holders(path):
    """PIDs holding a flock on ``path`` (from /proc/locks, by device and inode)."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    for line in lines:
        f = line.split()
        if "->" in f:  # a waiter, not a holder
            continue
        if len(f) >= 6 and f[1] == "FLOCK" and f[5] == want and f[4].isdigit() and int(f[4]) > 0:
            pids.append(int(f[4]))
    return sorted(set(pids))


def end_groups(pids):
    """End the process groups of ``pids`` (a fenced command: ``timeout``'s group, or the run's own
    session): TERM, then KILL what is left after 2 s.  Never our own group."""
    mine = os.getpgid(0)
    groups = set()
    for pid in pids:
        try:
            g = os.getpgid(pid)
        except OSError:
            continue
        if g > 1 and g != mine:
            groups.add(g)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for g in groups:
            try:
                os.killpg(g, sig)
            except OSError:
                pass
        if sig == signal.SIGTERM and groups:
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline and any(_group_alive(g) for g in groups):
                time.sleep(0.05)
    return sorted(groups)


def _group_alive(group):
    try:
        os.killpg(group, 0)
        return True
    except OSError:
        return False


def mark(record_path, session_id, by, why=""):
    """Mark the session's record as fenced (atomically), with who fenced it and why (its controller,
    if alive after all, reads them); the record, or None when it is not the session's."""
    # Written back only over the file it read: a command in flight that removes the record (its
    # controller's own restore, finishing) or writes it anew may land between the read and the write.
    # A guard that wrote back a record its controller had just removed left it behind, the host
    # otherwise as found: the likely cause of a drill that failed once on a loaded CI machine.
    for _ in range(10):
        read = _identity(record_path)
        record = load(record_path)
        if read is None or record is None or record.get("id") != session_id:
            return None
        record[MARK] = {"by": by, "at": time.time(), "why": why}
        tmp = _write_tmp(record_path, record)
        now = _identity(record_path)
        if now == read:
            os.replace(tmp, record_path)
            return record
        os.unlink(tmp)
        if now is None:
            return None  # removed meanwhile: not written back
    return None


def fence(record_path, inflight, session_id, by, wait, why=""):
    """Fence a dead session off: mark its record, wait for its in-flight commands (``wait`` s, then
    end them), so none runs any more.  Returns (the lock's fd or None, what it did)."""
    started = time.monotonic()
    if mark(record_path, session_id, by, why) is None:
        return None, {"fenced": False, "why": "no record of this session"}
    fd = take_lock(inflight, wait)
    ended = []
    if fd is None:
        ended = end_groups(lock_holders(inflight))
        fd = take_lock(inflight, 10.0)
    if ended:  # a command KILLed mid-way ran no trap: its scratch dirs (the place script's) go with it
        for left in glob.glob(os.path.join(os.path.dirname(inflight), "verify.*")):
            shutil.rmtree(left, ignore_errors=True)
    # A record write in flight may have replaced the marked record: mark the final one again.
    mark(record_path, session_id, by, why)
    try:
        os.unlink(inflight)  # we hold it: a later command opens a new file and finds the mark
    except OSError:
        pass
    return fd, {"fenced": fd is not None, "waited": round(time.monotonic() - started, 2), "ended_groups": ended}


def wait_state(argv, want_running, seconds=30.0):
    deadline = time.monotonic() + seconds
    while True:
        running = run(argv, timeout=30)[0] == 0
        if running == want_running or time.monotonic() >= deadline:
            return running
        time.sleep(0.5)


def restore(args, record, why):
    """Run the record's undo steps; True when the host is as found (the record is then removed)."""
    started = time.monotonic()
    log(f"session {args.id} lost its controller ({why}); restoring from {args.record}")
    snaps = record.get("snapshots", {})
    stale = {unit: files_changed(s) for unit, s in snaps.items()}
    stale = {u: paths for u, paths in stale.items() if paths}
    actions, problems = [], []
    for step in record.get("undo", []):
        unit = step["unit"]
        if step["do"] in ("start", "stop") and unit in stale:
            problems.append(f"{unit}: unit files changed since the record ({', '.join(stale[unit])}); "
                            f"left as it is (workbench restore HOST --accept-current)")
            continue
        rc, out = run(step["argv"])
        actions.append(f"{step['do']} {unit}: " + ("ok" if rc == 0 else f"exit {rc}: {out}"))
        log(actions[-1])
        if step["do"] == "remove" and rc == 0:
            record["created"] = [n for n in record.get("created", []) if n != unit]
    for step in record.get("undo", []):
        if step["do"] in ("start", "stop") and step["unit"] not in stale and step.get("check"):
            want = step["do"] == "start"
            if wait_state(step["check"], want) != want:
                problems.append(f"{step['unit']}: not {'running' if want else 'stopped'} after the restore")
    seconds = time.monotonic() - started
    record["guard"] = dict(record.get("guard", {}), fired=time.time(), why=why, actions=actions,
                           problems=problems, seconds=round(seconds, 2))
    if problems:
        write_json(args.record, record)
        for p in problems:
            log(f"NOT restored: {p}")
        return False
    os.unlink(args.record)
    log(f"host restored in {seconds:.1f} s")
    return True


# Set once the guard decided to restore (a disarm then waits for the restore), and when a disarm came.
_STATE = {"taking_over": False, "disarmed": False}


def _on_term(*_):
    """A session that ended normally stops its guard; one that is already restoring finishes first.
    (A controller that restored itself through a new connection while its old one was frozen
    disarms the guard that took over at the same moment: ending that guard halfway, after it
    fenced the session, would leave the host to nobody.)"""
    if _STATE["taking_over"]:
        _STATE["disarmed"] = True
        log("asked to stop while restoring: finishing the restore first")
        return
    sys.exit(0)


def _taking_over(yes):
    _STATE["taking_over"] = yes
    if not yes and _STATE["disarmed"]:
        sys.exit(0)


def main(argv=None):
    p = argparse.ArgumentParser(prog="hostguard")
    for name in ("--id", "--record", "--inflight"):
        p.add_argument(name, required=True)
    for name in ("--beat", "--lock", "--owner"):
        p.add_argument(name)
    p.add_argument("--stale", type=float, default=20.0)
    p.add_argument("--fence-wait", type=float, default=5.0)
    p.add_argument("--fence", action="store_true", help="fence the session off and exit (no restore)")
    p.add_argument("--by", default="a restore")
    p.add_argument("--why", default="")
    args = p.parse_args(argv)
    if args.fence:
        fd, what = fence(args.record, args.inflight, args.id, args.by, args.fence_wait, args.why)
        print(json.dumps(what), flush=True)
        return 0 if what["fenced"] or what.get("why") else 1
    if not (args.beat and args.lock and args.owner):
        p.error("--beat, --lock and --owner are needed to guard a session")
    signal.signal(signal.SIGTERM, _on_term)  # disarmed by a session that ended normally
    record = load(args.record)
    if record is None or record.get("id") != args.id:
        log(f"no record of session {args.id}: nothing to guard")
        return 0
    holder = (record.get("owner") or {}).get("host_pid")
    log(f"armed for session {args.id} (lock holder pid {holder}, heartbeat stale after {args.stale:g} s)")
    while True:
        time.sleep(POLL_S)
        current = load(args.record)
        if current is None or current.get("id") != args.id:
            log("the session's record is gone (restored by its controller or a later session): nothing to do")
            return 0
        fd = take_lock(args.lock, 0)
        why = "its lock was released without a restore" if fd is not None else ""
        if fd is None:
            try:
                age = time.time() - os.stat(args.beat).st_mtime
            except OSError:
                age = float("inf")
            if age <= args.stale:
                continue
            why = f"no heartbeat for {age:.0f} s" if age != float("inf") else "its heartbeat file is gone"
            _taking_over(True)  # from here a SIGTERM waits for the restore (see _on_term)
            pid = holder_pid(args.owner, holder, args.lock)
            if pid:
                os.kill(pid, signal.SIGTERM)  # the holder's reader: flock then exits and frees the lock
            fd = take_lock(args.lock, 10.0)
            if fd is None:
                _taking_over(False)
                continue  # another session holds the lock now: it restores (or it is ours again)
        else:
            _taking_over(True)
        record = load(args.record)
        if record is None or record.get("id") != args.id:
            log("the session's record is gone (restored by its controller or a later session): nothing to do")
            leave(args)  # the lock is ours now: leave it, and our files, as a holder does
            return 0
        write_json(args.owner, {"purpose": f"guard restoring session {args.id}", "pid": os.getpid(),
                                "since": time.strftime("%Y-%m-%d %H:%M:%S %Z")})
        try:
            _fd, what = fence(args.record, args.inflight, args.id, f"guard {os.getpid()}", args.fence_wait, why)
            log(f"fenced the session's commands off: {json.dumps(what)}")
            record = load(args.record)  # as the last in-flight command left it
            if record is None or record.get("id") != args.id:
                log("the session's record is gone: nothing to do")
                return 0
            ok = restore(args, record, why)
        finally:
            try:
                os.unlink(args.owner)
            except OSError:
                pass
            leave(args)
        return 0 if ok else 1


def leave(args) -> None:
    """Remove the guard's files and the session lock (held by us), and the state dir when empty."""
    me = os.path.abspath(__file__)  # shipped next to the record: nothing of the guard stays behind
    ours = os.path.dirname(me) == os.path.dirname(os.path.abspath(args.record))
    for path in (args.beat, me, args.lock) if ours else (args.beat, args.lock):
        try:
            os.unlink(path)  # the session lock too: still ours (fd held), as a holder leaves it
        except OSError:
            pass
    try:
        os.rmdir(os.path.dirname(os.path.abspath(args.record)))  # only when empty
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
