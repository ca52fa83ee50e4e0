"""The journalctl queries retrieval runs, and the one-round-trip section format."""

from __future__ import annotations

import pytest

from workbench.errors import ParseError
from workbench.journal import (
    MSG_JOURNAL_DROPPED,
    export_argv,
    invocation_matches,
    manager_matches,
    unit_matches,
    usec_arg,
)
from workbench.journal.fetch import script, split_output


def test_unit_matches_spell_out_dash_u_plus_suppression_records():
    m = unit_matches("x.service")
    terms = " ".join(m).split(" + ")
    assert terms == ["_SYSTEMD_UNIT=x.service", "_PID=1 UNIT=x.service", "_UID=0 OBJECT_SYSTEMD_UNIT=x.service",
                     "MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1 COREDUMP_UNIT=x.service",
                     f"MESSAGE_ID={MSG_JOURNAL_DROPPED}"]
    assert manager_matches("x.service") == ["_PID=1", "UNIT=x.service"]


def test_invocation_matches_or_each_field():
    terms = " ".join(invocation_matches(["a", "b"])).split(" + ")
    assert terms == ["_SYSTEMD_INVOCATION_ID=a _SYSTEMD_INVOCATION_ID=b", "INVOCATION_ID=a INVOCATION_ID=b",
                     "OBJECT_SYSTEMD_INVOCATION_ID=a OBJECT_SYSTEMD_INVOCATION_ID=b", f"MESSAGE_ID={MSG_JOURNAL_DROPPED}"]
    with pytest.raises(ValueError):
        invocation_matches([])


def test_export_argv_starts_at_the_cursor_not_after_it():
    argv = export_argv(["UNIT=x"], cursor="s=1;i=2", since=1_700_000_000_000_001, until="-1h", lines=5)
    assert argv[:5] == ["journalctl", "--no-pager", "-q", "-o", "export"]
    assert "--after-cursor" not in argv
    assert argv[argv.index("--cursor") + 1] == "s=1;i=2"
    assert argv[argv.index("--since") + 1] == "@1700000000.000001"
    assert argv[argv.index("--until") + 1] == "-1h"
    assert argv[-1] == "UNIT=x"
    assert usec_arg(5) == "@0.000005"


def test_script_quotes_every_argument():
    text = script([("main", ["journalctl", "MESSAGE=a b; rm -rf /", "$(x)"])])
    assert "sec main journalctl 'MESSAGE=a b; rm -rf /' '$(x)'" in text
    with pytest.raises(ValueError):
        script([("two words", ["true"])])


@pytest.mark.parametrize("name,compress", [("sections_gzip.txt", True), ("sections_plain.txt", False)])
def test_sections_of_captured_output(fixture_bytes, name, compress):
    one, two = split_output(fixture_bytes(name).decode(), compress=compress)
    assert (one.name, one.data, one.exited, one.ok) == ("one", b"a\nb\n", 0, True)
    assert (two.name, two.data, two.exited, two.stderr) == ("two", b"", 4, "err\n")


def test_garbled_output_is_an_error():
    with pytest.raises(ParseError):
        split_output("@@err stray\n")
    with pytest.raises(ParseError):
        split_output("YQ==\nYg==\n@@end x 0\n", compress=False)
