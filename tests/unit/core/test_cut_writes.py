"""A sender that dies while it feeds a command's stdin (a killed controller: its SSH channel closes)
ends that stdin early, and every reader takes the early end for the end of its input: ``cat`` renames
a cut file into place (the fresh run's kill drill found a session record emptied this way, which left
the host unrestorable), ``python3 -`` runs a script cut at a line, ``sbatch`` submits one. A host's
``run`` therefore starts a command fed on stdin only once all of its bytes came (``shell.whole_stdin``).

Real ``sh``, ``python3`` and files: the commands are the ones a host runs for ``run(..., input=...)``,
fed by a pipe that is closed half-way, as a channel is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import shell
from workbench.hosts import LocalHost, _prepare_run, _put_command
from workbench.services import systemd as systemd_mod

RECORD = b'{"id": "c810b037", "created": ["sglang-k26-ddtree-wb-2ea552d40e.service"]}\n' * 4


def cut_send(argv: list[str], data: bytes, upto: int | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` and send ``data[:upto]`` (half of it by default) before its stdin closes (the sender died)."""
    read, write = os.pipe()
    with subprocess.Popen(argv, stdin=read, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        os.close(read)
        os.write(write, data[: len(data) // 2 if upto is None else upto])
        os.close(write)
        out, err = p.communicate(timeout=30)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def as_run(cmd: list[str], input: bytes, env: dict[str, str] | None = None) -> tuple[list[str], bytes]:
    """What ``LocalHost.run(cmd, input=input, env=env)`` starts, and all the bytes it sends."""
    text, data, _ = _prepare_run(cmd, input, env)
    assert data is not None
    return ["sh", "-c", text], data


def spooled(data: bytes) -> list[str]:
    """Spool files (``/dev/shm`` or the temp dir) still holding ``data``."""
    found = []
    for d in ("/dev/shm", os.environ.get("TMPDIR", "/tmp")):
        if os.path.isdir(d):
            for name in os.listdir(d):
                p = os.path.join(d, name)
                if name.startswith(".wb-in.") or name.startswith("tmp."):
                    try:
                        if Path(p).read_bytes() == data:
                            found.append(p)
                    except OSError:
                        pass
    return found


def test_a_put_cut_short_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    host = LocalHost()
    path = tmp_path / "run" / "session.json"
    host.put(RECORD, str(path), 0o600)
    assert path.read_bytes() == RECORD and (path.stat().st_mode & 0o777) == 0o600
    argv, data = as_run(_put_command(str(path), 0o600), RECORD + b"x" * 10)
    res = cut_send(argv, data)
    assert res.returncode == shell.CUT_INPUT_EXIT, res
    assert f"input cut: {len(data) // 2} of {len(data)} bytes came: the command was not run".encode() in res.stderr
    assert path.read_bytes() == RECORD  # the good record, not the cut one
    assert sorted(p.name for p in path.parent.iterdir()) == ["session.json"]  # no temp file left
    assert spooled(data[: len(data) // 2]) == []  # nor a spool


def test_without_the_count_the_same_cut_put_would_empty_the_record(tmp_path: Path) -> None:
    # the hazard is real: the put script alone, fed the cut input, replaces the good file
    path = tmp_path / "session.json"
    LocalHost().put(RECORD, str(path), 0o600)
    res = cut_send(_put_command(str(path), 0o600), RECORD, upto=0)
    assert res.returncode == 0 and path.read_bytes() == b""


def test_a_whole_input_reaches_the_command_byte_for_byte(tmp_path: Path) -> None:
    # the count is of bytes (multi-byte characters), NULs and a missing last newline kept
    data = "Description=K2.6 TP8 · DDTree — 8×B300\n".encode() + b"\0\x01tail-without-newline"
    out = tmp_path / "copy"
    res = LocalHost().run(["sh", "-c", 'cat >"$1"', "sh", str(out)], input=data, check=True)
    assert res.ok and out.read_bytes() == data
    assert res.command == shell.join(["sh", "-c", 'cat >"$1"', "sh", str(out)])  # shown as asked, unwrapped
    assert spooled(data) == []  # unlinked before the command ran


def test_a_whole_put_replaces_the_file_and_an_empty_put_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "unit.service"
    path.write_bytes(b"old\n")
    LocalHost().put("Description=8×B300\n".encode(), str(path))
    assert path.read_bytes() == "Description=8×B300\n".encode()
    LocalHost().put(b"", str(path))
    assert path.read_bytes() == b""


def test_a_script_cut_at_a_line_is_never_run(tmp_path: Path) -> None:
    # python3 - (the guard's fence script) or sbatch (a job script) read to EOF and run what came:
    # a cut at a line boundary is valid code that does half of the job
    marker, done = tmp_path / "first-half-ran", tmp_path / "second-half-ran"
    script = f"open({str(marker)!r}, 'w').write('x')\nopen({str(done)!r}, 'w').write('x')\n".encode()
    cut = script.index(b"\n") + 1
    plain = cut_send([sys.executable, "-"], script, upto=cut)
    assert plain.returncode == 0 and marker.exists() and not done.exists()  # unguarded: half ran
    marker.unlink()
    argv, data = as_run([sys.executable, "-"], script)
    res = cut_send(argv, data, upto=cut)
    assert res.returncode == shell.CUT_INPUT_EXIT and not marker.exists() and not done.exists(), res
    whole = cut_send(argv, data, upto=len(data))
    assert whole.returncode == 0 and marker.exists() and done.exists(), whole


def test_an_environment_cut_on_stdin_does_not_run_the_command(tmp_path: Path) -> None:
    # env travels on stdin ahead of the input: a cut there would run the command with some of it missing
    out = tmp_path / "env"
    argv, data = as_run(["sh", "-c", 'printf "%s|%s" "$A" "$B" >"$1"', "sh", str(out)], b"",
                        env={"A": "first", "B": "second"})
    res = cut_send(argv, data, upto=data.index(b"\n") + 1)  # A came, B did not
    assert res.returncode == shell.CUT_INPUT_EXIT and not out.exists(), res
    assert cut_send(argv, data, upto=len(data)).returncode == 0 and out.read_text() == "first|second"


@pytest.mark.skipif(os.geteuid() != 0, reason="the place script keeps its copy in /run/workbench")
def test_a_unit_text_cut_short_is_never_verified_or_placed(tmp_path: Path) -> None:
    text = (b"[Unit]\nDescription=variant\n[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server "
            b"--tp-size 8 --ep-size 8\n")
    dst = tmp_path / "sglang-k26-ddtree-wb-1.service"
    argv, data = as_run(["sh", "-c", systemd_mod._PLACE_SCRIPT, "place", dst.name, str(dst), "install", ""], text)
    res = cut_send(argv, data)
    assert res.returncode == shell.CUT_INPUT_EXIT and res.stdout == b"", res
    assert not dst.exists()


def test_an_input_that_cannot_be_kept_is_not_run_and_says_why(tmp_path: Path) -> None:
    # a spool that fails to write (a full /dev/shm in a small container) is not a cut: it says so
    out = tmp_path / "ran"
    text, data, _ = _prepare_run(["sh", "-c", 'cat >"$1"', "sh", str(out)], b"x" * 4096, None)
    full = tmp_path / "full"
    full.mkdir()
    (full / "mktemp").write_text(f'#!/bin/sh\necho {tmp_path}/gone/spool\n')  # a spool it cannot write
    (full / "mktemp").chmod(0o755)
    env = {**os.environ, "PATH": f"{full}:{os.environ['PATH']}"}
    res = subprocess.run(["sh", "-c", text], input=data, capture_output=True, env=env, timeout=30)
    assert res.returncode == shell.CUT_INPUT_EXIT and b"cannot keep the input" in res.stderr, res
    assert not out.exists()
