"""The README's examples run (so they cannot rot): the Python blocks that need no host here, the
command lines parsed by the real parser; the blocks that need the testbed run in
tests/integration/test_cli.py."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest

from workbench.cli import build_parser

ROOT = Path(__file__).resolve().parents[3]


def blocks(lang: str) -> list[str]:
    """The README's fenced code blocks of ``lang``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def needs_host(code: str) -> bool:
    return "connect(" in code


def test_the_readme_has_examples_of_both_kinds() -> None:
    python = blocks("python")
    assert any(needs_host(b) for b in python) and any(not needs_host(b) for b in python)
    assert blocks("sh")


@pytest.mark.parametrize("code", [b for b in blocks("python") if not needs_host(b)])
def test_python_examples_without_a_host_run(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().strip()


def test_command_lines_parse() -> None:
    parser = build_parser()
    lines = [line.split("  #")[0].strip() for b in blocks("sh") for line in b.splitlines()]
    commands = [shlex.split(line) for line in lines if line.startswith("workbench ")]
    assert len(commands) >= 10
    for argv in commands:
        if argv[1:] == ["--version"]:
            continue
        with contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                args = parser.parse_args(argv[1:])
            except SystemExit:
                pytest.fail(f"README: {shlex.join(argv)}: {err.getvalue()}")
        assert callable(args.func), argv
    assert os.path.isfile(ROOT / "tests/fixtures/tracebacks/sglang_tp8_nccl_init_remote_exit.log")
