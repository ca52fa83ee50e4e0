"""The public names other modules (runbooks, widgets, the CLI) import from workbench.bench."""

import workbench.bench as bench


def test_public_api_is_pinned() -> None:
    assert sorted(bench.__all__) == sorted([
        "RECORD_KEYS", "SLO", "Ingested", "LoadSpec", "SweepResult", "client_check", "host_runner", "load_results",
        "load_workload", "local_runner", "pareto_front", "read_sweep", "recompute", "request_frame", "run_async", "run_local", "run_on_host",
        "run_sweep", "summarize", "write_sweep",
    ])
    assert all(hasattr(bench, name) for name in bench.__all__)
