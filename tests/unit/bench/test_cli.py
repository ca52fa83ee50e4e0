"""``workbench bench`` end to end against the fixed-schedule server."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from workbench.cli import main
from workbench.cli.bench import parse_concurrency, parse_labels
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
        (["bench", "--concurrency", "1"], "give --url URL, or HOST URL"),
        (["bench", "--url", "http://127.0.0.1:9", "--concurrency", "0"], "integers >= 1"),
        (["bench", "--url", "http://127.0.0.1:9", "--label", "novalue"], "KEY=VALUE"),
        (["bench", "--url", "http://127.0.0.1:9", "--rates", "0"], "numbers > 0"),
        (["bench", "local", "sglang-k26.service"], "resolving a unit's port is not available yet"),
    ],
)
def test_bad_command_lines_say_what_to_do(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 1
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
