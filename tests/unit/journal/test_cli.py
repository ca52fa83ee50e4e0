"""``workbench journal`` and ``workbench tracebacks --host/--unit``: arguments (the host parts run in
tests/integration/test_journal.py)."""

from __future__ import annotations

import pytest

from workbench.cli import COMMANDS, build_parser, main
from workbench.cli.journal import _invocation


def test_registered():
    assert "journal" in COMMANDS


def test_arguments():
    args = build_parser().parse_args(["--ssh-config", "/c", "journal", "gpu-a", "sglang", "--invocation", "-2",
                                      "--grep", "Error", "--exclude", "x", "--rank", "TP3", "--rank", "TP1",
                                      "--since=-1h", "--json"])
    assert (args.host, args.unit, args.invocation, args.rank, args.since, args.json) == (
        "gpu-a", "sglang", "-2", ["TP3", "TP1"], "-1h", True)
    assert args.ssh_config == "/c"
    args = build_parser().parse_args(["journal", "h", "u", "--last", "3", "--ssh-config", "/d", "-n", "5", "-f"])
    assert (args.last, args.ssh_config, args.lines, args.follow) == (3, "/d", 5, True)
    assert [_invocation(v) for v in (None, "last", "-1", "0", "0c1d")] == [None, "last", -1, 0, "0c1d"]


def test_choices_exclude_each_other(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["journal", "h", "u", "--last", "2", "--invocation", "last"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["journal", "h", "u", "--json", "--text"])


def test_tracebacks_host_needs_unit_and_no_file(capsys):
    assert main(["tracebacks", "--host", "gpu-a"]) == 2  # usage error
    assert "--host and --unit go together" in capsys.readouterr().err
    assert main(["tracebacks", "some.log", "--host", "h", "--unit", "u"]) == 2
    assert "not both" in capsys.readouterr().err


def test_jobs_below_one_is_refused_before_any_host(capsys, monkeypatch):
    from workbench.cli import journal as cli_journal

    monkeypatch.setattr(cli_journal, "_services", lambda *a, **k: pytest.fail("no host for bad input"), raising=False)
    assert main(["journal", "gpu-a", "sglang.service", "--jobs", "0"]) == 2
    assert "--jobs needs 1 or more" in capsys.readouterr().err
    assert build_parser().parse_args(["journal", "h", "u"]).jobs is None  # chosen by the reader


def test_auto_jobs_slices_only_a_long_ended_invocation():
    from workbench.journal.journald import AUTO_JOBS, AUTO_MIN_SPAN_US, auto_jobs

    assert auto_jobs(None) == 1  # still running, or a window the caller bounded: one read
    assert auto_jobs((10, 10 + AUTO_MIN_SPAN_US - 1)) == 1
    assert auto_jobs((10, 10 + AUTO_MIN_SPAN_US)) == AUTO_JOBS == 4
