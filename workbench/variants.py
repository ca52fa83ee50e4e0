"""Variants: a base unit plus flag and environment edits, expressed as data.

Edits apply to the parsed ``ExecStart`` argv, never to text with ``sed``::

    {"--ep-size": "8", "--enable-nccl-nvls": True, "--disable-cuda-graph": None}

sets (or replaces) a value, adds a boolean flag, and removes a flag with its
value(s).  A value may be a list for flags that take several.

How a variant is materialized (decided here, used by :mod:`workbench.services`):
a *runtime unit file* ``/run/systemd/system/<base>-wb-<digest>.service`` — the
base's effective unit (fragment plus drop-ins) with the edited ``ExecStart``,
``Restart=no`` (a failed start is observed once, not retried), ``Type=exec`` in
place of ``simple`` (a missing binary fails the start itself),
``RuntimeMaxSec=`` as a dead-man switch, and no ``[Install]``.  Why not a
transient unit: ``systemd-run`` cannot express every directive a real unit
carries (ExecStartPre, conditions, resource settings, ...), so the variant
would silently differ from its base in more than the edits; why not a drop-in
on the base: the base's own identity and journal would change under other
users' feet.  /run is tmpfs, so a host that reboots mid-trial forgets the
variant; the base unit's file is never touched.  The file is verified with
``systemd-analyze verify`` before it is placed, written atomically, and
removed when the session restores the host.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from workbench import containerunit
from workbench.errors import ConfigError
from workbench.systemd import normalize_unit
from workbench.unitfile import UnitFile, join_command, quote_arg, split_command

EditValue = str | bool | None | Sequence[str]
RUNTIME_DIR = "/run/systemd/system"
DEFAULT_RUNTIME_MAX_SEC = 3600
MARKER_KEY = "X-WorkbenchVariantOf"


def is_flag(token: str) -> bool:
    """``--x`` or ``-x`` of a command line, not a negative number (``-1e-3``: a value)."""
    return token.startswith("-") and len(token) > 1 and not _is_number(token)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _check_flag(flag: object) -> str:
    if (not isinstance(flag, str) or not flag.startswith("-") or not flag.strip("-") or _is_number(flag)
            or any(c.isspace() or not c.isprintable() for c in flag) or "=" in flag):
        raise ConfigError(f"not a flag: {flag!r} (edits are keyed by flags such as '--ep-size': a dash, "
                          "a name, no spaces or '=')")
    return flag


def _scalar(flag: str, value: object) -> str:
    """A number or string edit value as the argv word it becomes."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ConfigError(f"edit for {flag}: {value!r} is not a usable number")
        return str(value)
    raise ConfigError(f"edit for {flag}: value must be a string, a number, true (add the flag), "
                      f"false or None (remove it) or a list of strings/numbers, not {value!r}")


def normalize_edits(edits: Mapping[str, object] | Sequence[tuple[str, object]]) -> tuple[tuple[str, EditValue], ...]:
    """Validate edits and return them as a tuple of (flag, value) in the given order.

    Values: a string or a number (the flag's value), ``True`` (add a boolean flag), ``False``
    or ``None`` (remove the flag and its values), a list of strings/numbers (several values)."""
    items = list(edits.items()) if isinstance(edits, Mapping) else list(edits)
    out: list[tuple[str, EditValue]] = []
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise ConfigError(f"an edit is a (flag, value) pair, not {item!r}")
        flag = _check_flag(item[0])
        value = item[1]
        if flag in seen:
            raise ConfigError(f"flag {flag} edited twice")
        seen.add(flag)
        norm: EditValue
        if value is False or value is None:
            norm = None
        elif value is True:
            norm = True
        elif isinstance(value, list | tuple):
            norm = tuple(_scalar(flag, v) for v in value)
        else:
            norm = _scalar(flag, value)
        out.append((flag, norm))
    return tuple(out)


def _spans(argv: list[str], flag: str) -> list[tuple[int, int]]:
    """Index ranges [start, end) of every occurrence of ``flag`` with its values."""
    spans = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == flag:
            j = i + 1
            while j < len(argv) and not is_flag(argv[j]):
                j += 1
            spans.append((i, j))
            i = j
        elif tok.startswith(flag + "="):
            spans.append((i, i + 1))
            i += 1
        else:
            i += 1
    return spans


def apply_edits(argv: list[str], edits: Mapping[str, EditValue] | Sequence[tuple[str, EditValue]]) -> list[str]:
    """Return a new argv with ``edits`` applied (the first element, the program, is never edited)."""
    out = list(argv)
    for flag, value in normalize_edits(edits):
        spans = _spans(out, flag)
        if value is None:
            for start, end in reversed(spans):
                del out[start:end]
            continue
        if value is True:
            new = [flag]
        elif isinstance(value, str):
            new = [flag, value]
        else:
            new = [flag, *(value if isinstance(value, tuple | list) else [])]
        if spans:
            start, end = spans[0]
            out[start:end] = new
            for s, e in reversed(_spans(out, flag)[1:]):
                del out[s:e]
        else:
            out.extend(new)
    return out


