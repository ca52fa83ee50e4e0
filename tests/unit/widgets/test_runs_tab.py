"""Runs tab: the ledger listed, a report opened inline, a runbook rerun with its parameters."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from workbench.errors import ConfigError
from workbench.runs import Run
from workbench.widgets.runs_tab import RunsTab, rerun_params

from .fakes import FakeContext


def make_run(tmp_path, runbook, params, report=True):
    run = Run.create(runbook, data_dir=tmp_path)
    run.write_result({"status": "ok", "host": "gpu-b", "params": params, "conclusion": f"{runbook} concluded"})
    if report:
        (run.dir / "report.html").write_text("<html><body><h1>Report of the run</h1></body></html>")
    return run


def test_list_open_report_and_rerun(tmp_path):
    run = make_run(tmp_path, "bisect", {"host": "gpu-b", "edits": {"--ep-size": "8"}, "run_id": "x",
                                        "data_dir": "elsewhere"})
    calls = []

    def execute(runbook, params, *, data_dir, run_id):
        calls.append((runbook, params, data_dir))
        assert run_id.startswith(f"{runbook}-", 16)  # the panel named the run, to watch its directory
        new = make_run(tmp_path, runbook, params)
        return SimpleNamespace(run_id=new.id, conclusion="again")

    tab = RunsTab(FakeContext(tmp_path), execute=execute)
    tab.refresh_button.click()
    assert run.id in tab.table.value and tab.run_id.value == run.id
    tab.report_button.click()
    assert "bisect concluded" in tab.detail.value and "Report of the run" in tab.report.value
    assert "srcdoc" in tab.report.value
    tab.rerun_button.click()
    assert tab.confirm_box.layout.display == "flex" and calls == []  # asks first
    tab.confirm_button.click()
    assert tab.wait(10).state == "done"
    assert calls == [("bisect", {"host": "gpu-b", "edits": {"--ep-size": "8"}}, tmp_path)]
    assert len(tab.runs) == 2 and "again" in tab.detail.value


def test_bench_runs_are_not_rerun(tmp_path):
    make_run(tmp_path, "bench", {"concurrencies": [1]}, report=False)
    tab = RunsTab(FakeContext(tmp_path), execute=lambda *a, **k: None)
    tab.refresh()
    tab.rerun_button.click()
    assert "not made by a runbook" in tab.bar.error.value
    assert tab.open_report(tab.run_id.value) is None and "no report" in tab.report.value


def test_empty_ledger_and_bad_run(tmp_path):
    tab = RunsTab(FakeContext(tmp_path))
    tab.refresh()
    assert "no runs" in tab.table.value
    with pytest.raises(ConfigError):
        tab.open_report("")
    (tmp_path / "runs" / "broken").mkdir(parents=True)
    tab.refresh()
    with pytest.raises(ConfigError):
        tab.open_report("broken")


def test_rerun_params_drop_run_id_and_data_dir():
    assert rerun_params({"params": {"run_id": "a", "data_dir": "b", "host": "h"}}) == {"host": "h"}
    assert json.dumps(rerun_params({})) == "{}"


def test_runs_made_by_the_cli_elsewhere_are_listed_after_choosing_their_data_dir(tmp_path):
    panel_dir, cli_dir = tmp_path / "notebooks" / "data", tmp_path / "cli-data"
    panel_dir.mkdir(parents=True)
    run = make_run(cli_dir, "bisect", {"host": "gpu-b"})
    tab = RunsTab(FakeContext(panel_dir))
    tab.refresh()
    assert tab.runs.empty
    tab.data_dir.value = str(cli_dir)
    tab.refresh_button.click()  # the field's directory is read
    assert run.id in tab.table.value and tab.ctx.data_dir == cli_dir
    tab.data_dir.value = str(tmp_path / "nope")
    tab.refresh_button.click()
    assert "not a directory" in tab.bar.error.value and tab.ctx.data_dir == cli_dir


def test_the_default_data_dir_is_found_upwards_like_git(tmp_path, monkeypatch):
    from workbench.runs import default_data_dir

    monkeypatch.delenv("WORKBENCH_DATA_DIR", raising=False)
    (tmp_path / "data" / "runs").mkdir(parents=True)
    (tmp_path / "notebooks").mkdir()
    assert default_data_dir(tmp_path / "notebooks") == (tmp_path / "data").resolve()
    assert default_data_dir(tmp_path / "notebooks" / "x") == (tmp_path / "data").resolve()  # need not exist
    lone = tmp_path / "elsewhere"
    lone.mkdir()
    monkeypatch.chdir(lone)
    found = default_data_dir()
    assert found == lone.resolve() / "data" or (found / "runs").is_dir()  # ./data, unless a parent has runs
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "mine"))
    assert default_data_dir(tmp_path / "notebooks") == tmp_path / "mine"


def sweep_tables(configs):
    """A sweep's run tables after ``configs`` configurations (the columns the sweep runbook writes)."""
    import pandas as pd

    res, req, itl = [], [], []
    for i in range(configs):
        for c in (1, 16):
            tags = {"variant": f"config {i}", "concurrency": c}
            res += [{**tags, "config": i, "gpus": 8, "repeat": r, "output_throughput": 100.0 * c * (1 + i),
                     "tpot_p50_ms": 10.0 + c / (1 + i)} for r in range(2)]
            req += [{**tags, "phase": "measure", "ok": True, "ttft_s": 0.01 * c + 0.001 * k} for k in range(4)]
            itl += [{**tags, "itl_s": 0.01 + 0.001 * k} for k in range(8)]
    return pd.DataFrame(res), pd.DataFrame(req), pd.DataFrame(itl)


