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
