"""The panel's live load charts in a real browser, without the nspawn testbed: a local testbed of one
host (the process backend: the simulated Kimi K2.6 server as a plain process, on a port of its own,
not 30000), JupyterLab and Debian's Chromium as in test_browser.py. A benchmark from the panel draws
the Pareto (tok/s per user vs tok/s per GPU) and the TTFT and ITL CDFs, the same charts as the reports,
as SVG the page shows; a screenshot is left in artifacts/screenshots/."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import test_browser as tb

pytestmark = [pytest.mark.browser]

page = tb.page  # Chromium over CDP, our process (the fixture of test_browser.py)
HOST = "gpu-a"
BASE = "sglang-k26-ddtree.service"
PORT = 30470  # the simulated server's; 30000 is another cluster's on shared machines


@pytest.fixture
def local_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A local testbed of one host whose base unit serves on PORT; yields its state directory."""
    from workbench.hosts import connect
    from workbench.services import services_for
    from workbench.testbed import local
    from workbench.watch import watch_start

    state = tmp_path / "tb"
    monkeypatch.setenv("WORKBENCH_TESTBED_DIR", str(state))
    monkeypatch.setattr(local, "BASE_PORT", PORT)
    local.up(1, progress=lambda _m: None)
    try:
        out = watch_start(services_for(connect(HOST)), BASE, start=False, timeout=120)
        assert out.ok, out.describe()
        yield state
    finally:
        local.down(progress=lambda _m: None)


@pytest.fixture
def lab_local(tmp_path: Path, local_host: Path) -> Iterator[str]:
    """JupyterLab whose kernels see the local testbed."""
    # no WORKBENCH_SSH_CONFIG: a host named with an ssh_config is reached over SSH, the local one is not
    env = {**{k: v for k, v in os.environ.items() if k != "WORKBENCH_SSH_CONFIG"},
           "WORKBENCH_TESTBED_DIR": str(local_host)}
    with tb.jupyterlab(tmp_path, env) as url:
        yield url


def test_benchmark_draws_pareto_and_latency_cdfs_live(lab_local, page) -> None:
    from playwright.sync_api import expect

    page.goto(lab_local)
    cell = page.locator(".jp-Notebook .jp-Cell").first
    expect(cell).to_be_visible(timeout=120_000)
    expect(page.locator(".jp-StatusBar-Widget", has_text="| Idle").first).to_be_visible(timeout=120_000)
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    expect(page.locator(".wb-panel")).to_be_visible(timeout=120_000)
    page.locator(".wb-host select").select_option(HOST)
    tb._tab(page, "Benchmark")
    page.locator(".wb-bench-concurrency input").fill("1,4")
    page.locator(".wb-bench-requests input").fill("6")
    page.locator(".wb-bench-requests input").press("Enter")
    page.locator(".wb-bench-outputlen input").fill("24")
    page.locator(".wb-bench-outputlen input").press("Enter")
    page.locator(".wb-bench-run").click()
    status = page.locator(".wb-bench-status")
    expect(status).to_contain_text(re.compile(r": (done|failed|cancelled)"), timeout=tb.LONG)
    errors = page.locator(".wb-error-text")
    assert ": done" in status.inner_text(), errors.all_inner_texts()
    expect(page.locator(".wb-bench-saved")).to_contain_text("saved to the ledger")
    for name in ("pareto", "ttft", "itl"):
        expect(page.locator(f".wb-bench-{name} svg")).to_be_visible()
    expect(page.locator(".wb-bench-pareto")).to_contain_text("tok/s per user")
    expect(page.locator(".wb-bench-ttft")).to_contain_text("c=4")
    expect(page.locator(".wb-bench-itl")).to_contain_text("ITL CDF")
    # the server's own /metrics over the run, polled through the host's tunnel (the simulator exports them)
    expect(page.locator(".wb-bench-server svg")).to_be_visible()
    expect(page.locator(".wb-bench-server")).to_contain_text("running requests")
    page.locator(".wb-bench-ttft").scroll_into_view_if_needed()
    tb._shot(page, "10-benchmark-live-load-charts")
