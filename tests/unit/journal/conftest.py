"""Captured journal output (tests/fixtures/journal, see capture.py there)."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "journal"


@pytest.fixture
def fixture_bytes():
    return lambda name: (FIXTURES / name).read_bytes()
