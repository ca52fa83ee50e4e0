"""Run a few commands on a host in one round trip and bring their output back byte-exact.

The host seam returns text, and journal export output is bytes (binary fields hold raw,
possibly invalid UTF-8, behind a binary length word), so each command's stdout goes
through ``gzip -1 | base64`` on the host (``compress=False``: base64 only).  Gzip
shrinks export output about 16x, which is what makes it worth its CPU on a slow link;
``bench/journal_throughput.py`` measures both ways.  Output layout, per section::

    <base64 of stdout>
    @@end NAME EXIT_STATUS
    @@err <each stderr line>
"""

from __future__ import annotations

import base64
import shlex
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.errors import CommandFailed, ParseError
from workbench.hosts import Host

__all__ = ["Section", "fetch", "script", "split_output"]

_PRELUDE = """\
e=$(mktemp) || exit 1
trap 'rm -f "$e" "$e.rc"' EXIT
sec() {
  name=$1; shift
  { "$@" 2>"$e"; echo $? >"$e.rc"; } | %s base64 -w 0
  printf '\\n@@end %%s %%s\\n' "$name" "$(cat "$e.rc")"
  sed 's/^/@@err /' "$e"
}
"""


@dataclass(frozen=True)
class Section:
    """One command's output: its stdout bytes, exit status and stderr text."""

    name: str
    data: bytes
    exited: int
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exited == 0


def script(commands: Sequence[tuple[str, Sequence[str]]], *, compress: bool = True) -> str:
    """The ``sh`` script that runs each (name, argv) and prints its sections."""
    lines = [_PRELUDE % ("gzip -1 |" if compress else "")]
    for name, argv in commands:
        if not name or any(c.isspace() for c in name):
            raise ValueError(f"section name must be one word: {name!r}")
        lines.append(f"sec {shlex.quote(name)} {shlex.join(argv)}")
    return "\n".join(lines) + "\n"


def split_output(text: str, *, compress: bool = True) -> list[Section]:
    """The sections of the script's output, decoded."""
    out: list[Section] = []
    data: str | None = None
    for line in text.split("\n"):
        if line.startswith("@@end "):
            _, name, status = [*line.split(" ", 2), ""][:3]
            raw = base64.b64decode(data or "")
            if compress and raw:
                raw = zlib.decompress(raw, 31)
            out.append(Section(name, raw, int(status) if status.strip().lstrip("-").isdigit() else -1, ""))
            data = None
        elif line.startswith("@@err "):
            if not out:
                raise ParseError("stderr before any section", source="journal fetch")
            last = out[-1]
            out[-1] = Section(last.name, last.data, last.exited, last.stderr + line[6:] + "\n")
        elif line:
            if data is not None:
                raise ParseError("two data lines in one section", source="journal fetch")
            data = line
    return out


def fetch(host: Host, commands: Sequence[tuple[str, Sequence[str]]], *, timeout: float = 600.0,
          compress: bool = True) -> dict[str, Section]:
    """Run the commands on ``host`` in one ``sh`` (one round trip); their sections by name."""
    res = host.run(["sh", "-c", script(commands, compress=compress)], timeout=timeout)
    try:
        sections = split_output(res.stdout, compress=compress)
    except (ValueError, zlib.error) as exc:
        raise CommandFailed(f"{host.name}: journal output could not be decoded ({exc}): {res.tail(3)}",
                            host=host.name, result=res) from exc
    if len(sections) != len(commands):
        raise CommandFailed(f"{host.name}: expected {len(commands)} journal sections, got {len(sections)}: "
                            f"{res.tail(3)}", host=host.name, result=res)
    return {s.name: s for s in sections}
