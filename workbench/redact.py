"""Redaction: no secret or address leaves a run (notebook outputs, reports, saved tables).

A :class:`Redactor` replaces known secret values (given by reference: parameter
values marked secret, environment values whose names look secret) and patterns:
IPv4 and IPv6 addresses, ``hf_`` tokens, ``Bearer`` headers, ``--api-key X``
style arguments, ``NAME=value`` assignments whose name says token, secret, key
or password, and URLs with credentials.  Journal tables lose ``_CMDLINE``-like
columns, which repeat a command line (and any secret on it) on every line.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"
ADDRESS = "[ADDRESS]"
SECRET_NAME = re.compile(r"(?i)(token|secret|passw(or)?d|api[_-]?key|credential|auth)")
DROP_COLUMNS = ("_CMDLINE", "cmdline", "_HOSTNAME", "_MACHINE_ID", "_BOOT_ID")

_IPV4 = re.compile(r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\w.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%\w+)?(?![\w:])|(?<![\w:])::1(?![\w:])")
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bhf_[A-Za-z0-9]{10,}"), REDACTED),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    (re.compile(r"(?i)(--[\w-]*(?:api[-_]?key|token|secret|password|passwd)[\w-]*)(=|\s+)(\"[^\"]*\"|'[^']*'|\S+)"),
     r"\1\2" + REDACTED),
    (re.compile(r"(?i)\b([A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY)[A-Z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S+)"),
     r"\1=" + REDACTED),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/:@]+:[^\s/@]+@"), r"\1" + REDACTED + "@"),
)
# Addresses that are not anybody's: loopback and the unspecified address stay readable.
_KEEP = {"127.0.0.1", "0.0.0.0", "::1", "::"}


def _address(match: re.Match[str]) -> str:
    text = match.group(0)
    try:
        ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return text
    return text if text in _KEEP else ADDRESS


class Redactor:
    """Replace secrets and addresses in text, JSON-like objects and DataFrames."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets: set[str] = set()
        for s in secrets:
            self.add(s)

    def add(self, secret: str | None) -> None:
        if secret and len(str(secret)) >= 4:
            self.secrets.add(str(secret))

    def add_env(self, env: dict[str, str | None]) -> None:
        """Values of variables whose names say they are secret."""
        for name, value in env.items():
            if value and SECRET_NAME.search(name):
                self.add(value)

    def text(self, s: str) -> str:
        if not s:
            return s
        for secret in sorted(self.secrets, key=len, reverse=True):
            s = s.replace(secret, REDACTED)
        for pattern, repl in _PATTERNS:
            s = pattern.sub(repl, s)
        s = _IPV4.sub(_address, s)
        return _IPV6.sub(_address, s)

    def obj(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)) if isinstance(k, str) else k: self.obj(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.obj(v) for v in value)
        return value

    def frame(self, frame: Any) -> Any:
        drop = [c for c in frame.columns if c in DROP_COLUMNS]
        if drop:
            frame = frame.drop(columns=drop)
        for col in frame.columns:
            if frame[col].dtype == object or str(frame[col].dtype).startswith("string"):
                frame[col] = frame[col].map(self.obj)
        return frame
