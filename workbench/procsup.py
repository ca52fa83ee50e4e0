"""A tiny service supervisor for hosts without systemd (standard library only).

Shipped to the host and run detached (``setsid``) by the process backend of
:mod:`workbench.services`; one supervisor per start.  It starts the service in
its own process group, writes every output line to ``<name>.log`` as JSON
(``{"t": epoch, "s": "out"|"err", "m": line, "inv": id}``; rotated by size),
keeps ``<name>.state.json`` up to date (``activating`` -> ``active`` ->
``inactive``/``failed`` with the exit code or signal), forwards a stop
(SIGTERM to the supervisor) to the whole group with a SIGKILL after
``timeout_stop_sec``, and enforces ``runtime_max_sec`` as a dead-man switch.

Usage: python3 procsup.py STATE_DIR NAME   (reads STATE_DIR/NAME.spec.json)
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

MAX_LOG_BYTES = 64 * 1024 * 1024
# systemd's catalog ids for the same events, so readers treat both backends alike
MSG_STARTED = "39f53479d3a045ac8e11786248231fbf"
MSG_PROCESS_EXIT = "98e322203f7a4ed290d09fe03c09fe15"
MSG_FAILED = "d9b373ed55a64feb8242e02dbe79a49c"
KEEP_ROTATED = 3


def _write_json(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


class Log:
    def __init__(self, path, invocation):
        self.path = path
        self.inv = invocation
        self.lock = threading.Lock()
        self.fh = open(path, "a", encoding="utf-8")

    def write(self, stream, line, **extra):
        rec = json.dumps({"t": time.time(), "s": stream, "m": line, "inv": self.inv, **extra}, ensure_ascii=False)
        with self.lock:
            self.fh.write(rec + "\n")
            self.fh.flush()
            if self.fh.tell() > MAX_LOG_BYTES:
                self.fh.close()
                for i in range(KEEP_ROTATED - 1, 0, -1):
                    if os.path.exists(f"{self.path}.{i}"):
                        os.replace(f"{self.path}.{i}", f"{self.path}.{i + 1}")
                os.replace(self.path, f"{self.path}.1")
                self.fh = open(self.path, "a", encoding="utf-8")


def _pump(pipe, log, stream):
    for raw in iter(pipe.readline, b""):
        log.write(stream, raw.decode("utf-8", "replace").rstrip("\n"))
    pipe.close()


def main(state_dir, name):
    spec = json.load(open(os.path.join(state_dir, f"{name}.spec.json")))
    state_path = os.path.join(state_dir, f"{name}.state.json")
    inv = spec["invocation"]
    state = {"invocation": inv, "state": "activating", "supervisor_pid": os.getpid(), "main_pid": 0,
             "started": time.time(), "exit_code": None, "exit_signal": None, "result": ""}
    log = Log(os.path.join(state_dir, f"{name}.log"), inv)
    env = dict(os.environ)
    env.update(spec.get("env") or {})
    for key in spec.get("unset_env") or []:
        env.pop(key, None)
    try:
        child = subprocess.Popen(spec["argv"], cwd=spec.get("cwd") or "/", env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        log.write("err", f"{spec['argv'][0]}: {exc.strerror or exc}")
        state.update(state="failed", result="exec", exit_code=203, stopped=time.time())
        _write_json(state_path, state)
        log.write("sys", f"{name}: Failed to execute {spec['argv'][0]}: {exc.strerror or exc}", mid=MSG_FAILED)
        return 0
    state.update(state="active", main_pid=child.pid)
    _write_json(state_path, state)
    log.write("sys", f"Started {name}.", pid=child.pid, mid=MSG_STARTED)
    stopping = threading.Event()
    timeout_stop = float(spec.get("timeout_stop_sec") or 30)

    def stop(reason):
        if stopping.is_set():
            return
        stopping.set()
        state["result"] = reason
        try:
            os.killpg(child.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout_stop
        while child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=stop, args=("stopped",), daemon=True).start())
    max_sec = spec.get("runtime_max_sec")
    if max_sec:
        timer = threading.Timer(float(max_sec), stop, args=("timeout",))
        timer.daemon = True
        timer.start()
    pumps = [threading.Thread(target=_pump, args=(child.stdout, log, "out"), daemon=True),
             threading.Thread(target=_pump, args=(child.stderr, log, "err"), daemon=True)]
    for t in pumps:
        t.start()
    while True:
        try:
            rc = child.wait()
            break
        except InterruptedError:
            continue
    for t in pumps:
        t.join(5)
    if rc < 0:
        state.update(exit_signal=-rc, exit_code=None)
    else:
        state.update(exit_code=rc)
    if state["result"] == "stopped":
        state["state"] = "inactive"
    elif state["result"] == "timeout":
        state["state"] = "failed"
    elif rc == 0:
        state.update(state="inactive", result="success")
    else:
        state.update(state="failed", result="signal" if rc < 0 else "exit-code")
    state["stopped"] = time.time()
    _write_json(state_path, state)
    if rc < 0:
        how = f"code=killed, status={-rc}/{signal.Signals(-rc).name[3:]}"
    else:
        how = f"code=exited, status={rc}"
    log.write("sys", f"{name}: Main process exited, {how}", mid=MSG_PROCESS_EXIT, exit_code=rc)
    if state["state"] == "failed":
        log.write("sys", f"{name}: Failed with result '{state['result']}'.", mid=MSG_FAILED)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
