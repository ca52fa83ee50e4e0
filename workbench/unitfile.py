"""systemd unit files as data: parse, edit and render (pure; nothing here touches a host).

Command lines follow systemd.service(5) "Command lines": words split on
whitespace, single and double quotes, C-style escapes, ``$VAR``/``${VAR}``
environment substitution and ``%`` specifiers.  :func:`quote_arg` is the exact
inverse of :func:`split_command` for literal arguments, so an argv we render
reaches the process unchanged (spaces, quotes, ``;``, ``$(...)``, newlines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench.errors import ParseError

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            "\\": "\\", '"': '"', "'": "'", "s": " ", " ": " "}
EXEC_PREFIXES = "@-:+!|"


@dataclass
class Line:
    section: str | None
    key: str | None  # None for comments/blank/section headers
    value: str = ""
    raw: str = ""


@dataclass
class UnitFile:
    """A unit file kept line by line so edits leave the rest byte-identical."""

    lines: list[Line] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str, *, source: str = "unit") -> UnitFile:
        lines: list[Line] = []
        section: str | None = None
        pending = ""
        # systemd ends a line at \n or \r only (str.splitlines also splits at \x85, \u2028, ...: a
        # flag value holding one would become a broken line of its own)
        rows = re.split(r"\r\n|\r|\n", text)
        if rows and rows[-1] == "":
            rows.pop()
        for lineno, raw in enumerate(rows, 1):
            if pending:
                raw = pending + raw
                pending = ""
            stripped = raw.strip()
            if stripped.endswith("\\") and not stripped.startswith(("#", ";")):
                pending = raw[: raw.rstrip().rfind("\\")] + " "
                continue
            if not stripped or stripped.startswith(("#", ";")):
                lines.append(Line(section, None, raw=raw))
            elif stripped.startswith("["):
                if not stripped.endswith("]"):
                    raise ParseError(f"{source}:{lineno}: malformed section header {stripped!r}", source=source, line=lineno)
                section = stripped[1:-1]
                lines.append(Line(section, None, raw=raw))
            elif "=" in stripped:
                key, _, value = stripped.partition("=")
                lines.append(Line(section, key.strip(), value.strip(), raw))
            else:
                raise ParseError(f"{source}:{lineno}: not a key=value line: {stripped!r}", source=source, line=lineno)
        if pending:
            lines.append(Line(section, None, raw=pending))
        return cls(lines)

    def render(self) -> str:
        return "\n".join(line.raw for line in self.lines) + "\n"

    def get_all(self, section: str, key: str) -> list[str]:
        """Values of ``key`` in order; an empty assignment resets the list (systemd's rule)."""
        values: list[str] = []
        for line in self.lines:
            if line.section == section and line.key == key:
                values = [] if line.value == "" else [*values, line.value]
        return values

    def get(self, section: str, key: str) -> str | None:
        values = self.get_all(section, key)
        return values[-1] if values else None

    def set(self, section: str, key: str, value: str) -> None:
        """Replace every assignment of ``key`` by one ``key=value`` (added at the section's end)."""
        idx = [i for i, line in enumerate(self.lines) if line.section == section and line.key == key]
        new = Line(section, key, value, f"{key}={value}")
        if idx:
            self.lines[idx[0]] = new
            for i in reversed(idx[1:]):
                del self.lines[i]
            return
        self._append(section, new)

    def add(self, section: str, key: str, value: str) -> None:
        self._append(section, Line(section, key, value, f"{key}={value}"))

    def remove(self, section: str, key: str) -> None:
        self.lines = [line for line in self.lines if not (line.section == section and line.key == key)]

    def _append(self, section: str, new: Line) -> None:
        positions = [i for i, line in enumerate(self.lines) if line.section == section]
        if not positions:
            if self.lines and self.lines[-1].raw.strip():
                self.lines.append(Line(None, None, raw=""))
            self.lines.append(Line(section, None, raw=f"[{section}]"))
            self.lines.append(new)
            return
        last = positions[-1]
        while last > positions[0] and self.lines[last].key is None and not self.lines[last].raw.strip():
            last -= 1
        self.lines.insert(last + 1, new)


def split_command(value: str) -> tuple[str, list[str]]:
    """Split an ``ExecStart=`` value into (prefix characters, argv) by systemd's rules.

    ``$VAR``/``${VAR}`` and ``%`` specifiers are kept as written (``$$`` and
    ``%%`` are unescaped), since only the host can expand them.
    """
    s = value.strip()
    prefix = ""
    while s and s[0] in EXEC_PREFIXES:
        prefix += s[0]
        s = s[1:]
    words: list[str] = []
    i, n = 0, len(s)
    while i < n:
        while i < n and s[i] in " \t":
            i += 1
        if i >= n:
            break
        if s[i] == ";" and (i + 1 == n or s[i + 1] in " \t"):
            raise ParseError("several commands on one ExecStart= line are not supported", source="ExecStart")
        word: list[str] = []
        quote: str | None = None
        while i < n:
            c = s[i]
            if quote is None and c in " \t":
                break
            if quote is None and c in "\"'":
                quote = c
                i += 1
                continue
            if quote is not None and c == quote:
                quote = None
                i += 1
                continue
            if c == "\\" and i + 1 < n:
                nxt = s[i + 1]
                if nxt in _ESCAPES:
                    word.append(_ESCAPES[nxt])
                    i += 2
                    continue
                m = re.match(r"x([0-9a-fA-F]{2})|([0-7]{3})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})", s[i + 1:])
                if m:
                    code = next(g for g in m.groups() if g is not None)
                    word.append(chr(int(code, 8 if m.group(2) else 16)))
                    i += 1 + len(m.group(0))
                    continue
                raise ParseError(f"invalid escape \\{nxt} in {value!r}", source="ExecStart")
            if c in "$%" and i + 1 < n and s[i + 1] == c:
                word.append(c)
                i += 2
                continue
            word.append(c)
            i += 1
        if quote is not None:
            raise ParseError(f"unterminated quote in {value!r}", source="ExecStart")
        words.append("".join(word))
    if not words:
        raise ParseError("empty command line", source="ExecStart")
    return prefix, words


def quote_arg(arg: str) -> str:
    """Render one literal argument so that :func:`split_command` (and systemd) give it back exactly."""
    if arg and re.fullmatch(r"[A-Za-z0-9_./:=,+@-]+", arg):
        return arg
    out = ['"']
    for c in arg:
        if c in '\\"':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c in "$%":
            out.append(c + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def join_command(argv: list[str], prefix: str = "") -> str:
    return prefix + " ".join(quote_arg(a) for a in argv)


def split_environment(value: str) -> dict[str, str]:
    """``Environment=`` assignments (quoted words of ``NAME=value``) into a dict."""
    env: dict[str, str] = {}
    try:
        _, words = split_command(value)
    except ParseError:
        return env
    for word in words:
        name, sep, val = word.partition("=")
        if sep:
            env[name] = val
    return env


def effective(cat_text: str) -> UnitFile:
    """Merge ``systemctl cat`` output (fragment then drop-ins, each after a ``# /path`` line) into one view."""
    merged = UnitFile()
    for chunk in re.split(r"^# /.*$", cat_text, flags=re.M):
        if chunk.strip():
            merged.lines.extend(UnitFile.parse(chunk, source="systemctl cat").lines)
    return merged
