"""``workbench bench`` end to end against the fixed-schedule server."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from workbench.cli import main
from workbench.cli.bench import parse_concurrency, parse_labels, unit_url
from workbench.errors import ConfigError


def test_url_form_runs_a_sweep_and_writes_it(server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "--url", server, "--concurrency", "1,2", "--num-requests", "2", "--output-len", "4",
               "--input-len", "8", "--warmup", "1", "--label", "variant=baseline", "--out", str(tmp_path), "--no-progress"])
    out = capsys.readouterr()
    assert rc == 0
    lines = out.out.strip().splitlines()
    assert lines[0].split()[:4] == ["concurrency", "rate", "repeat", "completed"] and len(lines) == 3
    results = pd.read_parquet(tmp_path / "results.parquet")
    assert list(results["concurrency"]) == [1, 2] and (results["variant"] == "baseline").all()
    assert list(results["completed"]) == [4, 8]  # max(2, 4 x c)
    assert (tmp_path / "records.jsonl").read_text().count('"kind": "run"') == 2


def test_positional_url_and_host_forms(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", server, "--concurrency", "1", "--num-requests", "1", "--output-len", "2",
                 "--requests-per-concurrency", "1", "--no-progress"]) == 0
    assert main(["bench", "local", server, "--concurrency", "1", "--num-requests", "1", "--output-len", "2",
                 "--requests-per-concurrency", "1", "--no-progress"]) == 0  # the host client, run on host "local"
    assert capsys.readouterr().out.count("concurrency") == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "--concurrency", "1"], "give --url URL, HOST URL"),
        (["bench", "--url", "http://127.0.0.1:9", "--concurrency", "0"], "integers >= 1"),
        (["bench", "--url", "http://127.0.0.1:9", "--label", "novalue"], "KEY=VALUE"),
        (["bench", "--url", "http://127.0.0.1:9", "--rates", "0"], "numbers > 0"),
        (["bench", "local", "not a unit"], "neither a URL nor a unit name"),
    ],
)
def test_bad_command_lines_say_what_to_do(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2  # usage error
    assert message in capsys.readouterr().err


def test_rates_form(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--url", server, "--rates", "40,80", "--max-concurrency", "2", "--num-requests", "3",
                 "--output-len", "2", "--warmup", "0", "--no-progress"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[:2] for line in lines[1:]] == [["2", "40.00"], ["2", "80.00"]]


def test_parsers() -> None:
    assert parse_concurrency("1, 4,16") == [1, 4, 16]
    with pytest.raises(ConfigError):
        parse_concurrency("a,b")
    assert parse_labels(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}


class _Units:
    """Just enough of a Services backend for ``unit_url``: one unit's text and state."""

    class host:
        name = "gpu-b"

    def __init__(self, active: str) -> None:
        self.active = active

    def unit_text(self, unit: str) -> str:
        return ("[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m --host 0.0.0.0 "
                "--port 30123 --tp-size 8\n")

    def status(self, unit: str) -> object:
        from workbench.systemd import UnitStatus

        return UnitStatus(unit, "loaded", self.active, "running" if self.active == "active" else "dead", "success",
                          None, "", 0, 0, "")


def test_host_unit_form_finds_the_port_in_the_units_execstart() -> None:
    assert unit_url(_Units("active"), "sglang-k26-ddtree.service") == "http://127.0.0.1:30123"  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="is inactive on gpu-b: start it before benchmarking it"):
        unit_url(_Units("inactive"), "sglang-k26-ddtree.service")  # type: ignore[arg-type]
