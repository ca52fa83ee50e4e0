"""workbench.importcost: jsonschema's import no longer compiles rfc3987_syntax's grammars, and its ``iri``
format check still works (the real module is imported on first use). In fresh interpreters: the test
process has imported jsonschema long before."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
{first}
import altair, jsonschema, nbformat
loaded = "lark" in sys.modules
checker = jsonschema.FormatChecker()
print(json.dumps({{"lark_at_import": loaded, "valid": checker.conforms("http://example.com/\u00e4", "iri"),
                  "invalid": checker.conforms("http://exa mple", "iri"),
                  "real_after_use": hasattr(sys.modules["rfc3987_syntax"], "__file__")}}))
"""


def probe(first: str) -> dict[str, bool]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(first=first)], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    got: dict[str, bool] = json.loads(out.strip().splitlines()[-1])
    return got


def test_rfc3987_syntax_is_installed_here() -> None:
    """What the test below is about (jupyter-events asks for it): without it there is nothing to put off."""
    import importlib.util

    if importlib.util.find_spec("rfc3987_syntax") is None:
        pytest.fail("rfc3987_syntax is not installed: the deferral has nothing to do here")


def test_importing_workbench_first_puts_the_grammars_off_until_the_iri_check_is_used() -> None:
    got = probe("import workbench")
    assert got == {"lark_at_import": False, "valid": True, "invalid": False, "real_after_use": True}


def test_without_workbench_jsonschema_compiles_them_at_import() -> None:
    """The cost the deferral removes is real in this environment (else the test above proves nothing)."""
    assert probe("")["lark_at_import"] is True


def test_nothing_is_replaced_when_jsonschema_came_first() -> None:
    got = probe("import jsonschema\nimport workbench")
    assert got["lark_at_import"] is True and got["valid"] is True and got["invalid"] is False
