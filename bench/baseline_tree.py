"""A baseline revision's files beside this tree, for the benches that run both in one go."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def export_tree(rev: str, dest: Path, *paths: str) -> Path:
    """``paths`` of the repository as ``rev`` has them, written under ``dest`` (``git archive``); ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *paths], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest
