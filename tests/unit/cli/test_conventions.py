"""What every ``workbench`` command shares: global options anywhere, --version, one exit-code table,
help with defaults and examples, the environment variables listed."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import workbench
from workbench.cli import COMMANDS, build_parser, leaf_parsers, main
from workbench.cli.conventions import ENVIRONMENT, EXIT_CODES, exit_code_for
from workbench.errors import (
    CommandTimeout,
    ConfigError,
    GpuBusy,
    HostKeyError,
    LockHeld,
    ParseError,
    RestoreError,
    UnitNotFound,
    VariantError,
)

ROOT = Path(__file__).resolve().parents[3]
TRACEBACKS = ROOT / "tests" / "fixtures" / "tracebacks"


def test_global_option_before_or_after_the_subcommand() -> None:
    parser = build_parser()
    for argv in (["--ssh-config", "/c", "status", "gpu-a"], ["status", "gpu-a", "--ssh-config", "/c"],
                 ["status", "--ssh-config=/c", "gpu-a"]):
        assert parser.parse_args(argv).ssh_config == "/c", argv
    assert parser.parse_args(["status", "gpu-a"]).ssh_config is None
    nested = parser.parse_args(["testbed", "status", "--ssh-config", "/d"])
    assert nested.ssh_config == "/d"
    for command in ("journal", "tracebacks", "bench", "run", "variant", "report"):
        assert "--ssh-config" in {o for a in _parser(parser, command)._actions for o in a.option_strings}


def _parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"workbench {workbench.__version__}"


def test_every_option_has_help_and_every_command_examples() -> None:
    parser = build_parser()
    leaves = leaf_parsers(parser)
    assert len(leaves) >= len(COMMANDS) + 3  # status/start/stop/restart/variant, testbed up/status/down
    for p in leaves:
        assert "examples:" in (p.epilog or ""), f"{p.prog}: no examples in its epilog"
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and action.help.strip(), f"{p.prog} {action.option_strings or action.dest}: no help"
        text = " ".join(p.format_help().split())
        for action in p._actions:  # an option's non-trivial default is shown
            if action.option_strings and action.default not in (None, False, True, [], "", argparse.SUPPRESS):
                assert "default" in (action.help or "").lower() or f"(default: {action.default})" in text.replace("( default", "(default"), (
                    p.prog, action.option_strings)


def test_help_names_the_exit_codes_and_every_environment_variable() -> None:
    text = build_parser().format_help()
    for code, _ in EXIT_CODES:
        assert re.search(rf"^  {code}\s", text, re.M), code
    used = set()
    for path in [*(ROOT / "workbench").rglob("*.py"), ROOT / "tests" / "conftest.py", ROOT / "Makefile"]:
        used |= set(re.findall(r"\bWORKBENCH_[A-Z_]+\b", path.read_text(encoding="utf-8")))
    listed = {name for name, _ in ENVIRONMENT}
    assert used <= listed, f"not listed in --help: {sorted(used - listed)}"
    assert all(name in text for name in listed)


def test_readme_has_the_same_exit_codes_and_variables() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Exit codes and environment", 1)[1].split("\n## ", 1)[0]
    for code, _ in EXIT_CODES:
        assert re.search(rf"^\| {code} \|", section, re.M), code
    for name, _ in ENVIRONMENT:
        assert f"`{name}`" in section, name


@pytest.mark.parametrize(("error", "code"), [
    (ConfigError("x"), 2), (ParseError("x"), 2), (UnitNotFound("x"), 2),
    (HostKeyError("x"), 3), (CommandTimeout("x"), 3), (LockHeld("x"), 3), (GpuBusy("x"), 3),
    (RestoreError("x"), 1), (VariantError("x"), 1), (KeyboardInterrupt(), 130),
])
def test_error_classes_map_to_one_table(error: BaseException, code: int) -> None:
    assert exit_code_for(error) == code
    assert code in {c for c, _ in EXIT_CODES}


def test_usage_errors_exit_2_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["status"])  # argparse: missing HOST
    assert exc.value.code == 2
    assert main([]) == 2
    assert main(["bench", "--url", "http://127.0.0.1:9", "--concurrency", "x"]) == 2
    assert main(["run", "no-such-runbook"]) == 2
    assert main(["journal", "local", "u", "--lines", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--concurrency must be comma-separated integers" in err and "unknown runbook" in err


def test_tracebacks_exit_1_when_it_finds_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = tmp_path / "clean.log"
    clean.write_text("[2025-01-23 19:35:33] The server is fired up and ready to roll!\n")
    assert main(["tracebacks", str(clean)]) == 0
    assert main(["tracebacks", str(TRACEBACKS / "sglang_tp8_nccl_init_remote_exit.log")]) == 1
    assert main(["tracebacks", str(TRACEBACKS / "sglang_tp8_nccl_init_remote_exit.log"), "--json"]) == 1
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{"):])["failures"]  # --json: stdout is the JSON object only


class _Failing(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that answers the model list and the non-streamed prompt probes
    but fails every streamed generation (HTTP 500), as a server with a broken decode path does."""

    def _json(self, obj: object) -> None:
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._json({"data": [{"id": "m"}]})

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if not req.get("stream"):
            self._json({"choices": [{"text": "x"}], "usage": {"prompt_tokens": 2 + len(req["prompt"].split())}})
            return
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def failing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_bench_exits_1_when_every_request_of_a_point_failed(failing_server: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "--url", failing_server, "--concurrency", "1", "--num-requests", "2", "--warmup", "0",
               "--requests-per-concurrency", "1", "--no-progress"])
    assert rc == 1
    assert "every request failed at c=1 repeat 0" in capsys.readouterr().err


def test_python_m_workbench_cli_is_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "--version"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and done.stdout.startswith("workbench ")
