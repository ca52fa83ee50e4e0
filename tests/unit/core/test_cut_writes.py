"""A writer that dies while it sends a file (a killed controller: its SSH channel closes) ends the
remote command's stdin early, and ``cat`` reads that end as the end of the input. The host's file
must then stay as it was: the fresh run's kill drill found a session record emptied this way, which
left the host unrestorable ("unreadable session record").

Real ``sh`` and real files: the commands are the ones the hosts run, fed by a pipe that is closed
half-way, as a channel is."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from workbench.hosts import LocalHost, _put_command
from workbench.services import systemd as systemd_mod

RECORD = b'{"id": "c810b037", "created": ["sglang-k26-ddtree-wb-2ea552d40e.service"]}\n' * 4


def cut_send(argv: list[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` and send half of ``data`` before its stdin closes (the sender died)."""
    read, write = os.pipe()
    with subprocess.Popen(argv, stdin=read, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        os.close(read)
        os.write(write, data[: len(data) // 2])
        os.close(write)
        out, err = p.communicate(timeout=30)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def test_a_put_cut_short_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    host = LocalHost()
    path = tmp_path / "run" / "session.json"
    host.put(RECORD, str(path), 0o600)
    assert path.read_bytes() == RECORD and (path.stat().st_mode & 0o777) == 0o600
    res = cut_send(_put_command(str(path), 0o600, len(RECORD) + 10), RECORD + b"x" * 10)
    assert res.returncode == 75, res
    assert f"{len(RECORD) // 2 + 5} of {len(RECORD) + 10} bytes came".encode() in res.stderr
    assert path.read_bytes() == RECORD  # the good record, not the cut one
    assert sorted(p.name for p in path.parent.iterdir()) == ["session.json"]  # no temp file left


def test_a_whole_put_replaces_the_file_counting_bytes(tmp_path: Path) -> None:
    # the count is of bytes: a text with multi-byte characters is whole when all its bytes came
    data = "Description=K2.6 TP8 · DDTree — 8×B300\n".encode()
    assert len(data) > len(data.decode())
    path = tmp_path / "unit.service"
    path.write_bytes(b"old\n")
    LocalHost().put(data, str(path))
    assert path.read_bytes() == data


def test_put_of_an_empty_file_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    LocalHost().put(b"", str(path))
    assert path.read_bytes() == b""


@pytest.mark.skipif(os.geteuid() != 0, reason="the place script keeps its copy in /run/workbench")
def test_a_unit_text_cut_short_is_never_verified_or_placed(tmp_path: Path) -> None:
    text = (b"[Unit]\nDescription=variant\n[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server "
            b"--tp-size 8 --ep-size 8\n")
    dst = tmp_path / "sglang-k26-ddtree-wb-1.service"
    argv = ["sh", "-c", systemd_mod._PLACE_SCRIPT, "place", dst.name, str(dst), "install", "", str(len(text))]
    res = cut_send(argv, text)
    assert res.returncode == 22 and res.stdout.decode().splitlines()[0] == "@@cut", res
    assert not dst.exists()
