"""The JSON of ``workbench tracebacks --json`` against its schema, and the command's exit status."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema
import pytest

from workbench.cli import main
from workbench.tracebacks import analyze, to_json
from workbench.tracebacks.render import json_schema

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "tracebacks"
LOGS = sorted(FIXTURES.glob("*.log")) + sorted((FIXTURES / "corpus").glob("*/*.log"))


@functools.cache
def validator() -> jsonschema.protocols.Validator:
    """One validator for the whole module: ``jsonschema.validate`` checks the schema itself on every call
    (and the schema was derived again for each of the 3,000 logs): 46 of every 50 ms went there."""
    schema = json_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_the_committed_schema_is_the_one_the_model_gives() -> None:
    committed = json.loads((ROOT / "docs" / "tracebacks.schema.json").read_text())
    assert committed == json_schema(), "regenerate docs/tracebacks.schema.json: workbench tracebacks --schema"


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_real_output_validates(log: Path) -> None:
    doc = to_json(analyze(log.read_bytes().decode("utf-8", "replace")))
    validator().validate(json.loads(json.dumps(doc)))


def test_the_schema_rejects_a_wrong_object() -> None:
    doc = json.loads(json.dumps(to_json(analyze((FIXTURES / "captured_cuda_oom_single.log").read_text()))))
    doc["root_cause"]["phase"] = "lunch"
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(doc)


def test_exit_status_is_1_when_a_failure_is_found(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tracebacks", str(FIXTURES / "captured_cuda_oom_single.log")]) == 1
    assert "OutOfMemoryError" in capsys.readouterr().out


def test_exit_status_is_0_when_none_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "clean.log"
    log.write_text("[2025-05-30 15:02:13 TP0] Load weight begin. avail mem=78.00 GB\n"
                   "[2025-05-30 15:03:13] The server is fired up and ready to roll!\n")
    assert main(["tracebacks", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["root_cause"] is None


def test_exit_status_is_2_on_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tracebacks", str(tmp_path / "missing.log")]) == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["tracebacks", "--no-such-flag"])
    assert exc.value.code == 2


def test_schema_flag_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tracebacks", "--schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json_schema()


def test_exit_status_is_3_on_a_host_problem(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import workbench.hosts as hosts
    from workbench.errors import ConnectError

    def unreachable(host: str, **_kw: object) -> None:
        raise ConnectError(f"{host}: connection refused")

    monkeypatch.setattr(hosts, "connect", unreachable)
    assert main(["tracebacks", "--host", "gpu-x", "--unit", "sglang.service"]) == 3
    assert "connection refused" in capsys.readouterr().err


def test_exit_status_is_2_when_host_comes_without_unit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tracebacks", "--host", "gpu-x"]) == 2
    assert "--host and --unit go together" in capsys.readouterr().err


def test_exit_codes_are_documented() -> None:
    doc = (ROOT / "docs" / "tracebacks.md").read_text()
    for code in ("**0**", "**1**", "**2**", "**3**"):
        assert code in doc
    from workbench.cli import tracebacks as cli_tracebacks

    assert "3 host problem" in (cli_tracebacks.__doc__ or "") and "3 host problem" in cli_tracebacks.EXAMPLES

