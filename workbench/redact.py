"""Redaction: no secret or address leaves a run (notebook outputs, reports, saved tables).

A :class:`Redactor` replaces known secret values and patterns.  Secrets enter
only by reference: :meth:`Redactor.for_params` learns the values of the
controller environment variables a runbook's ``secret_env`` names, and the
values given under secret-looking names (``--api-key X``, ``{"HF_TOKEN": X}``);
runbooks add a unit's ``Environment=`` values whose names look secret
(:meth:`Redactor.add_env`).  Patterns: IPv4 and IPv6 addresses (not version
numbers: ``nvidia-cudnn-cu12==9.1.0.70`` or a ``pip list`` row stays as is), the
common token formats in any position (:data:`TOKEN_FORMATS`: OpenAI/Anthropic
``sk-``, Hugging Face ``hf_``, GitHub ``ghp_``/``github_pat_``, AWS ``AKIA``,
NVIDIA ``nvapi-``, Slack ``xox?-``, GitLab, Google, Stripe, JWTs, PEM private keys,
``Bearer``/``Basic`` credentials), ``--api-key X`` style arguments, ``NAME=value``
assignments whose name says token, secret, key or password, and URLs with
credentials.  In JSON-like objects a string under a secret-looking key is
replaced whole.  Journal tables lose ``_CMDLINE``-like columns, which repeat a
command line (and any secret on it) on every line.

Redaction comes before truncation: :func:`clip` is how any text is cut for a
message (it redacts, then cuts), and a known secret that was cut anyway
before it reached a redactor is still found by its first or last
:data:`FRAGMENT` characters (a head or tail cut keeps one of them).
"""

from __future__ import annotations

import html
import ipaddress
import json
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
ADDRESS = "[ADDRESS]"
# A name (flag, variable, key) whose *last* word says secret: --api-key, HF_TOKEN, db_password,
# AWS_SECRET_ACCESS_KEY — but not --speculative-num-draft-tokens, max_tokens, tokenizer or secret_env.
_WORDS = (r"token|passw(?:or)?d|pass|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?"
          r"|authorization|auth[_-]?token|secret(?:[_.-]?(?:access[_-]?)?key)?")
SECRET_NAME = re.compile(r"(?i)^-{0,2}(?:[\w.-]*[_.-])?(?:" + _WORDS + r")$")
DROP_COLUMNS = ("_CMDLINE", "cmdline", "_HOSTNAME", "_MACHINE_ID", "_BOOT_ID")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

_IPV4 = re.compile(r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\w.])")
# IPv6 candidates (any run of hex digits and 2+ colons, "::" forms included), confirmed by ipaddress.
_IPV6 = re.compile(r"(?<![\w:.])(?=[0-9A-Fa-f]*:[0-9A-Fa-f]*:)[0-9A-Fa-f:]{2,39}(?:%\w+)?(?![\w:])")
_VALUE = r"(\"[^\"]*\"|'[^']*'|[^\s\"',;&]+)"
_FLAG = re.compile(r"(?i)(--(?:[\w-]*[_-])?(?:" + _WORDS + r"))(=|\s+)" + _VALUE)
# NAME=value and "NAME": "value" (quoted only: ``{"token": token}`` in code is no secret).
_NAME = (r"(?:[A-Z0-9]+_)*(?:SECRET(?:_(?:ACCESS_)?KEY)?|TOKEN|PASSWORD|PASSWD|PASS|API_?KEY|ACCESS_KEY"
         r"|PRIVATE_KEY|CREDENTIALS?)")
