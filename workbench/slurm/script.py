"""Job scripts as data: a base ``sbatch`` script, the server's command line in it, and variants.

A variant of a job script is the same script with the server's flags edited, exactly as a
variant of a unit is the unit with its ``ExecStart`` edited (:func:`workbench.variants.apply_edits`
does the editing for both).  The base script is never modified: the variant's text is
handed to ``sbatch`` on standard input.

Which line is the server: the line marked by a ``# workbench: server`` comment just above
it, else the first line that runs a known server entry point (``sglang.launch_server``,
``vllm serve``, ``vllm.entrypoints...``, ``workbench.sim.server``).  Backslash continuations
are joined.  Only the part from the program onward is edited (``srun ... python3 -m ...``:
srun's own options are not the server's).

Tokens the edits leave alone keep their text as written — ``$SLURM_NODEID``,
``"$HEAD:5000"`` stay shell words that the node expands; every new value is quoted with
:func:`shlex.quote`, so no edit can inject shell syntax.  ``#SBATCH`` headers are honoured
as written; the workbench's own options (job name, time limit, partition, account, QoS)
go on the ``sbatch`` command line, which Slurm lets override the headers.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.errors import ConfigError
from workbench.variants import EditValue, apply_edits, normalize_edits

MARKER = "# workbench: server"
_ENTRY = re.compile(r"(sglang\.launch_server|workbench\.sim\.server|vllm\.entrypoints|(^|/)vllm$|(^|/)sglang$)")
_PROGRAM = re.compile(r"(^|/)(python[0-9.]*|vllm|sglang)$")


@dataclass(frozen=True)
class ServerLine:
    """Where the server's command is in a script: lines ``first..last`` (0-based, inclusive)."""

    first: int
    last: int
    raw_tokens: tuple[str, ...]  # shell words as written
    program_index: int  # where the server's argv starts within the tokens

    @property
    def argv(self) -> list[str]:
        """The server's argv (program onward), each word unquoted where it is plain text."""
        return [_value(t) for t in self.raw_tokens[self.program_index:]]


def _words(line: str) -> list[str]:
    """Split a shell line into words, keeping each word's text exactly as written."""
    words, cur, quote, i = [], "", "", 0
    while i < len(line):
        c = line[i]
        if quote:
            cur += c
            if c == "\\" and quote == '"' and i + 1 < len(line):
                cur += line[i + 1]
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote, cur = c, cur + c
        elif c == "\\" and i + 1 < len(line):
            cur += c + line[i + 1]
            i += 1
        elif c.isspace():
            if cur:
                words.append(cur)
            cur = ""
        elif c == "#" and not cur:
            break  # a comment
        else:
            cur += c
        i += 1
    if quote:
        raise ConfigError(f"unbalanced quote in the job script's server line: {line[:120]!r}")
    if cur:
        words.append(cur)
    return words


def _value(word: str) -> str:
    """A word's value where it holds no expansion; else the word as written."""
    if "$" in word or "`" in word:
        return word
    try:
        parts = shlex.split(word)
    except ValueError:
        return word
    return parts[0] if len(parts) == 1 else word


def find_server(text: str) -> ServerLine:
    """The server's command line in a job script (see the module docstring)."""
    lines = text.split("\n")
    joined: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        first, cur = i, lines[i]
        while cur.endswith("\\") and i + 1 < len(lines):
            i += 1
            cur = cur[:-1] + " " + lines[i].lstrip()
        joined.append((first, i, cur))
        i += 1
    marked = False
    for first, last, line in joined:
        stripped = line.strip()
        if stripped.startswith(MARKER):
            marked = True
            continue
        if not stripped or stripped.startswith("#"):
            continue
        words = _words(line)
        values = [_value(w) for w in words]
        hit = marked or any(_ENTRY.search(v) for v in values)
        if hit:
            prog = next((k for k, v in enumerate(values) if _PROGRAM.search(v)), None)
            if prog is None:
                raise ConfigError(f"the job script's server line names no program (python3/vllm/sglang): {line[:120]!r}")
            return ServerLine(first, last, tuple(words), prog)
        marked = False
    raise ConfigError("no server command line in the job script: mark it with a line "
                      f"'{MARKER}' above it, or run sglang.launch_server / vllm serve in it")


def _render(raw: Sequence[str], old: list[str], new: list[str]) -> list[str]:
    """``new`` as shell words: unchanged runs keep their original text, new values are quoted."""
    out: list[str] = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(raw[a0:a1])
        else:
            out.extend(shlex.quote(v) for v in new[b0:b1])
    return out


@dataclass(frozen=True)
class JobScript:
    """A job script's text, its ``#SBATCH`` headers and its server line."""

    text: str

    @property
    def headers(self) -> list[str]:
        """The ``#SBATCH`` options, read as sbatch reads them (up to the first command)."""
        out: list[str] = []
        for line in self.text.splitlines()[1:] if self.text.startswith("#!") else self.text.splitlines():
            s = line.strip()
            if s.startswith("#SBATCH"):
                out.extend(_words(s[len("#SBATCH"):]))
            elif s and not s.startswith("#"):
                break
        return out

    @property
    def server(self) -> ServerLine:
        return find_server(self.text)

    @property
    def argv(self) -> list[str]:
        return self.server.argv

    def with_edits(self, edits: Mapping[str, EditValue] | Sequence[tuple[str, EditValue]]) -> JobScript:
        """The script with the server's flags edited (the rest of the script as written)."""
        norm = normalize_edits(edits)
        srv = self.server
        old = srv.argv
        new = apply_edits(old, norm)
        raw = list(srv.raw_tokens)
        words = raw[:srv.program_index] + _render(raw[srv.program_index:], old, new)
        lines = self.text.split("\n")
        indent = re.match(r"\s*", lines[srv.first]).group(0)  # type: ignore[union-attr]
        lines[srv.first:srv.last + 1] = [indent + " ".join(words)]
        return JobScript("\n".join(lines))


def sbatch_argv(*, job_name: str, time_limit: str | None = None, partition: str | None = None,
                account: str | None = None, qos: str | None = None, export: Sequence[str] = (),
                extra: Sequence[str] = ()) -> list[str]:
    """``sbatch --parsable`` with the workbench's options (the script comes on standard input).

    ``export`` names environment variables to pass (their values travel in sbatch's own
    environment, never on its command line); ``ALL`` is added so the job sees the rest too.
    """
    for name in export:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ConfigError(f"not an environment variable name: {name!r} (export takes names; values come from the environment)")
    argv = ["sbatch", "--parsable", f"--job-name={job_name}"]
    if time_limit:
        if not re.fullmatch(r"(\d+-)?\d+(:\d{1,2}){0,2}", time_limit):
            raise ConfigError(f"not a Slurm time limit: {time_limit!r} (e.g. 30, 1:30:00, 1-00:00:00)")
        argv.append(f"--time={time_limit}")
    for opt, val in (("--partition", partition), ("--account", account), ("--qos", qos)):
        if val:
            if not re.fullmatch(r"[A-Za-z0-9_.,-]+", val):
                raise ConfigError(f"{opt} {val!r}: only letters, digits, '_', '.', ',' and '-'")
            argv.append(f"{opt}={val}")
    argv.append("--export=" + ",".join(["ALL", *export]))
    argv.extend(extra)
    return argv
