"""ssh_config files as OpenSSH reads them: ``Include`` honoured, several files in one order.

Paramiko's parser knows no ``Include``; :func:`read` inlines included files (globs,
``~``, paths relative to ``~/.ssh``, as ``ssh`` does for user files) and
:class:`ConfigSet` keeps the text of every file read, in order, with the list of
paths, so an error can say which configs were consulted.  First obtained value
wins, as in OpenSSH: files earlier in the set take precedence.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

MAX_DEPTH = 16  # OpenSSH's READCONF_MAX_DEPTH
_INCLUDE = re.compile(r"^\s*include(?:\s*=\s*|\s+)(.+?)\s*$", re.I)
_HOST = re.compile(r"^\s*host(?:\s*=\s*|\s+)(.+?)\s*$", re.I)
SYSTEM_CONFIG = "/etc/ssh/ssh_config"


def _expand(pattern: str, base: Path) -> list[Path]:
    path = os.path.expanduser(pattern.strip('"'))
    if not os.path.isabs(path):
        path = str(base / path)
    return [Path(p) for p in sorted(glob.glob(path))]


def read(path: str | os.PathLike[str], *, base: Path | None = None, _depth: int = 0,
         _seen: list[str] | None = None) -> tuple[str, list[str]]:
    """The text of ``path`` with every ``Include`` inlined, and the files that were read.

    Relative include paths resolve against ``base`` (default ``~/.ssh``; ``/etc/ssh`` for
    the system file), as OpenSSH does.  A missing included file is skipped, as in OpenSSH.
    """
    if _depth > MAX_DEPTH:
        raise ConfigError(f"ssh_config: Include nested deeper than {MAX_DEPTH} at {path}")
    p = Path(os.path.expanduser(str(path)))
    if base is None:
        base = Path("/etc/ssh") if str(p) == SYSTEM_CONFIG else Path.home() / ".ssh"
    seen = _seen if _seen is not None else []
    try:
        text = p.read_text(errors="replace")
    except OSError as exc:
        raise ConfigError(f"ssh_config not readable: {p}: {exc.strerror}") from exc
    seen.append(str(p))
    out: list[str] = []
    for line in text.splitlines():
        m = _INCLUDE.match(line)
        if not m:
            out.append(line)
            continue
        out.append(f"# {line.strip()}")
        for target in (t for word in m.group(1).split() for t in _expand(word, base)):
            if target.is_file():
                inner, _ = read(target, base=base, _depth=_depth + 1, _seen=seen)
                out.append(inner)
    return "\n".join(out) + "\n", seen


def _patterns(text: str) -> list[list[str]]:
    return [m.group(1).split() for line in text.splitlines() if (m := _HOST.match(line))]


def _matches(patterns: list[str], alias: str) -> bool:
    if any(p.startswith("!") and fnmatch.fnmatchcase(alias, p[1:]) for p in patterns):
        return False
    return any(not p.startswith("!") and fnmatch.fnmatchcase(alias, p) for p in patterns)


def aliases(text: str) -> list[str]:
    """The concrete aliases of a config (patterns with ``*``, ``?`` or ``!`` left out)."""
    out: list[str] = []
    for pats in _patterns(text):
        out += [p for p in pats if not any(c in p for c in "*?!") and p not in out]
    return out


@dataclass(frozen=True)
class ConfigSet:
    """ssh_config files read in precedence order (earlier files win)."""

    texts: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()  # every file read, includes too

    @classmethod
    def from_files(cls, files: Sequence[str | os.PathLike[str]], *, required: bool = True) -> ConfigSet:
        """Read ``files`` in order; a missing one is an error when ``required``, else skipped."""
        texts: list[str] = []
        paths: list[str] = []
        for f in files:
            if not Path(os.path.expanduser(str(f))).is_file():
                if required:
                    raise ConfigError(f"ssh_config not found: {f}")
                continue
            text, seen = read(f)
            texts.append(text)
            paths += [s for s in seen if s not in paths]
        return cls(tuple(texts), tuple(paths))

    def text(self) -> str:
        """One config: each file opens with ``Host *`` so its top-level lines apply as in OpenSSH."""
        return "".join(f"Host *\n{t}" for t in self.texts)

    def knows(self, alias: str) -> bool:
        """Whether a ``Host`` line other than a bare ``*`` names ``alias``."""
        return any(_matches([p for p in pats if p != "*"], alias) for t in self.texts for pats in _patterns(t))

    def aliases(self) -> list[str]:
        out: list[str] = []
        for t in self.texts:
            out += [a for a in aliases(t) if a not in out]
        return out

    def paramiko(self) -> Any:
        import paramiko

        return paramiko.SSHConfig.from_text(self.text())

    def describe(self) -> str:
        return ", ".join(self.paths) if self.paths else "no ssh_config file (none found)"


def user_files() -> list[str]:
    """OpenSSH's defaults: the user's ``~/.ssh/config`` then the system file."""
    return [str(Path.home() / ".ssh" / "config"), SYSTEM_CONFIG]