def one_line(text: str) -> str:
    """Control characters escaped, so a value with a newline cannot break a unit-file line."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text.replace("\\", "\\\\"))


def describe_edits(edits: Sequence[tuple[str, EditValue]]) -> str:
    """Human form: ``--ep-size 8, --enable-nccl-nvls, no --disable-cuda-graph``."""
    parts = []
    for flag, value in edits:
        if value is None:
            parts.append(f"no {flag}")
        elif value is True:
            parts.append(flag)
        elif isinstance(value, str):
            parts.append(f"{flag} {value}")
        else:
            parts.append(f"{flag} {' '.join(value)}")  # type: ignore[arg-type]
    return ", ".join(parts) or "(no edits)"


def edits_key(edits: Sequence[tuple[str, EditValue]]) -> str:
    """A canonical JSON of edits (order-independent) for ledgers and digests."""
    return json.dumps(sorted([f, list(v) if isinstance(v, tuple) else v] for f, v in edits), sort_keys=True)


@dataclass(frozen=True)
class Variant:
    """A base unit plus edits; ``name`` is stable for the same base text and edits."""

    base: str
    edits: tuple[tuple[str, EditValue], ...] = ()
    env: tuple[tuple[str, str | None], ...] = ()
    runtime_max_sec: int = DEFAULT_RUNTIME_MAX_SEC
    base_text: str = field(default="", compare=False, repr=False)

    @classmethod
    def build(
        cls,
        base: str,
        base_text: str,
        edits: Mapping[str, EditValue] | Sequence[tuple[str, EditValue]] = (),
        env: Mapping[str, str | None] | None = None,
        runtime_max_sec: int = DEFAULT_RUNTIME_MAX_SEC,
    ) -> Variant:
        for name in env or {}:
            if not name or not (name[0].isalpha() or name[0] == "_") or not name.replace("_", "a").isalnum():
                raise ConfigError(f"invalid environment variable name: {name!r}")
        if runtime_max_sec <= 0:
            raise ConfigError("runtime_max_sec must be positive (it is the variant's dead-man switch)")
        base = normalize_unit(base)
        return cls(base, normalize_edits(edits), tuple((env or {}).items()), runtime_max_sec, base_text)

    @property
    def digest(self) -> str:
        blob = json.dumps([self.base, hashlib.sha256(self.base_text.encode()).hexdigest(), edits_key(self.edits),
                           sorted(self.env, key=lambda kv: kv[0]), self.runtime_max_sec])
        return hashlib.sha256(blob.encode()).hexdigest()[:10]

    @property
    def name(self) -> str:
        stem = self.base.removesuffix(".service")
        return f"{stem}-wb-{self.digest}.service"

    @property
    def path(self) -> str:
        return f"{RUNTIME_DIR}/{self.name}"

    def _base_argv(self) -> tuple[str, list[str]]:
        unit = UnitFile.parse(self.base_text, source=self.base)
        execs = unit.get_all("Service", "ExecStart")
        if len(execs) != 1:
            raise ConfigError(f"{self.base}: expected exactly one ExecStart=, found {len(execs)}")
        return split_command(execs[0])

    @property
    def container(self) -> str | None:
        """The variant's container when the base's ExecStart is ``podman|docker run --name X``:
        ``X-wb-DIGEST`` (never the base's, never a unit's name)."""
        run = containerunit.parse(self._base_argv()[1])
        if run is None:
            return None
        return f"{run.name or self.base.removesuffix('.service')}-wb-{self.digest}"

    def argv(self) -> tuple[str, list[str]]:
        """(prefix, argv) of the base's ExecStart with the edits applied -- to the server's flags
        after the image when it is a container ``run`` (:mod:`workbench.containerunit`)."""
        prefix, argv = self._base_argv()
        run = containerunit.parse(argv)
        if run is None:
            return prefix, apply_edits(argv, self.edits)
        return prefix, containerunit.edit(run, apply_edits(run.command, self.edits), self.env, str(self.container))

    def server_argv(self) -> list[str]:
        """The server's own command line in the variant (inside the container when there is one)."""
        argv = self.argv()[1]
        run = containerunit.parse(argv)
        return run.command if run is not None else argv

    def render(self) -> str:
        unit = UnitFile.parse(self.base_text, source=self.base)
        prefix, argv = self.argv()
        unit.set("Service", "ExecStart", join_command(argv, prefix))
        run = containerunit.parse(argv)
        if run is not None:  # env edits are in the run's options; the container goes when the unit stops
            unit.add("Service", "ExecStopPost", "-" + join_command(containerunit.cleanup_argv(run, str(self.container))))
        for name, value in self.env if run is None else ():
            if value is None:
                unit.add("Service", "UnsetEnvironment", name)
            else:
                unit.add("Service", "Environment", quote_arg(f"{name}={value}"))
        unit.set("Service", "Restart", "no")
        if (unit.get("Service", "Type") or "simple") == "simple":
            unit.set("Service", "Type", "exec")
        unit.set("Service", "RuntimeMaxSec", str(self.runtime_max_sec))
        desc = unit.get("Unit", "Description") or self.base
        what = one_line(describe_edits(self.edits))
        unit.set("Unit", "Description", f"{desc} [variant: {what}]".replace("%", "%%"))
        unit.set("Unit", MARKER_KEY, self.base)
        unit.lines = [line for line in unit.lines if line.section != "Install"]
        header = f"# workbench variant of {self.base}: {what}\n"
        return header + unit.render()

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.base_text.splitlines(True), self.render().splitlines(True),
                                            fromfile=self.base, tofile=self.name))
