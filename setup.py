"""Build hook: the runbook notebooks (top-level ``runbooks/``, their one source) go into the wheel.

``runbooks/*.ipynb`` are copied to ``workbench/runbooks/ipynb/`` of the built package, where
``workbench.runbooks.notebooks.RUNBOOKS_DIR`` finds them in a non-editable install; a checkout
(and an editable install) reads ``runbooks/`` itself.  Everything else is in pyproject.toml.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithRunbooks(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads runbooks/ in the checkout
        target = Path(self.build_lib) / "workbench" / "runbooks" / "ipynb"
        target.mkdir(parents=True, exist_ok=True)
        for nb in sorted((HERE / "runbooks").glob("*.ipynb")):
            self.copy_file(str(nb), str(target / nb.name))


setup(cmdclass={"build_py": BuildWithRunbooks})
