"""Plain HTML for the panel's views: tables, preformatted text, charts as SVG (pure functions)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

TABLE_STYLE = ("<style>.wb-table{border-collapse:collapse;font-size:12px}"
               ".wb-table th,.wb-table td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}"
               ".wb-table th{background:#f3f3f3}.wb-pre{font-size:12px;max-height:420px;overflow:auto;"
               "background:#fafafa;border:1px solid #eee;padding:4px;margin:0}</style>")


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], *, css: str = "",
          empty: str = "(nothing)") -> str:
    """An HTML table of ``rows`` (dicts) restricted to ``columns``."""
    rows = list(rows)
    if not rows:
        return f"<i class='{css}'>{esc(empty)}</i>"
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(r.get(c))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"{TABLE_STYLE}<table class='wb-table {css}'><tr>{head}</tr>{body}</table>"


def records(frame: Any) -> list[dict[str, Any]]:
    """A DataFrame's rows as dicts with string keys."""
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def cell(value: Any) -> str:
    if isinstance(value, list | tuple):
        return esc(",".join(str(v) for v in value)) if value else "-"
    if isinstance(value, float):
        return esc(f"{value:.4g}")
    return esc(value) if value not in (None, "") else "-"


def pre(text: str, *, css: str = "") -> str:
    return f"{TABLE_STYLE}<pre class='wb-pre {css}'>{esc(text)}</pre>"


def chart_svg(chart: Any) -> str:
    """An Altair chart as inline SVG: rendered here (vl-convert), so it needs no front-end extension,
    no network, and updates from any thread as a plain HTML value."""
    import altair as alt
    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(chart.to_dict(), vl_version=alt.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0])
    return f"<div class='wb-chart'>{svg}</div>"
