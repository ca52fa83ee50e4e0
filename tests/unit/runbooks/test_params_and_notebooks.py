import nbformat
import pytest

from workbench.errors import ConfigError
from workbench.runbooks.bisect import BisectParams
from workbench.runbooks.notebooks import RUNBOOKS_DIR, all_notebooks, parameters_source
from workbench.runbooks.params import validate


@pytest.mark.parametrize("name", sorted(all_notebooks()))
def test_committed_notebooks_are_up_to_date(name):
    committed = nbformat.read(RUNBOOKS_DIR / name, 4)
    fresh = all_notebooks()[name]
    assert [c.source for c in committed.cells] == [c.source for c in fresh.cells], \
        "run `python -m workbench.runbooks.notebooks` to regenerate"
    params = [c for c in committed.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and committed.cells.index(params[0]) == 1


@pytest.mark.parametrize("name", sorted(all_notebooks()))
def test_every_parameter_line_is_one_papermill_reads(name):
    """papermill's --help-notebook (and its parameter inspection) skips a line with more than one "=":
    a description must not hold one."""
    (cell,) = [c for c in all_notebooks()[name].cells if "parameters" in c.metadata.get("tags", [])]
    lines = [line for line in cell.source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert [line for line in lines if line.count("=") != 1] == []


def test_parameters_cell_mirrors_the_model():
    src = parameters_source(BisectParams)
    for name in BisectParams.model_fields:
        assert f"\n{name}: " in "\n" + src


def test_validate_accepts_defaults_and_json_text():
    ns = {"host": "gpu-b", "base_unit": "u.service", "edits": '{"--ep-size": "8", "--enable-nccl-nvls": true}',
          "start_timeout": 60}
    p = validate(BisectParams, ns)
    assert p.host == "gpu-b" and p.edits == {"--ep-size": "8", "--enable-nccl-nvls": True}


@pytest.mark.parametrize("ns, message", [
    ({"hots": "gpu-a"}, "unknown parameter"),
    ({"start_timeout": "soon"}, "start_timeout"),
    ({"start_timeout": -1}, "start_timeout"),
    ({"edits": "{not json"}, "not valid JSON"),
    ({"edits": ["--ep-size"]}, "edits"),
])
def test_validate_fails_at_once_with_a_clear_message(ns, message):
    with pytest.raises(ConfigError, match=message):
        validate(BisectParams, ns)


def test_validate_ignores_modules_and_kernel_names():
    import json

    p = validate(BisectParams, {"json": json, "In": [], "Out": {}, "_": None, "host": "gpu-a", "base_unit": "u.service",
                                "edits": {"--ep-size": "8"}})
    assert p.host == "gpu-a"