# Token formats recognised wherever they occur (no secret-looking name needed).
TOKEN_FORMATS: tuple[tuple[str, str], ...] = (
    ("openai/anthropic", r"\bsk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d*-)?(?=[\w-]*\d)[A-Za-z0-9_-]{20,}"),
    ("huggingface", r"\bhf_[A-Za-z0-9]{20,}"),
    ("github", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    ("aws access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[A-Z0-9]{16}\b"),
    ("nvidia", r"\bnvapi-[A-Za-z0-9_-]{20,}"),
    ("slack", r"\bxox[abposr]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}"),
    ("gitlab", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("google api key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("stripe", r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ("pem private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"),
)
_TOKENS = re.compile("|".join(f"(?:{rx})" for _, rx in TOKEN_FORMATS))
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_TOKENS, REDACTED),
    (re.compile(r"(?i)\b(bearer|basic|token)\s+(?![A-Za-z]+\b)[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    (re.compile(r"(?i)\b(authorization\s*[:=]\s*[\"']?)(?!\[REDACTED)(?!(?:bearer|basic|token)\s)[^\s\"',;]{8,}"),
     r"\1" + REDACTED),
    (_FLAG, r"\1\2" + REDACTED),
    (re.compile(r"(?i)\b(" + _NAME + r")=" + _VALUE), r"\1=" + REDACTED),
    (re.compile(r"(?i)\b(" + _NAME + r")(\"?\s*:\s*)(\"[^\"]*\"|'[^']*')"), r'\1\2"' + REDACTED + '"'),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/:@]+:[^\s/@]+@"), r"\1" + REDACTED + "@"),
)
# A known secret cut before it was redacted keeps its first or last FRAGMENT characters.
FRAGMENT = 8
ELLIPSIS = "..."
# Dotted quads that are versions, not addresses: after a version operator or a word saying
# version (``==9.1.0.70``, ``cuDNN version: 9.1.0.70``), in a wheel name (``cu12-9.1.0.70-py3``),
# with a local version (``+cu124``), or as the version column of a ``pip list`` row.
_VERSION_BEFORE = re.compile(r"(?:[=!~<>]=\s*|===\s*|(?<![-\w])[<>^]\s*|(?<![A-Za-z])(?i:version|ver|release|build)[\s:=\"']*"
                             r"|[A-Za-z]\w*-)$")
_VERSION_AFTER = re.compile(r"^(?:\+[A-Za-z]|-(?:py\d|cp\d|none|manylinux|linux|\d+-))")
_PIP_ROW = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[\w,.-]+\])?)\s+$")
_PIP_ROW_REST = re.compile(r"^(?:\s+(?:/|[A-Za-z]:\\|pip\b|conda\b|uv\b)\S*.*)?\s*$")
# Names that say an address follows (``HostName 10.0.0.1``): never a pip list row.
_ADDRESS_WORDS = re.compile(r"(?i)^(?:host(?:name)?|addr(?:ess)?|ip|inet6?|server|peer|gateway|nameserver|dns|proxy"
                            r"|from|to|via|src|dst|master|node|endpoint|listen|bind|remote|local|client|target)$")


# A row of ``pip list`` whose version is not a dotted quad: what a version column's neighbours look like.
_PIP_NEIGHBOUR = re.compile(r"^\s*[A-Za-z0-9][\w.-]*(?:\[[\w,.-]+\])?\s+\d+(?:\.\d+){0,2}(?:[a-z+!-][\w.+!-]*)?"
                            r"(?:\s+\S.*)?\s*$")
_PIP_HEADER = re.compile(r"^Package\s+Version\b", re.M)


def _is_version(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 40):start]
    if _VERSION_BEFORE.search(before) or _VERSION_AFTER.match(text[end:end + 12]):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = line_end if line_end >= 0 else len(text)
    row = _PIP_ROW.match(text[line_start:start])
    if not row or _ADDRESS_WORDS.match(row.group(1)) or not _PIP_ROW_REST.match(text[end:line_end]):
        return False
    # A lone "name 10.1.2.3" is an address; in a pip list (its header above, or rows around it
    # with ordinary versions) it is a version.
    if _PIP_HEADER.search(text, 0, line_start):
        return True
    around = text[max(0, line_start - 400):line_start].split("\n")[-3:-1] + text[line_end + 1:line_end + 400].split("\n")[:2]
    return any(_PIP_NEIGHBOUR.match(line) for line in around)


# Addresses that are not anybody's: loopback and the unspecified address stay readable.
_KEEP = {"127.0.0.1", "0.0.0.0", "::1", "::"}


def _address(match: re.Match[str]) -> str:
    text = match.group(0)
    try:
        ip = ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return text
    if text in _KEEP or (ip.version == 4 and _is_version(match.string, match.start(), match.end())):
        return text
    return ADDRESS


