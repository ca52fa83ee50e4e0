"""One progress display for a runbook run: kernel lines above a live bar on a terminal, plain lines
elsewhere; no papermill cell bar and no kernel transport warning (a real run of the toy runbook)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from tests.unit.runbooks.toy_runbook import notebook
from workbench.redact import Redactor
from workbench.runbooks.progress import RunProgress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_not_a_terminal_gets_plain_lines_only() -> None:
    out = io.StringIO()
    shown = RunProgress("bisect", Redactor(["s3cret"]), total_cells=3, stream=out)
    shown.write("  trial 1: --ep-size 8 ... FAILED in cuda_graph_capture after 3.1 s\n  trial 2: tok")
    shown.cell_complete()
    shown.write("en s3cret\n")
    shown.close()
    text = out.getvalue()
    assert text.splitlines() == ["  trial 1: --ep-size 8 ... FAILED in cuda_graph_capture after 3.1 s",
                                 "  trial 2: token [REDACTED]"]
    assert "\r" not in text and "cells" not in text


def test_a_terminal_gets_the_lines_above_one_bar() -> None:
    out = _Terminal()
    shown = RunProgress("bisect", Redactor([]), total_cells=4, stream=out)
    shown.cell_complete()
    shown.write("ready in serving after 3.7 s\n")
    shown.cell_complete()
    shown.close()
    text = out.getvalue()
    assert "ready in serving after 3.7 s\n" in text
    assert "bisect" in text and "/4 cells" in text and "Executing" not in text
    assert shown.bar.n == 2


def test_a_run_shows_its_lines_without_papermills_bar_or_the_tcp_warning(tmp_path: Path) -> None:
    toy = notebook(tmp_path / "toy.ipynb")
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[3]);"
            "from toy_runbook import ToyParams; from workbench.runbooks.execute import execute;"
            "o = execute(Path(sys.argv[1]), {'token': 'tok-canary-1'}, data_dir=sys.argv[2], model=ToyParams,"
            " progress=True, timeout=60); print('exit', o.exit_code)")
    done = subprocess.run([sys.executable, "-c", code, str(toy), str(tmp_path / "data"), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.strip().splitlines()[-1] == "exit 0", done.stderr[-3000:]
    err = done.stderr
    assert "using token=[REDACTED]" in err  # the kernel's own line, redacted, on stderr
    assert "tok-canary-1" not in err
    assert "Executing" not in err and "without encryption" not in err, err[-3000:]
