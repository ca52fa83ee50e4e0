"""The panel in a real browser: JupyterLab on loopback, Debian's Chromium driven by Playwright.

JupyterLab serves a temporary copy of notebooks/ (token auth, 127.0.0.1 only); Chromium
runs headless from /usr/bin/chromium, started here and reached over the DevTools protocol,
so both processes are ours and are ended by PID. The test opens notebooks/workbench.ipynb,
runs its cell, and clicks through the panel against gpu-b of the testbed: status, start and
stop (confirmed), a short benchmark, a variant plan and a run that fails in
cuda_graph_capture, that invocation's journal and its tracebacks, the runs, live GPU charts; first the fleet. Each step asserts on
what the page shows and leaves a screenshot in artifacts/screenshots/. The host is left
as it was found.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.testbed.ports import free_port

pytestmark = [pytest.mark.browser, pytest.mark.testbed]

ROOT = Path(__file__).parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
HOST = "gpu-b"
UNIT = "sglang-k26-ddtree.service"
# Stopped: inactive, or failed by signal -- SGLang's parent SIGKILLs itself when a scheduler child
# ends first (systemd's SIGTERM reaches the whole cgroup at once), as the real server does.
STOPPED = re.compile(r"inactive|failed \(failed\), result signal")
LONG = 420_000  # ms: an action may first wait for another session's lock on the host


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End a process group we started, by its leader's PID."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@contextlib.contextmanager
def jupyterlab(tmp_path: Path, env: dict[str, str]) -> Iterator[str]:
    """JupyterLab on 127.0.0.1 over a copy of notebooks/ with ``env``; yields the notebook's URL (with token)."""
    root = tmp_path / "lab"
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    (root / "data").mkdir()
    port, token = free_port(), secrets.token_hex(16)
    env = {**env, "JUPYTER_CONFIG_DIR": str(tmp_path / "jcfg"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "jrt"),
           "PYTHONUNBUFFERED": "1"}
    log = (tmp_path / "lab.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         f"--LabApp.user_settings_dir={tmp_path / 'settings'}", f"--LabApp.workspaces_dir={tmp_path / 'ws'}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly", *(["--allow-root"] if os.geteuid() == 0 else [])],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True)
    try:
        import httpx

        deadline = time.monotonic() + 120
        while True:  # readiness: the server answers its status API
            assert proc.poll() is None, (tmp_path / "lab.log").read_text()[-3000:]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "JupyterLab did not come up within 120 s"
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/lab/tree/notebooks/workbench.ipynb?token={token}"
    finally:
        _stop(proc)
        log.close()


@pytest.fixture
def lab(tmp_path: Path, ssh_config: str) -> Iterator[str]:
    """JupyterLab whose kernels reach the testbed by its ssh_config."""
    with jupyterlab(tmp_path, {**os.environ, "WORKBENCH_SSH_CONFIG": ssh_config}) as url:
        yield url


@pytest.fixture
def page(tmp_path: Path) -> Iterator[object]:
    """A page of Debian's Chromium (our process, reached over CDP), 1400x1000."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make sysdeps` installs Debian's chromium")
    proc = subprocess.Popen([CHROMIUM, *CHROMIUM_FLAGS, "--remote-debugging-port=0",
                             f"--user-data-dir={tmp_path / 'chromium'}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stderr is not None
        ws = ""
        for raw in proc.stderr:  # Chromium announces its DevTools endpoint on stderr
            m = re.search(rb"DevTools listening on (ws://\S+)", raw)
            if m:
                ws = m.group(1).decode()
                break
        assert ws, "Chromium did not start its DevTools endpoint"
        with sync_playwright() as pw:
            browser = pw.chromium.connect_over_cdp(ws)
            context = browser.contexts[0] if browser.contexts else browser.new_context()
            pg = context.new_page()
            pg.set_viewport_size({"width": 1400, "height": 1000})
            try:
                yield pg
            finally:
                with contextlib.suppress(Exception):
                    browser.close()
    finally:
        _stop(proc)


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    news = page.locator(".jp-Notification-Toast", has_text="Jupyter news")
    if news.count():  # JupyterLab's first-run question; only tidies the screenshots
        news.get_by_role("button", name="No").click()
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _tab(page, title: str) -> None:
    page.locator(".wb-tabs .lm-TabBar-tab", has_text=title).first.click()


def _done(page, bar: str, timeout: float = LONG) -> None:
    """Wait until the tab's task has finished (its status line says done)."""
    from playwright.sync_api import expect

    expect(page.locator(f".wb-{bar}-status")).to_contain_text(": done", timeout=timeout)


def _active(host) -> bool:
    return host.run(["systemctl", "is-active", "--quiet", UNIT]).ok


def _put_back(host, was_active: bool) -> None:
    """Leave the unit as found, whatever the test did (under the host lock, waiting for it)."""
    from workbench.lock import HostLock
    from workbench.services import SystemdServices
    from workbench.watch import watch_start

    if _active(host) == was_active:
        return
    with HostLock(host, purpose="test_browser: put back", wait=600):
        svc = SystemdServices(host)
        if was_active:
            watch_start(svc, UNIT, timeout=300)
        else:
            svc.stop(UNIT)


def test_panel_in_the_browser(lab, page, host_b):
    from playwright.sync_api import expect

    from workbench.services import SystemdServices

    was_active = _active(host_b)
    started = time.monotonic()
    try:
        page.goto(lab)
        cell = page.locator(".jp-Notebook .jp-Cell").first
        expect(cell).to_be_visible(timeout=120_000)
        # run only once the kernel is up (run earlier, JupyterLab asks which kernel to start)
        expect(page.locator(".jp-StatusBar-Widget", has_text="| Idle").first).to_be_visible(timeout=120_000)
        cell.locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        expect(page.locator(".wb-panel")).to_be_visible(timeout=120_000)
        page.locator(".wb-host select").select_option(HOST)
        wait = page.locator(".wb-lockwait input")
        wait.fill("400")
        wait.press("Enter")

        # Fleet: every host's units and lock at a glance, refreshed in the background
        page.locator(".wb-fleet-watch").click()
        fleet = page.locator(".wb-fleet-table")
        expect(fleet).to_contain_text("gpu-a", timeout=60_000)
        expect(fleet).to_contain_text("gpu-b")
        expect(fleet).to_contain_text(UNIT)
        _shot(page, "00-fleet")
        page.locator(".wb-fleet-stop").click()
        expect(page.locator(".wb-fleet-status")).to_contain_text(": cancelled", timeout=60_000)

        # Hosts and services: status, lock holder
        _tab(page, "Hosts and services")
        page.locator(".wb-services-refresh").click()
        expect(page.locator(".wb-services-table")).to_contain_text(UNIT, timeout=60_000)
        expect(page.locator(".wb-services-lock")).to_contain_text("lock:")
        expect(page.locator(".wb-services-table")).to_contain_text("invocation")
        _shot(page, "01-hosts-status")
        page.locator(".wb-services-unit select").select_option(UNIT)
        outcome = page.locator(".wb-services-outcome")
        if was_active:  # stop first (confirmed), so the start below is a real one
            page.locator(".wb-services-stop").click()
            expect(page.locator(".wb-services-question")).to_contain_text("stop")
            page.locator(".wb-services-confirm").click()
            expect(outcome).to_contain_text(STOPPED, timeout=LONG)
            _done(page, "services")
        page.locator(".wb-services-start").click()
        expect(page.locator(".wb-services-question")).to_contain_text(f"start {UNIT} on {HOST}")
        _shot(page, "02-start-confirmation")
        page.locator(".wb-services-confirm").click()
        expect(outcome).to_contain_text("READY", timeout=LONG)
        _done(page, "services")
        expect(page.locator(".wb-services-table")).to_contain_text("running")
        _shot(page, "03-started")

        # Benchmark: concurrency 1,4, tiny windows; charts and the ledger
        _tab(page, "Benchmark")
        page.locator(".wb-bench-concurrency input").fill("1,4")
        page.locator(".wb-bench-requests input").fill("4")
        page.locator(".wb-bench-requests input").press("Enter")
        page.locator(".wb-bench-outputlen input").fill("16")
        page.locator(".wb-bench-outputlen input").press("Enter")
        page.locator(".wb-bench-run").click()
        expect(page.locator(".wb-bench-saved")).to_contain_text("saved to the ledger", timeout=LONG)
        expect(page.locator(".wb-bench-throughput svg")).to_be_visible()
        for chart in ("pareto", "ttft", "itl"):  # the reports' load charts, drawn per point
            expect(page.locator(f".wb-bench-{chart} svg")).to_be_visible()
        expect(page.locator(".wb-bench-table")).to_contain_text("output_throughput")
        _shot(page, "04-benchmark")

        # Stop (confirmed), unless it was running when we came
        _tab(page, "Hosts and services")
        if not was_active:
            page.locator(".wb-services-stop").click()
            page.locator(".wb-services-confirm").click()
            expect(outcome).to_contain_text(STOPPED, timeout=LONG)
            _done(page, "services")
            _shot(page, "05-stopped")

        # Variant: --ep-size 8, the plan, then a run that fails in cuda_graph_capture
        _tab(page, "Variant")
        page.locator(".wb-variant-flag input").fill("--ep-size")
        page.locator(".wb-variant-value input").fill("8")
        page.locator(".wb-variant-add").click()
        expect(page.locator(".wb-variant-edits")).to_contain_text("set --ep-size 8")
        page.locator(".wb-variant-plan").click()
        plan = page.locator(".wb-variant-planview")
        expect(plan).to_contain_text("--ep-size 8", timeout=60_000)
        expect(plan).to_contain_text("daemon-reload")
        _shot(page, "06-variant-plan")
        page.locator(".wb-variant-run").click()
        expect(page.locator(".wb-variant-outcome")).to_contain_text("FAILED in cuda_graph_capture", timeout=LONG)
        timeline = page.locator(".wb-variant-timeline")
        for phase in ("weight_loading", "kv_cache_alloc", "cuda_graph_capture"):
            expect(timeline).to_contain_text(phase)
        expect(page.locator(".wb-variant-outcome")).to_contain_text("host restored")
        _shot(page, "07-variant-failed")

        # Journal: that invocation's lines, then only the AttributeError ones
        _tab(page, "Journal")
        expect(page.locator(".wb-journal-invocation select")).to_contain_text("variant set --ep-size 8")
        page.locator(".wb-journal-load").click()
        expect(page.locator(".wb-journal-counttext")).to_contain_text("line(s)", timeout=60_000)
        expect(page.locator(".wb-journal-view")).to_contain_text("Failed with result")
        include = page.locator(".wb-journal-include input")
        include.fill("AttributeError")
        include.press("Enter")
        expect(page.locator(".wb-journal-view")).to_contain_text("AttributeError: 'NoneType' object")
        _shot(page, "08-journal")

        # Tracebacks: the failure grouped, with its eight ranks and its phase, expanded to frames
        _tab(page, "Tracebacks")
        page.locator(".wb-tracebacks-analyze").click()
        failures = page.locator(".wb-tracebacks-failures")
        expect(failures).to_contain_text("AttributeError", timeout=60_000)
        expect(failures).to_contain_text("TP0 EP0")
        expect(failures).to_contain_text("TP7 EP7")
        expect(failures).to_contain_text("cuda_graph_capture")
        expect(page.locator(".wb-tracebacks-frames")).to_contain_text("topk_ids")
        _shot(page, "09-tracebacks")

        # Variant again, cancelled mid-start: the run ends as cancelled, the host is left as found
        _tab(page, "Variant")
        svc = SystemdServices(host_b)
        base_running = svc.status(UNIT).running
        page.locator(".wb-variant-run").click()
        page.locator(".wb-variant-cancel").click()
        expect(page.locator(".wb-variant-status")).to_contain_text(": cancelled", timeout=LONG)
        expect(page.locator(".wb-variant-outcome")).to_contain_text("host restored")
        _shot(page, "10-variant-cancelled")
        assert svc.variant_files() == {} and svc.status(UNIT).running is base_running
        assert not [u for u in host_b.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "*-wb-*"]
                                          ).stdout.splitlines() if u.strip()]

        # Runs: the benchmark is in the ledger
        _tab(page, "Runs")
        page.locator(".wb-runs-refresh").click()
        expect(page.locator(".wb-runs-table")).to_contain_text("bench", timeout=30_000)
        _shot(page, "11-runs")

        # GPU: live charts of the host's GPUs (its nvidia-smi), power against its limit
        _tab(page, "GPU")
        page.locator(".wb-gpu-start").click()
        expect(page.locator(".wb-gpu-summary")).to_contain_text("GPU 0:", timeout=60_000)
        expect(page.locator(".wb-gpu-summary")).to_contain_text(" W of ")
        expect(page.locator(".wb-gpu-chart svg").first).to_be_visible(timeout=60_000)
        expect(page.locator(".wb-gpu-chart")).to_contain_text("power limit")
        _shot(page, "12-gpu")
        page.locator(".wb-gpu-stop").click()
        expect(page.locator(".wb-gpu-status")).to_contain_text(": cancelled", timeout=60_000)
        for name in ("fleet", "services", "variant", "bench", "journal", "tracebacks", "gpu"):
            assert page.locator(f".wb-{name}-error .wb-error").count() == 0, name
    except Exception:
        with contextlib.suppress(Exception):
            _shot(page, "failure")
        raise
    finally:
        _put_back(host_b, was_active)
    print(f"browser walk-through: {time.monotonic() - started:.0f} s")