def _cut_heads(s: str, secret: str, mark: str) -> str:
    """``s`` with every prefix of ``secret`` of FRAGMENT or more characters replaced by ``mark``."""
    head = secret[:FRAGMENT]
    i = s.find(head)
    while i >= 0:
        n = FRAGMENT
        while i + n < len(s) and n < len(secret) and s[i + n] == secret[n]:
            n += 1
        s = s[:i] + mark + s[i + n:]
        i = s.find(head, i + len(mark))
    return s


def _cut_fragments(s: str, secret: str) -> str:
    """``s`` without the pieces a head or tail cut leaves of ``secret``: a prefix of FRAGMENT or
    more characters, or such a suffix (found as a prefix of both texts reversed)."""
    if len(secret) < 2 * FRAGMENT:
        return s
    if secret[:FRAGMENT] in s:
        s = _cut_heads(s, secret, REDACTED)
    if secret[-FRAGMENT:] in s:
        s = _cut_heads(s[::-1], secret[::-1], REDACTED[::-1])[::-1]
    return s


def is_secret_name(name: str) -> bool:
    """Whether a flag, variable or key name says its value is secret (``--api-key``, ``HF_TOKEN``)."""
    return bool(SECRET_NAME.match(name.strip()))


class Redactor:
    """Replace secrets and addresses in text, JSON-like objects and DataFrames."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets: set[str] = set()
        for s in secrets:
            self.add(s)

    @classmethod
    def for_params(cls, params: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Redactor:
        """A redactor that knows a runbook's secrets: the values of the env vars ``params["secret_env"]``
        names (read from ``environ``, default the process environment), of those the load's request
        headers are read from (``api_key_env`` — or, empty, its defaults — and ``headers``
        ``NAME=ENVVAR``: :func:`workbench.bench.options.secret_envs`), and the values given under
        secret-looking names anywhere in ``params``."""
        env = os.environ if environ is None else environ
        r = cls()
        names = params.get("secret_env") or []
        names = [names] if isinstance(names, str) else list(names)
        if "api_key_env" in params or "headers" in params:  # a measuring runbook's load (LoadParams)
            from workbench.bench.options import secret_envs

            items = params.get("headers") or []
            names += secret_envs(str(params.get("api_key_env") or "") or None,
                                 [str(i) for i in ([items] if isinstance(items, str) else items)])
        for name in names:
            r.add(env.get(str(name)))
        r.learn(params)
        return r

    def add(self, secret: str | None) -> None:
        """A secret value, and its HTML-, JSON- and URL-escaped forms (how it may show up in outputs)."""
        if not secret or len(str(secret)) < 4:
            return
        s = str(secret)
        self.secrets.update({s, html.escape(s), html.escape(s, quote=False), json.dumps(s)[1:-1],
                             urllib.parse.quote(s, safe=""), urllib.parse.quote_plus(s)})

    def add_env(self, env: Mapping[str, str | None]) -> None:
        """Values of variables whose names say they are secret."""
        for name, value in env.items():
            if value and is_secret_name(name):
                self.add(value)

    def learn(self, value: Any) -> None:
        """Add the secrets ``value`` carries by name: ``{"--api-key": X}``, ``[["--api-key", X]]``,
        ``"--api-key X"`` — so they are redacted in any later form (JSON keys, log lines)."""
        if isinstance(value, str):
            for m in _FLAG.finditer(value):
                self.add(m.group(3).strip("\"'"))
        elif isinstance(value, Mapping):
            for k, v in value.items():
                if isinstance(k, str) and is_secret_name(k):
                    # a value, or a list of values to try (a sweep's grid: {"--api-key": [X, Y]})
                    for item in [v] if isinstance(v, str) else v if isinstance(v, list | tuple) else []:
                        if isinstance(item, str):
                            self.add(item)
                self.learn(v)
        elif isinstance(value, list | tuple):
            if len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], str) and is_secret_name(value[0]):
                self.add(value[1])
            for v in value:
                self.learn(v)

    def _plain(self, s: str) -> str:
        ordered = sorted(self.secrets, key=len, reverse=True)
        for secret in ordered:
            s = s.replace(secret, REDACTED)
        for secret in ordered:
            s = _cut_fragments(s, secret)
        for pattern, repl in _PATTERNS:
            s = pattern.sub(repl, s)
        s = _IPV4.sub(_address, s)
        return _IPV6.sub(_address, s)

    def text(self, s: str) -> str:
        if not s:
            return s
        if "\x1b[" not in s:
            return self._plain(s)
        # Colour codes glue onto words (``\x1b[0m10.0.0.1``) and would hide a match: redact between
        # them, and if the text without them still shows something, give up the colours.
        parts = _ANSI.split(s)
        codes = _ANSI.findall(s)
        out = self._plain(parts[0]) + "".join(c + self._plain(p) for c, p in zip(codes, parts[1:], strict=True))
        bare = _ANSI.sub("", out)
        clean = self._plain(bare)
        return out if clean == bare else clean

    def obj(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(k) if isinstance(k, str) else k: self._under(k, v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            if len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], str) and is_secret_name(value[0]):
                items = [self.text(value[0]), REDACTED]
            else:
                items = [self.obj(v) for v in value]
            return tuple(items) if isinstance(value, tuple) else items
        return value

    def _under(self, key: Any, value: Any) -> Any:
        """``value`` as kept under ``key``: whole strings (or the strings of a list) under a secret-looking key go."""
        if isinstance(key, str) and is_secret_name(key):
            if isinstance(value, str) and value:
                return REDACTED
            if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
                return type(value)(REDACTED for _ in value)
        return self.obj(value)

    def leaks(self, text: str) -> list[str]:
        """The known secrets that occur in ``text`` (for checks; never print what this returns)."""
        return [s for s in self.secrets if s in text]

    def frame(self, frame: Any) -> Any:
        from pandas.api.types import is_string_dtype

        drop = [c for c in frame.columns if c in DROP_COLUMNS]
        if drop:
            frame = frame.drop(columns=drop)
        for col in frame.columns:
            # object columns (lists, dicts, mixed) and every string dtype (pandas 3 stores str as "str")
            if frame[col].dtype == object or is_string_dtype(frame[col].dtype):
                frame[col] = frame[col].map(self.obj)
        return frame


_DEFAULT = Redactor()


def clip(text: str | None, width: int, redactor: Redactor | None = None, *, tail: bool = False) -> str:
    """``text`` redacted, then cut to ``width`` characters (its end when ``tail``) with an ellipsis:
    a cut can never leave part of a secret that the whole text would have shown as [REDACTED]."""
    out = (redactor or _DEFAULT).text(text or "")
    if len(out) <= width:
        return out
    keep = max(width - len(ELLIPSIS), 0)
    return ELLIPSIS + out[len(out) - keep:] if tail else out[:keep] + ELLIPSIS


def scan_file(path: str, redactor: Redactor | None = None) -> list[int]:
    """Line numbers (1-based) of ``path`` that hold a secret or an address the redactor would hide."""
    redactor = redactor or Redactor()
    with open(path, encoding="utf-8", errors="replace") as f:
        return [n for n, line in enumerate(f, 1) if redactor.text(line) != line]


def main(argv: list[str] | None = None) -> int:
    """``python -m workbench.redact --check FILE...``: the pre-commit secret scanner (claim N4).

    Exit 1 when a file holds a secret-looking value or an address; the report names files and
    line numbers only, never what it found.  ``--secret-env NAME`` also looks for the value of
    the controller's environment variable ``NAME`` (a real token, to be sure it never lands)."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m workbench.redact", description=main.__doc__)
    ap.add_argument("--check", action="store_true", required=True, help="scan the files, change nothing")
    ap.add_argument("--secret-env", action="append", default=[], metavar="NAME")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args(argv)
    redactor = Redactor(os.environ[n] for n in args.secret_env if os.environ.get(n))
    bad = 0
    for path in args.files:
        try:
            lines = scan_file(path, redactor)
        except OSError as exc:
            print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
            bad += 1
            continue
        if lines:
            bad += 1
            shown = ", ".join(map(str, lines[:10])) + (f" and {len(lines) - 10} more" if len(lines) > 10 else "")
            print(f"{path}: secret or address on line(s) {shown}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
