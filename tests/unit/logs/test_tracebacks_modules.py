"""The traceback package: one concern per module, no import circles, the public API as before the split."""

from __future__ import annotations

import ast
from pathlib import Path

import workbench.tracebacks as tb

PKG = Path(tb.__file__).resolve().parent
PUBLIC = {
    "Analysis", "Comparison", "CppException", "Extractor", "Failure", "Final", "Frame", "LogEvent", "RootCause",
    "Traceback", "analysis_of", "analyze", "analyze_stream", "compare", "comparison_to_json", "extract",
    "extract_stream", "extract_tracebacks", "format_summary", "is_pointer", "normalize_message", "signature",
    "to_json",
}


def _imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PKG.glob("*.py"):
        if path.name == "__init__.py":
            continue
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("workbench.tracebacks."):
                deps.add(node.module.rsplit(".", 1)[1])
        graph[path.stem] = deps
    return graph


def test_no_import_circles_between_the_modules() -> None:
    graph = _imports()
    state: dict[str, int] = {}

    def visit(mod: str, path: list[str]) -> None:
        if state.get(mod) == 2:
            return
        assert state.get(mod) != 1, " -> ".join([*path, mod])
        state[mod] = 1
        for dep in graph.get(mod, set()):
            visit(dep, [*path, mod])
        state[mod] = 2

    for mod in graph:
        visit(mod, [])
    # the split itself: the scanner's state machine leans on the stack model, not the reverse
    assert "scan" not in graph["stack"] and "scan" not in graph["chains"] and "scan" not in graph["prefixes"]
    assert {"stack", "chains", "events", "prefixes"} <= graph["scan"]


def test_public_api_is_unchanged() -> None:
    assert set(tb.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(tb, name) is not None


def test_no_module_is_a_grab_bag() -> None:
    for path in PKG.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 600, path.name
