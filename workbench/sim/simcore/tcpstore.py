"""A TCP rendezvous store between the ranks of a multi-node server (torch's TCPStore, reduced).

Global rank 0 hosts the server at ``--dist-init-addr``; every rank (rank 0 included) connects as a
client, says hello with its world size and a digest of the flags all nodes must agree on, and then
meets the others in barriers.  The wire format is one JSON object per line.  A barrier completes
only when ``world`` ranks with one digest have joined it: ranks whose peers never arrive (a node
that died, or that runs with different flags) wait, and the caller's watchdog decides what then.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import defaultdict
from typing import Any


class StoreServer:
    """The store's listening side (one thread per client connection)."""

    def __init__(self, host: str, port: int, world: int) -> None:
        self.world = world
        self._cond = threading.Condition()
        self._hello: dict[int, tuple[int, str]] = {}
        self._arrived: dict[int, set[int]] = defaultdict(set)
        self._sock = socket.create_server((host, port), reuse_port=False)
        self.address = self._sock.getsockname()[:2]
        threading.Thread(target=self._accept, daemon=True, name="tcpstore").start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as f:
            for line in f:
                msg = json.loads(line)
                reply = self._handle(msg)
                if reply is None:
                    continue
                f.write(json.dumps(reply).encode() + b"\n")
                f.flush()

    def _handle(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        op = msg["op"]
        with self._cond:
            if op == "hello":
                self._hello[int(msg["rank"])] = (int(msg["world"]), str(msg["digest"]))
                self._cond.notify_all()
                return {"ok": True}
            if op == "count":
                return {"count": len(self._hello)}
            if op == "barrier":
                seq = int(msg["seq"])
                self._arrived[seq].add(int(msg["rank"]))
                self._cond.notify_all()
                self._cond.wait_for(lambda: self._complete(seq))
                return {"ok": True}
        if op == "watch":  # held open: the client sees EOF when this process dies
            threading.Event().wait()
        return {"error": f"unknown op {op!r}"}

    def _complete(self, seq: int) -> bool:
        if len(self._arrived[seq]) < self.world or len(self._hello) < self.world:
            return False
        return len({v for v in self._hello.values()}) == 1

    def close(self) -> None:
        self._sock.close()


class StoreClient:
    """One connection to the store (blocking calls; no call returns before the server answers)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._file = sock.makefile("rwb")

    def call(self, **msg: Any) -> dict[str, Any]:
        self._file.write(json.dumps(msg).encode() + b"\n")
        self._file.flush()
        line = self._file.readline()
        if not line:
            raise ConnectionResetError("the store closed the connection")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def wait_closed(self) -> None:
        """Block until the store's process goes away (EOF on a held ``watch`` call)."""
        self._file.write(b'{"op": "watch"}\n')
        self._file.flush()
        self._file.readline()

    def close(self) -> None:
        self._file.close()
        self._sock.close()


def try_connect(host: str, port: int, timeout: float) -> socket.socket | None:
    """Keep trying to connect for ``timeout`` seconds (refused or unreachable: retry), else None."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            sock = socket.create_connection((host, port), timeout=min(left, 2.0))
        except OSError:
            time.sleep(min(0.1, max(deadline - time.monotonic(), 0)))
            continue
        sock.settimeout(None)
        return sock