def test_a_rerun_sweep_draws_its_charts_while_it_runs(tmp_path):
    import time

    make_run(tmp_path, "sweep", {"host": "gpu-b", "grid": {"--x": ["1", "2"]}})
    during: list = []

    def execute(runbook, params, *, data_dir, run_id):
        run = Run.create(runbook, data_dir=data_dir, run_id=run_id)
        for n in (1, 2):  # the runbook rewrites its tables after each configuration
            for name, frame in zip(("results", "requests", "itl"), sweep_tables(n), strict=True):
                run.table(name, frame)
            deadline = time.monotonic() + 10
            want = "config 1" if n == 2 else "<svg"  # one configuration: its lines are named by the point alone
            while want not in tab.live.views["itl"].value and time.monotonic() < deadline:
                time.sleep(0.02)
            during.append({name: view.value for name, view in tab.live.views.items()})
        run.write_result({"status": "ok", "params": params, "conclusion": "swept"})
        return SimpleNamespace(run_id=run.id, conclusion="swept")

    tab = RunsTab(FakeContext(tmp_path), execute=execute, poll_s=0.05)
    tab.refresh()
    tab.request_rerun(tab.run_id.value)
    tab.rerun(tab.run_id.value)
    assert tab.wait(30).state == "done", tab.bar.error.value
    # drawn while the run was still going, from what it had written so far
    assert all("<svg" in during[0][name] for name in ("pareto", "ttft", "itl"))
    assert "config 1" not in during[0]["pareto"] and "config 1" in tab.live.views["pareto"].value
    assert any("live charts: itl, pareto, ttft redrawn" in o.get("text", "") for o in tab.bar.log.outputs)


def test_opening_a_report_shows_the_runs_load_charts(tmp_path):
    run = make_run(tmp_path, "benchmark", {"host": "gpu-b"})
    for name, frame in zip(("results", "requests", "itl"), sweep_tables(1), strict=True):
        run.table(name, frame)
    bisect = make_run(tmp_path, "bisect", {"host": "gpu-b"})
    tab = RunsTab(FakeContext(tmp_path))
    tab.refresh()
    tab.open_report(run.id)
    assert all("<svg" in view.value for view in tab.live.views.values())
    tab.open_report(bisect.id)  # no load tables: no charts, and none left over from the last run
    assert all(view.value == "" for view in tab.live.views.values())
