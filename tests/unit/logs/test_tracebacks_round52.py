"""Mechanisms added from misses of held-outs 47-51 (each measured once untuned first), on lines written in the
shapes of real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze

_CLI_CUT = "\n".join((
    "INFO 04-02 09:12:40 [__init__.py:239] Automatically detected platform cuda.",
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/vllm", line 8, in <module>',
    "    sys.exit(main())",
    "             ^^^^^^",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/cli/main.py", line 73, in main',
    "    args.dispatch_function(args)",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/cli/serve.py", line 60, in cmd',
))


def test_a_stack_cut_in_a_servers_launcher_before_readiness_is_start_up() -> None:
    """vllm#42343, inspect_ai#1799: `vllm serve`'s stack through the console script, cut before its exception line,
    no server ready in the window: the launching process died while starting the server."""
    a = analyze(_CLI_CUT + "\n")
    assert a.root_cause is not None and a.root_cause.exception_type is None
    assert a.root_cause.phase == "startup_other" and a.final is not None and a.final.phase == "startup_other"
    # a server that was ready before says nothing about when this stack began: no phase from the launcher
    ready = "\n".join(("INFO 04-02 09:12:40 [api_server.py:1090] Starting vLLM API server 0 on http://0.0.0.0:8000",
                       "INFO:     Started server process [1]", "INFO:     Waiting for application startup.",
                       "INFO:     Application startup complete.", _CLI_CUT)) + "\n"
    assert analyze(ready).root_cause.phase != "startup_other"
    # nor does a benchmark client the same console script ran (vllm bench serve)
    bench = _CLI_CUT.replace("cli/serve.py\", line 60, in cmd", "cli/benchmark/main.py\", line 54, in cmd")
    assert analyze(bench + "\n").root_cause.phase == "unknown"
