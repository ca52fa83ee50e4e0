"""One progress display for a runbook run: the kernel's lines (trial lines, redacted) with a live
bar under them on a terminal, plain lines otherwise.

Papermill's own cell bar (``Executing: 31%|███ | 4/13``) is off: on a terminal our bar stays on
the last line and every kernel line is written above it; where stderr is not a terminal
(``make demo`` in a log, CI) there is no bar at all, so nothing interleaves with the trial lines.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from workbench.redact import Redactor

BAR_FORMAT = "{desc} {bar:20} {n_fmt}/{total_fmt} cells · {elapsed}{postfix}"


class RunProgress:
    """``write``/``flush`` take the kernel's stdout and stderr (a papermill ``stdout_file``);
    ``cell_complete`` is nbclient's ``on_cell_complete`` hook; ``close`` ends the display."""

    def __init__(self, runbook: str, redactor: Redactor, *, total_cells: int, stream: TextIO | None = None,
                 live: bool | None = None) -> None:
        from tqdm import tqdm

        self.stream = stream or sys.stderr
        self.redactor = redactor
        self.live = self.stream.isatty() if live is None else live
        self.buf = ""
        self.lines = 0
        self.started = time.monotonic()
        self.bar: Any = tqdm(total=total_cells, desc=runbook, unit="cell", file=self.stream, disable=not self.live,
                             leave=False, bar_format=BAR_FORMAT, dynamic_ncols=True)

    def line(self, text: str) -> None:
        """One line above the bar (redacted)."""
        text = self.redactor.text(text)
        self.lines += 1
        if self.live:
            self.bar.write(text, file=self.stream)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def write(self, text: str) -> None:
        self.buf += text
        *lines, self.buf = self.buf.split("\n")
        for line in lines:
            self.line(line)

    def flush(self) -> None:
        pass

    def cell_complete(self, **_: Any) -> None:
        self.bar.update(1)

    def close(self) -> None:
        if self.buf:
            self.line(self.buf)
            self.buf = ""
        self.bar.close()
