"""Presets (named parameter sets, the old runbook names among them) and `workbench run PATH.ipynb`.

The preset files are the real ones; the notebook runs use a real kernel (no testbed)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from workbench.errors import ConfigError
from workbench.redact import ADDRESS
from workbench.runbooks import execute as ex
from workbench.runbooks import presets
from workbench.runbooks.ab import ABParams
from workbench.runbooks.anynotebook import inferred_model
from workbench.runbooks.bisect import BisectParams
from workbench.runbooks.factorial import FactorialParams
from workbench.runbooks.params import validate
from workbench.runs import Ledger

SEEDS_FACTORS = {"--ep-size": "8", "--enable-nccl-nvls": True, "--enable-flashinfer-allreduce-fusion": True}


# -- presets -----------------------------------------------------------------------------------


def test_the_seeds_runbooks_are_presets_of_the_generic_ones():
    iso = presets.find("factorial", "isolate-ep-vs-nvls")
    assert iso.alias == "isolate_ep_vs_nvls" and iso.params == {"base_unit": "sglang-k26-ddtree.service",
                                                                "factors": SEEDS_FACTORS}
    nvls = presets.find("ab", "test-nvls-on-tp8")
    assert nvls.alias == "test_nvls_on_tp8" and nvls.params["edits"] == {"--enable-nccl-nvls": True}
    assert {a: (p.runbook, p.name) for a, p in presets.aliases().items()} == {
        "isolate_ep_vs_nvls": ("factorial", "isolate-ep-vs-nvls"), "test_nvls_on_tp8": ("ab", "test-nvls-on-tp8")}
    seeds = presets.find("bisect", "seeds-k26")
    assert not seeds.alias and seeds.params == {"base_unit": "sglang-k26-ddtree.service", "edits": SEEDS_FACTORS}
    # a preset names no host: each deployment gives its own, and with one it validates
    for p in presets.every_preset():
        assert not {"host", "hosts"} & set(p.params)
    assert validate(FactorialParams, presets.apply(iso, {"hosts": ["gpu-a"]})).factors == SEEDS_FACTORS
    assert validate(ABParams, presets.apply(nvls, {"hosts": ["gpu-b"]})).model_spec == "kimi-k2.6"
    assert validate(BisectParams, presets.apply(seeds, {"host": "gpu-a"})).edits == SEEDS_FACTORS
    assert validate(BisectParams, presets.apply(seeds, {"hosts": "gpu-[a-b]"})).host == "gpu-a"


def test_preset_resolution_and_its_errors():
    assert presets.resolve("factorial") == ("factorial", None)
    assert presets.resolve("isolate_ep_vs_nvls")[0] == "factorial"
    assert presets.resolve("isolate_ep_vs_nvls", "isolate-ep-vs-nvls")[1] == presets.find("factorial", "isolate-ep-vs-nvls")
    with pytest.raises(ConfigError, match="its presets: isolate-ep-vs-nvls"):
        presets.resolve("factorial", "nvls")
    with pytest.raises(ConfigError, match="is the preset 'isolate-ep-vs-nvls' of 'factorial'"):
        presets.resolve("isolate_ep_vs_nvls", "other")
    with pytest.raises(ConfigError, match="its presets: none"):
        presets.resolve("triage", "x")
    # given parameters win over the preset's
    iso = presets.find("factorial", "isolate-ep-vs-nvls")
    assert presets.apply(iso, {"factors": {"--x": True}})["factors"] == {"--x": True}


def test_a_preset_is_the_default_for_the_bases_it_names():
    seeds = presets.find("bisect", "seeds-k26")
    # the container's name or the unit's, .service optional: the issue-13 contract's line names no edits
    for base in ("sglang-k26-ddtree", "sglang-k26-ddtree.service"):
        assert presets.resolve("bisect", params={"host": "gpu-c", "base_unit": base}) == ("bisect", seeds)
        _, _, got, injected = ex.prepare("bisect", {"host": "gpu-c", "base_unit": base}, data_dir="d")
        assert got.edits == SEEDS_FACTORS and injected["base_unit"] == base  # given wins
    # no default when every parameter it gives is given, for another base, or with no base
    given = {"host": "gpu-a", "base_unit": "sglang-k26-ddtree", "edits": {"--ep-size": "8"}}
    assert presets.resolve("bisect", params=given)[1] is None
    assert presets.resolve("bisect", params={"host": "gpu-a", "base_unit": "my-llama.service"})[1] is None
    assert presets.resolve("bisect", params={"host": "gpu-a"})[1] is None
    # a named preset wins over the default one
    assert presets.resolve("factorial", "isolate-ep-vs-nvls", params={"base_unit": "x"})[1].name == "isolate-ep-vs-nvls"


def test_two_default_presets_for_one_base_are_no_default(tmp_path):
    (tmp_path / "bisect.toml").write_text(
        '[a]\ndefault_for = ["svc-*"]\n[a.params]\nedits = {"--x" = true}\n'
        '[b]\ndefault_for = ["svc-1"]\n[b.params]\nedits = {"--y" = true}\n')
    assert presets.default_for("bisect", {"base_unit": "svc-1.service"}, tmp_path) is None
    assert presets.default_for("bisect", {"base_unit": "svc-2"}, tmp_path).name == "a"
    (tmp_path / "bisect.toml").write_text('[a]\ndefault_for = "svc"\n[a.params]\n')
    with pytest.raises(ConfigError, match="default_for must be a list"):
        presets.presets("bisect", tmp_path)


def test_workbench_run_says_which_default_preset_it_used(tmp_path, capsys, monkeypatch):
    from workbench.cli import main

    seen = {}

    def fake_execute(runbook, params, **kw):  # stops at the seam: nothing touches a host here
        seen.update(runbook=runbook, params=params, preset=kw.get("preset"))
        raise ConfigError("stop here")

    monkeypatch.setattr(ex, "execute", fake_execute)
    assert main(["run", "bisect", "-p", "host", "gpu-c", "-p", "base_unit", "sglang-k26-ddtree",
                 "--data-dir", str(tmp_path)]) == ex.EXIT_BAD_PARAMETERS
    err = capsys.readouterr().err
    assert "edits from the preset 'seeds-k26', the default for sglang-k26-ddtree" in err
    assert seen["params"] == {"host": "gpu-c", "base_unit": "sglang-k26-ddtree"} and seen["preset"] == ""


@pytest.mark.parametrize("text, message", [
    ("[a\nparams = 1", "not valid TOML"),
    ("[a]\nparams = 1", "must be a table"),
    ("[a]\nhost = 'gpu-a'\n[a.params]", "unknown key"),
])
def test_a_bad_preset_file_is_a_clear_error(tmp_path, text, message):
    (tmp_path / "factorial.toml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        presets.presets("factorial", tmp_path)


def test_old_names_and_presets_prepare_the_same_parameters():
    _, path, old, _ = ex.prepare("isolate_ep_vs_nvls", {"hosts": ["gpu-a"]}, data_dir="d")
    name, _, new, injected = ex.prepare("factorial", {"hosts": ["gpu-a"]}, data_dir="d", preset="isolate-ep-vs-nvls")
    assert name == "factorial" and path.name == "factorial.ipynb"
    assert old.model_dump(exclude={"run_id"}) == new.model_dump(exclude={"run_id"})
    assert injected["factors"] == SEEDS_FACTORS and injected["base_unit"] == "sglang-k26-ddtree.service"
    _, _, ab, _ = ex.prepare("test_nvls_on_tp8", {"hosts": ["gpu-b"], "repeats": 2}, data_dir="d")
    assert ab.edits == {"--enable-nccl-nvls": True} and ab.repeats == 2


@pytest.mark.parametrize("argv, message", [
    (["run", "factorial"], "missing required parameter.s. hosts, base_unit, factors"),
    (["run", "isolate_ep_vs_nvls"], "missing required parameter.s. hosts"),
    (["run", "bisect"], "missing required parameter.s. host, base_unit, edits"),
    (["run", "bisect", "--host", "gpu-a"], "missing required parameter.s. base_unit .give it with -p base_unit "
                                           "NAME.; no inference server runs on gpu-a"),
    (["run", "bisect", "--preset", "seeds-k26"], r"missing required parameter.s. host \("),
    (["run", "bisect", "-p", "hosts", "gpu-[a-b]", "-p", "edits", '{"--ep-size": "8"}'],
     r"missing required parameter.s. base_unit \("),
    (["run", "benchmark", "--host", "gpu-b"], "missing required parameter.s. unit .*no inference server runs on gpu-b"),
    (["run", "triage", "--host", "gpu-b"], "missing required parameter.s. unit"),
    (["run", "sweep", "--host", "gpu-a"], "missing required parameter.s. base_unit, grid"),
    (["run", "factorial", "--preset", "nope", "--host", "gpu-a"], "no preset 'nope'"),
])
def test_workbench_run_exits_2_when_required_parameters_are_missing(tmp_path, capsys, monkeypatch, argv, message):
    from workbench.cli import main
    from workbench.runbooks import basepick

    # the host's running servers, read where a base is missing: none here (no host is reached)
    monkeypatch.setattr(basepick, "pick", lambda field, host, **kw: basepick.BasePick(field, host, ()))

    assert main([*argv, "--data-dir", str(tmp_path)]) == ex.EXIT_BAD_PARAMETERS
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "runs").exists()


def test_required_parameters_show_in_the_notebook_as_required():
    cell = nbformat.read(str(ex.resolve("factorial")[1]), as_version=4).cells[1].source
    assert "hosts: list[str] = None  # required:" in cell and "base_unit: str = None  # required:" in cell


# -- any notebook ------------------------------------------------------------------------------


def user_notebook(path: Path, body: str, params: str = 'greeting = "hello"\ncount = 2\nratio = 0.5\nitems = [1, 2]\n'
                  'address = "10.9.8.7"  # where to look') -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cells = [nbformat.v4.new_markdown_cell("# My study")]
    if params:
        cells.append(nbformat.v4.new_code_cell(params, metadata={"tags": ["parameters"]}))
    cells.append(nbformat.v4.new_code_cell(body))
    nb.cells = cells
    nbformat.write(nb, str(path))
    return path


def test_a_parameter_model_is_read_from_the_parameters_cell(tmp_path):
    model = inferred_model(user_notebook(tmp_path / "study.ipynb", "pass"))
    fields = model.model_fields
    assert [fields[n].annotation for n in ("greeting", "count", "ratio", "items")] == [str, int, float, list]
    assert fields["address"].description == "where to look"
    assert validate(model, {"count": "3"}).count == 3
    with pytest.raises(ConfigError, match="unknown parameter"):
        validate(model, {"cuont": 3})
    with pytest.raises(ConfigError, match="count"):
        validate(model, {"count": "many"})
    with pytest.raises(ConfigError, match="no cell tagged 'parameters'"):
        inferred_model(user_notebook(tmp_path / "bare.ipynb", "pass", params=""))


def test_any_notebook_runs_with_a_run_directory_ledger_sanitising_and_report(tmp_path):
    path = user_notebook(tmp_path / "my_study.ipynb", "print(f'{greeting} x{count} at {address}')\nitems")
    out = ex.execute(path, {"count": "3"}, data_dir=tmp_path / "data", progress=False, timeout=60)
    assert out.ok and out.exit_code == 0 and out.result["runbook"] == "my_study"
    assert out.conclusion == "my_study.ipynb ran to its end (it wrote no result.json)."
    assert {p.name for p in out.run_dir.iterdir()} >= {"notebook.ipynb", "report.html", "result.json"}
    text = out.notebook.read_text()
    assert "hello x3 at" in text and "10.9.8.7" not in text and ADDRESS in text
    assert "10.9.8.7" not in out.report.read_text()
    assert out.run_dir in Ledger(tmp_path / "data").run_dirs()


def test_a_failing_notebook_exits_1_and_a_bad_parameter_2(tmp_path, capsys):
    from workbench.cli import main

    path = user_notebook(tmp_path / "broken.ipynb", "raise ValueError('no luck')")
    out = ex.execute(path, {}, data_dir=tmp_path / "data", progress=False, timeout=60)
    assert out.kind == "cell_error" and out.exit_code == 1 and "no luck" in out.result["failure"]["message"]
    assert out.report is not None and out.report.exists()
    assert main(["run", str(path), "-p", "count", "many", "--data-dir", str(tmp_path / "d2")]) == 2
    assert "count" in capsys.readouterr().err and not (tmp_path / "d2").exists()
    assert main(["run", str(path), "--preset", "x", "--data-dir", str(tmp_path / "d2")]) == 2


@pytest.mark.parametrize("name", ex.runbooks())
def test_every_parameters_cell_runs_as_the_kernel_runs_it(name):
    """Annotations of a module-level assignment are evaluated: a type the kernel lacks is a NameError."""
    nb = nbformat.read(str(ex.resolve(name)[1]), as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    exec(compile(cell.source, f"{name}:parameters", "exec"), {})


def test_the_kernel_draws_svg_and_has_not_compiled_rfc3987_grammars(tmp_path):
    """The kernel's set-up imports workbench before altair (execute.KERNEL_SETUP): altair's jsonschema then
    leaves rfc3987_syntax's grammars uncompiled (workbench.importcost: 1.5 s a kernel), and charts are SVG."""
    path = user_notebook(tmp_path / "probe.ipynb",
                         "import sys\nprint('lark', 'lark' in sys.modules, 'renderer', altair.renderers.active)")
    out = ex.execute(path, {}, data_dir=tmp_path / "data", progress=False, timeout=60)
    assert out.ok, out.result.get("failure")
    assert "lark False renderer svg" in out.notebook.read_text()
