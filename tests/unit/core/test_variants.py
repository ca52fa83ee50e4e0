import pytest

from workbench.errors import ConfigError
from workbench.unitfile import UnitFile, split_command
from workbench.variants import Variant, apply_edits, describe_edits, normalize_edits

BASE = ["/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", "/m", "--tp-size", "8",
        "--cuda-graph-bs", "1", "2", "4", "--trust-remote-code", "--port=30000"]

UNIT = """[Unit]
Description=K2.6 TP8 + DDTree (B300)

[Service]
Type=simple
ExecStart=/usr/bin/python3 -m sglang.launch_server --tp-size 8 --port 30000
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


class TestApplyEdits:
    def test_set_replaces_existing_value(self):
        assert apply_edits(BASE, {"--tp-size": "4"})[5:7] == ["--tp-size", "4"]

    def test_set_appends_missing_flag(self):
        assert apply_edits(BASE, {"--ep-size": "8"})[-2:] == ["--ep-size", "8"]

    def test_true_adds_boolean_flag_once(self):
        out = apply_edits(BASE, {"--enable-nccl-nvls": True})
        assert out.count("--enable-nccl-nvls") == 1 and out[-1] == "--enable-nccl-nvls"
        assert apply_edits(out, {"--enable-nccl-nvls": True}) == out

    def test_none_removes_flag_and_all_its_values(self):
        out = apply_edits(BASE, {"--cuda-graph-bs": None, "--trust-remote-code": None, "--port": None})
        assert "--cuda-graph-bs" not in out and "1" not in out and "--trust-remote-code" not in out
        assert not any(a.startswith("--port") for a in out)

    def test_equals_form_is_replaced(self):
        assert apply_edits(BASE, {"--port": "31000"})[-2:] == ["--port", "31000"]

    def test_list_value(self):
        out = apply_edits(BASE, {"--cuda-graph-bs": ["8", "16"]})
        i = out.index("--cuda-graph-bs")
        assert out[i:i + 3] == ["--cuda-graph-bs", "8", "16"] and out[i + 3] == "--trust-remote-code"

    def test_values_with_shell_metacharacters_are_data(self):
        evil = "x; rm -rf / $(id) 'q' \"d\"\nnl"
        assert apply_edits(BASE, {"--served-model-name": evil})[-1] == evil

    @pytest.mark.parametrize("bad", ["ep-size", "--ep size", "--a=b", "-"])
    def test_bad_flags_rejected(self, bad):
        with pytest.raises(ConfigError):
            normalize_edits({bad: "1"})

    def test_bad_value_rejected(self):
        with pytest.raises(ConfigError):
            normalize_edits({"--x": {"a": 1}})  # type: ignore[dict-item]

    def test_describe(self):
        assert describe_edits(normalize_edits({"--ep-size": 8, "--enable-nccl-nvls": True, "--x": None})) == \
            "--ep-size 8, --enable-nccl-nvls, no --x"


class TestVariant:
    def make(self, **edits):
        return Variant.build("sglang-k26-ddtree.service", UNIT, edits or {"--ep-size": "8", "--enable-nccl-nvls": True})

    def test_render_edits_execstart_and_adds_safety(self):
        v = self.make()
        uf = UnitFile.parse(v.render())
        argv = split_command(uf.get("Service", "ExecStart"))[1]
        assert argv[-3:] == ["--ep-size", "8", "--enable-nccl-nvls"]
        assert uf.get("Service", "Restart") == "no"
        assert uf.get("Service", "Type") == "exec"
        assert int(uf.get("Service", "RuntimeMaxSec")) > 0
        assert uf.get("Unit", "X-WorkbenchVariantOf") == "sglang-k26-ddtree.service"
        assert "[Install]" not in v.render()

    def test_name_is_stable_and_depends_on_edits_and_base(self):
        assert self.make().name == self.make().name
        assert self.make().name != self.make(**{"--ep-size": "4"}).name
        other = Variant.build("sglang-k26-ddtree.service", UNIT + "\n# changed\n", {"--ep-size": "8", "--enable-nccl-nvls": True})
        assert other.name != self.make().name
        assert self.make().name.startswith("sglang-k26-ddtree-wb-") and self.make().name.endswith(".service")

    def test_edit_order_does_not_change_identity(self):
        a = Variant.build("b.service", UNIT, [("--a", "1"), ("--b", True)])
        b = Variant.build("b.service", UNIT, [("--b", True), ("--a", "1")])
        assert a.name == b.name

    def test_env_edits(self):
        v = Variant.build("b.service", UNIT, {}, env={"NCCL_DEBUG": "INFO x", "OLD": None})
        text = v.render()
        assert 'Environment="NCCL_DEBUG=INFO x"' in text and "UnsetEnvironment=OLD" in text

    def test_diff_shows_only_the_changes(self):
        d = self.make().diff()
        assert "+ExecStart=" in d and "-ExecStart=" in d and "-Restart=on-failure" in d

    def test_two_execstarts_refused(self):
        with pytest.raises(ConfigError):
            Variant.build("b.service", UNIT.replace("Restart=on-failure", "ExecStart=/bin/true"), {}).render()
