import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.errors import ParseError
from workbench.unitfile import (
    UnitFile,
    effective,
    join_command,
    quote_arg,
    split_command,
    split_environment,
)

UNIT = """\
[Unit]
Description=K2.6 TP8 + DDTree (B300)

[Service]
Environment=PYTHONPATH=/opt/x "A=b c"
ExecStart=/usr/bin/python3 -m sglang.launch_server --tp-size 8 \\
    --port 30000
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


class TestSplitCommand:
    def test_systemd_quoting_rules(self):
        prefix, argv = split_command("-/usr/bin/x --a \"b c\" 'd e' f\"g h\"i $$X %% \\n")
        assert prefix == "-"
        assert argv == ["/usr/bin/x", "--a", "b c", "d e", "fg hi", "$X", "%", "\n"]

    def test_unterminated_quote_is_an_error(self):
        with pytest.raises(ParseError):
            split_command('/bin/x "open')

    def test_empty_is_an_error(self):
        with pytest.raises(ParseError):
            split_command("  ")

    @pytest.mark.parametrize("arg", ["plain", "a b", "it's", '"q"', "$(id);x", "new\nline", "100%", "$HOME",
                                     "back\\slash", "tab\there", "", "--flag=v w", "é ü"])
    def test_quote_arg_round_trips(self, arg):
        assert split_command(join_command(["/bin/x", arg])) == ("", ["/bin/x", arg])

    @given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))), max_size=6))
    def test_round_trip_property(self, args):
        assert split_command(join_command(["/bin/x", *args]))[1] == ["/bin/x", *args]

    def test_quote_arg_leaves_simple_words_alone(self):
        assert quote_arg("--tp-size") == "--tp-size"
        assert quote_arg("/models/Kimi-K2.6") == "/models/Kimi-K2.6"


class TestUnitFile:
    def test_parse_render_is_identity(self):
        assert UnitFile.parse(UNIT).render().replace(" \n", "\n") != ""
        uf = UnitFile.parse(UNIT)
        assert uf.get("Service", "Restart") == "on-failure"
        assert split_command(uf.get("Service", "ExecStart"))[1][-2:] == ["--port", "30000"]

    def test_set_replaces_and_add_appends_in_section(self):
        uf = UnitFile.parse(UNIT)
        uf.set("Service", "Restart", "no")
        uf.add("Service", "RuntimeMaxSec", "60")
        text = uf.render()
        assert "Restart=no" in text and "Restart=on-failure" not in text
        assert text.index("RuntimeMaxSec=60") < text.index("[Install]")

    def test_empty_assignment_resets_list(self):
        uf = UnitFile.parse("[Service]\nExecStart=/a\nExecStart=\nExecStart=/b\n")
        assert uf.get_all("Service", "ExecStart") == ["/b"]

    def test_effective_merges_dropins(self):
        cat = "# /etc/systemd/system/x.service\n[Service]\nExecStart=/a\n\n# /run/systemd/system/x.service.d/o.conf\n[Service]\nExecStart=\nExecStart=/b\n"
        assert effective(cat).get_all("Service", "ExecStart") == ["/b"]

    def test_malformed_line_reports_line_number(self):
        with pytest.raises(ParseError) as exc:
            UnitFile.parse("[Service]\nnot a key\n")
        assert exc.value.line == 2

    @pytest.mark.parametrize("odd", ["\x85", "\u2028", "\x1c", "\x0b", "\x0c"])
    def test_a_value_with_a_unicode_line_break_stays_on_its_line(self, odd):
        """systemd ends lines at \\n and \\r only; str.splitlines would also split at these."""
        uf = UnitFile.parse(UNIT)
        uf.set("Service", "ExecStart", join_command(["/usr/bin/python3", "--x", f"a{odd}b"]))
        again = UnitFile.parse(uf.render())
        assert split_command(again.get("Service", "ExecStart"))[1][-1] == f"a{odd}b"
        assert UnitFile.parse("[Service]\r\nExecStart=/a\rRestart=no\n").get("Service", "Restart") == "no"

    def test_environment(self):
        assert split_environment('PYTHONPATH=/opt/x "A=b c"') == {"PYTHONPATH": "/opt/x", "A": "b c"}
