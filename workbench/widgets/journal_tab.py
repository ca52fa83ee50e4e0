"""Journal: a unit's or an invocation's lines, live, filtered by regex, rank and level; export.

Entries come through the services backend (``journalctl -o json --all`` on systemd hosts,
the supervisor's log on process hosts) into a DataFrame (:func:`entries_frame`);
:func:`filter_frame` is the view's filter, usable on its own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import ipywidgets as widgets
import pandas as pd

from workbench.errors import ConfigError
from workbench.journal import Entry
from workbench.logformats import parse_line
from workbench.services import Services
from workbench.widgets.background import Task, TaskBar, TaskContext, guarded
from workbench.widgets.context import CURRENT, Invocation, PanelContext
from workbench.widgets.render import esc, pre

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_PRIORITY_LEVEL = {0: "CRITICAL", 1: "CRITICAL", 2: "CRITICAL", 3: "ERROR", 4: "WARNING", 5: "INFO", 6: "INFO",
                   7: "DEBUG"}
# A line without a level of its own that still reports an error (tracebacks print no level).
_ERRORISH = re.compile(r"^(?:Traceback \(most recent call last\)|[\w.]*(?:Error|Exception)\b:?)|"
                       r"hit an exception|\bTraceback\b")
COLUMNS = ["time", "unit", "invocation", "pid", "rank", "level", "message"]
SHOWN_LINES = 400


def entries_frame(entries: Iterable[Entry]) -> pd.DataFrame:
    """One row per process line (PID 1's lines about the unit included), rank and level parsed.

    ``rank``: the line's own prefix, else the last one its process printed (a traceback's lines
    carry no prefix, but come from the rank's own process). ``level``: the line's own (``INFO:``, ``WARNING 05-30``, glog ``E0530``), else the journal
    priority when above info, else ERROR for traceback and exception lines, else INFO."""
    rows = []
    rank_of_pid: dict[int, str] = {}
    for e in entries:
        parsed = parse_line(e.message)
        rank = parsed.rank or (rank_of_pid.get(e.pid, "") if e.pid is not None else "")
        if parsed.rank and e.pid is not None:
            rank_of_pid[e.pid] = parsed.rank
        level = parsed.level or (_PRIORITY_LEVEL.get(e.priority) if e.priority is not None and e.priority < 6 else None)
        if level is None:  # servers log at INFO unless they say otherwise; tracebacks say nothing
            level = "ERROR" if _ERRORISH.search(parsed.message) else "INFO"
        rows.append({"time": datetime.fromtimestamp(e.usec / 1e6, tz=UTC), "unit": e.unit or "",
                     "invocation": e.invocation or "", "pid": e.pid, "rank": rank,
                     "level": level, "message": e.message})
    return pd.DataFrame(rows, columns=COLUMNS)


def filter_frame(df: pd.DataFrame, *, include: str = "", exclude: str = "", rank: str = "",
                 level: str = "") -> pd.DataFrame:
    """Rows whose message matches ``include`` and not ``exclude`` (regexes), of ``rank``, at ``level`` or above."""
    out = df
    try:
        for pattern in (include, exclude):
            re.compile(pattern)
        if include:
            out = out[out["message"].str.contains(include, regex=True, na=False)]
        if exclude:
            out = out[~out["message"].str.contains(exclude, regex=True, na=False)]
    except re.error as exc:
        raise ConfigError(f"not a valid regular expression: {exc}") from exc
    if rank:
        out = out[out["rank"] == rank]
    if level:
        if level not in LEVELS:
            raise ConfigError(f"level must be one of {LEVELS}, not {level!r}")
        wanted = set(LEVELS[LEVELS.index(level):])
        out = out[out["level"].isin(wanted)]
    return out


def read_entries(svc: Services, unit: str = "", invocation: str = "", lines: int = 500) -> list[Entry]:
    """The last ``lines`` entries of ``unit`` (or of one ``invocation``), oldest first (the backend reads them)."""
    if not unit and not invocation:
        raise ConfigError("give a unit or an invocation")
    return svc.tail_entries(unit, invocation, lines)


def render_lines(df: pd.DataFrame, limit: int = SHOWN_LINES) -> str:
    tail = df.tail(limit)
    lines = [f"{t:%H:%M:%S} {m}" for t, m in zip(tail["time"], tail["message"], strict=True)]
    return "\n".join(lines)


class JournalTab:
    """Read, follow, filter and export the journal of a unit or an invocation on the chosen host."""

    def __init__(self, ctx: PanelContext, *, unit: str = "sglang-k26-ddtree.service") -> None:
        self.ctx = ctx
        self.frame = pd.DataFrame(columns=COLUMNS)
        self.shown = self.frame
        self.source: tuple[str, str, str] = ("", "", "")  # host, unit, invocation
        self.exported: Path | None = None
        self._follow_ended = True
        self.bar = TaskBar("journal")
        self.unit = widgets.Text(value=unit, description="unit", layout=widgets.Layout(width="360px"))
        self.unit.add_class("wb-journal-unit")
        self.invocation = widgets.Dropdown(options=[("(whole unit)", "")], value="", description="invocation",
                                           layout=widgets.Layout(width="560px"))
        self.invocation.add_class("wb-journal-invocation")
        self.lines = widgets.BoundedIntText(value=500, min=10, max=100_000, description="lines",
                                            layout=widgets.Layout(width="170px"))
        self.load_button = widgets.Button(description="Load", icon="download")
        self.load_button.add_class("wb-journal-load")
        self.follow_toggle = widgets.ToggleButton(value=False, description="Follow", icon="play")
        self.follow_toggle.add_class("wb-journal-follow")
        self.include = widgets.Text(placeholder="regex to keep", description="include")
        self.include.add_class("wb-journal-include")
        self.exclude = widgets.Text(placeholder="regex to drop", description="exclude")
        self.exclude.add_class("wb-journal-exclude")
        self.rank = widgets.Dropdown(options=[("any", "")], value="", description="rank",
                                     layout=widgets.Layout(width="170px"))
        self.level = widgets.Dropdown(options=[("any", ""), *((f">= {lv}", lv) for lv in LEVELS)], value="",
                                      description="level", layout=widgets.Layout(width="200px"))
        self.export_button = widgets.Button(description="Export CSV", icon="save")
        self.export_button.add_class("wb-journal-export")
        self.count = widgets.HTML(value="")
        self.count.add_class("wb-journal-count")
        self.view = widgets.HTML(value="")
        self.view.add_class("wb-journal-view")
        err = self.bar.error
        self.load_button.on_click(guarded(err, lambda _b: self.load()))
        self.follow_toggle.observe(guarded(err, lambda ch: self.follow(ch["new"])), names="value")
        self.export_button.on_click(guarded(err, lambda _b: self.export()))
        for w in (self.include, self.exclude, self.rank, self.level):
            w.observe(guarded(err, lambda _ch: self.apply_filters()), names="value")
        ctx.on_invocation(self._add_invocation)
        self.widget = widgets.VBox([
            widgets.HBox([self.unit, self.lines]), widgets.HBox([self.invocation, self.load_button,
                                                               self.follow_toggle]),
            widgets.HBox([self.include, self.exclude, self.rank, self.level]),
            widgets.HBox([self.export_button, self.count]), self.bar.widget, self.view])

    def _add_invocation(self, inv: Invocation) -> None:
        """Offer every start seen; one the panel made itself (a variant, a start) becomes the choice."""
        keep = self.invocation.value
        self.invocation.options = [("(whole unit)", ""), *self.ctx.invocation_options()]
        if inv.label != CURRENT:
            self.choose(inv.key)
        else:
            self.invocation.value = keep

    def choose(self, key: str) -> None:
        """Pick an invocation by its key (``host:invocation``), or "" for the whole unit."""
        inv = self.ctx.find_invocation(key) if key else None
        if key and inv is None:
            raise ConfigError(f"unknown invocation {key!r}")
        self.invocation.value = key
        if inv is not None:
            self.unit.value = inv.unit

    def _target(self) -> tuple[str, str, str]:
        inv = self.ctx.find_invocation(self.invocation.value) if self.invocation.value else None
        if inv is not None:
            return inv.host, inv.unit, inv.invocation
        return self.ctx.current, self.unit.value.strip(), ""

    # -- load, follow ----------------------------------------------------------------
    def load(self) -> Task | None:
        host_name, unit, invocation = self._target()
        n = int(self.lines.value)

        def work(tc: TaskContext) -> pd.DataFrame:
            tc.progress(0.2, f"reading {invocation[:8] or unit} on {host_name}")
            return entries_frame(read_entries(self.ctx.services(host_name), unit, invocation, n))

        def done(df: pd.DataFrame) -> None:
            self.source = (host_name, unit, invocation)
            self._set_frame(df)

        return self.bar.submit(f"journal of {invocation[:8] or unit}", work, on_done=done)

    def follow(self, on: bool = True) -> Task | None:
        """Follow the unit live (new lines appended as they come) until turned off."""
        if not on:
            if not self._follow_ended:
                self.bar.cancel()
            return None
        host_name, unit, invocation = self._target()
        if not unit:
            raise ConfigError("give a unit to follow")

        def work(tc: TaskContext) -> int:
            svc = self.ctx.services(host_name)
            stream = svc.follow(unit, svc.cursor())
            got, last_draw = 0, 0.0
            pending: list[Entry] = []
            try:
                tc.progress(None, f"following {unit}")
                while not tc.cancelled:
                    try:
                        line = stream.readline(timeout=0.5)
                    except EOFError:
                        break
                    entry = svc.parse_entry(line, unit) if line is not None else None
                    if entry is not None and (not invocation or entry.invocation == invocation):
                        pending.append(entry)
                    if pending and (time.monotonic() - last_draw > 0.5 or len(pending) > 200):
                        got += len(pending)
                        self._set_frame(pd.concat([self.frame, entries_frame(pending)], ignore_index=True))
                        pending, last_draw = [], time.monotonic()
                        tc.progress(None, f"following {unit}: {got} new line(s)")
            finally:
                stream.close()
                self._follow_ended = True  # the toggle's reset below must not read as a cancel
                self.follow_toggle.value = False
                if pending:
                    self._set_frame(pd.concat([self.frame, entries_frame(pending)], ignore_index=True))
            return got

        self.source = (host_name, unit, invocation)
        self._follow_ended = False
        task = self.bar.submit(f"follow {unit}", work, on_done=lambda _n: None)
        if task is None:
            self.follow_toggle.value = False
        return task

    # -- view -------------------------------------------------------------------------
    def _set_frame(self, df: pd.DataFrame) -> None:
        self.frame = df.reset_index(drop=True)
        ranks = sorted({r for r in self.frame["rank"] if r})
        current = self.rank.value
        self.rank.options = [("any", ""), *((r, r) for r in ranks)]
        self.rank.value = current if current in ranks else ""
        self.apply_filters()

    def apply_filters(self) -> pd.DataFrame:
        self.shown = filter_frame(self.frame, include=self.include.value, exclude=self.exclude.value,
                                  rank=self.rank.value, level=self.level.value)
        more = f", the last {SHOWN_LINES} shown" if len(self.shown) > SHOWN_LINES else ""
        self.count.value = (f"<span class='wb-journal-counttext'>{len(self.shown)} of {len(self.frame)} "
                            f"line(s){more}</span>")
        self.view.value = pre(render_lines(self.shown), css="wb-journal-lines")
        return self.shown

    def set_filters(self, *, include: str | None = None, exclude: str | None = None, rank: str | None = None,
                    level: str | None = None) -> pd.DataFrame:
        with self.include.hold_trait_notifications():
            for widget, value in ((self.include, include), (self.exclude, exclude), (self.rank, rank),
                                  (self.level, level)):
                if value is not None:
                    widget.value = value
        return self.apply_filters()

    def export(self, path: str | Path | None = None) -> Path:
        """The filtered lines as CSV (default: ``<data_dir>/exports/journal-<time>.csv``)."""
        out = Path(path) if path else self.ctx.data_dir / "exports" / f"journal-{time.strftime('%Y%m%d-%H%M%S')}.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        self.shown.to_csv(out, index=False)
        self.exported = out
        self.count.value += f" — exported to <code>{esc(out)}</code>"
        return out

    def wait(self, timeout: float | None = 600.0) -> Task | None:
        return self.bar.wait(timeout)


