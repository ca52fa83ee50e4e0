"""``hosts`` takes ranges and inventory groups wherever a runbook accepts it, checked before any host."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.runbooks import params as params_mod
from workbench.runbooks.ab import ABParams
from workbench.runbooks.bisect import BisectParams
from workbench.runbooks.factorial import FactorialParams


@pytest.fixture
def inventory(tmp_path, monkeypatch):
    path = tmp_path / "inventory.toml"
    path.write_text('[groups]\npair = ["gpu-[a-b]"]\nfleet = ["@pair", "gpu-c"]\n')
    monkeypatch.setenv("WORKBENCH_INVENTORY", str(path))
    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(tmp_path / "no-testbed"))
    return path


BISECT = {"base_unit": "u.service", "edits": {"--ep-size": "8"}}


@pytest.mark.parametrize("model", [BisectParams, FactorialParams, ABParams])
@pytest.mark.parametrize(("given", "want"), [
    ("gpu-[a-b]", ["gpu-a", "gpu-b"]),
    ("@pair", ["gpu-a", "gpu-b"]),
    ("@fleet", ["gpu-a", "gpu-b", "gpu-c"]),
    ('["gpu-b", "@pair"]', ["gpu-b", "gpu-a"]),
    ("gpu-a,gpu-[b-c]", ["gpu-a", "gpu-b", "gpu-c"]),
])
def test_ranges_and_groups_expand_as_notebook_parameters(inventory, model, given, want):
    required = {BisectParams: BISECT, FactorialParams: {"base_unit": "u.service", "factors": {"--ep-size": "8"}},
                ABParams: {"base_unit": "u.service", "edits": {"--ep-size": "8"}, "repeats": 4}}[model]
    got = params_mod.validate(model, {"hosts": given, **required})
    assert got.hosts == want


def test_a_list_given_in_python_expands_too(inventory):
    got = BisectParams(hosts=["@pair"], **BISECT)
    assert got.hosts == ["gpu-a", "gpu-b"] and got.host == "gpu-a"  # the host: the first of them
    alone = BisectParams(host="gpu-b", **BISECT)
    assert alone.hosts == [] and alone.host == "gpu-b"  # empty: the host parameter alone


@pytest.mark.parametrize(("given", "words"), [
    ("@nope", "unknown host group 'nope'"),
    ("gpu-[b-a]", "gpu-[b-a]"),
    ("bad name!", "not a valid host name"),
])
def test_a_bad_host_list_is_a_parameter_error(inventory, given, words):
    with pytest.raises(ConfigError, match="invalid parameters for BisectParams: hosts") as err:
        params_mod.validate(BisectParams, {"hosts": given, **BISECT})
    assert words in str(err.value)
