"""Unit templates installed into testbed hosts (``{name}`` placeholders, rendered by :func:`render_unit`)."""

from __future__ import annotations

from pathlib import Path


def render_unit(template: str, **values: str) -> str:
    text = (Path(__file__).parent / template).read_text()
    lines = [line for line in text.splitlines() if not line.startswith("# Placeholders:")]
    return "\n".join(lines).format(**values) + "\n"
