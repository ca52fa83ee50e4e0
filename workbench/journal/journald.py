"""The systemd backend's journal source: a unit's journal as a :class:`~workbench.journal.frame.JournalFrame`
(one invocation, the last N, a time window, or what is new since a cursor), read over a Host.

The public readers (:mod:`.read`) reach this through the backend (``SystemdServices.journal_read``).
This runs ``journalctl`` with explicit matches, in one SSH round trip per step
(journal_fetch): an invocation's stream lines as ``-o short-unix`` text (journal_text: the host
prints it at about twice the speed of export), everything else as ``-o export`` (see
journal_export for why not JSON):

1. :func:`invocations` reads PID 1's lines about the unit (``_PID=1 UNIT=``): one row per
   ``INVOCATION_ID`` with its start, end, result and exit status.
2. An invocation's lines are its own (``_SYSTEMD_INVOCATION_ID=``), PID 1's about it
   (``INVOCATION_ID=``) and journald's (``OBJECT_SYSTEMD_INVOCATION_ID=``).  Lines a dying
   process sent over syslog or the native protocol may reach journald after the process is
   gone and lose their unit (systemd issue #2913; stdout/stderr streams keep it), so for an
   invocation that ended, such records from the seconds around its end are read again by
   the identifiers and pids its lines carried, and those without a unit are added as
   ``origin="unattributed"``.
3. journald reports rate limiting ("Suppressed N messages from UNIT") only when the unit's
   next line is accepted, which may be the next invocation's first line; the first
   record about the unit after the invocation's end is read too, and counted when it is
   such a report.  A unit that floods and then logs nothing more gets no report at all: the
   unit's limits are read with its lines and journald's limit is replayed over them
   (journal_ratelimit); a window that reached it with no report is counted in
   ``lost.rate_limited``.
4. A unit that systemd does not know and the journal holds nothing about is an error
   (:class:`~workbench.errors.UnitNotFound`), not an empty frame.
5. journald reads a stream's last lines when it gets to them, which can be after PID 1 logged the
   exit and even after ``journalctl --sync`` (before systemd 257 a sync does not wait for streams).
   A read of ended invocations first waits, at most :data:`STREAMS_SETTLE_S`, until journald has
   accepted, read and closed every stream whose writer is gone (:func:`settle_streams`, from ``ss``).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import CommandFailed, ConfigError, UnitNotFound
from workbench.hosts import Host
from workbench.journal import ratelimit
from workbench.journal import text as journal_text
from workbench.journal.entries import (
    MSG_JOURNAL_DROPPED,
    export_argv,
    invocation_matches,
    manager_matches,
    unit_matches,
)
from workbench.journal.fetch import Section, fetch
from workbench.journal.frame import (
    RAW_FIELDS,
    JournalFrame,
    Lost,
    build_frame,
    select_invocations,
    to_usec,
)
from workbench.journal.systemd import (
    about,
    export_table,
    fill_invocation,
    hold_back,
    in_invocations,
    invocations_of,
    journal_order,
    late_report,
    unstarted,
)
from workbench.redact import clip
from workbench.systemd import normalize_unit, valid_unit

__all__ = ["invocations", "read", "since_cursor"]  # over a Host; callers go through journal.read

UNATTRIBUTED_BEFORE_US = 2_000_000  # read this long before an invocation's end for lines without a unit
UNATTRIBUTED_AFTER_US = 5_000_000  # ... and this long after it
_PROBE_BYTES = 65536
STREAMS_SETTLE_S = 3.0  # at most this long for journald to finish the streams of exited processes (5. above)
# Prints the inodes of journald's stream sockets it has not finished: connections not yet accepted,
# bytes not yet read, or a writer that is gone (its EOF, and a last line without a newline, not yet read).  Needs ss -p
# (iproute2) as root to see journald's sockets; elsewhere it prints nothing and nobody waits.
_UNREAD_STREAMS = (
    "ss -xaHp 2>/dev/null | awk '{ alive[$6] = 1; row[NR] = $0 } END { for (i = 1; i <= NR; i++) { "
    'split(row[i], f); if (f[5] != "/run/systemd/journal/stdout") continue; '
    'if (f[2] == "LISTEN" ? f[3] > 0 : index(row[i], "systemd-journal") && (f[3] > 0 || !(f[8] in alive))) '
    'print f[6] } }\'')
_SETTLE_SCRIPT = f'n=0; while [ "$n" -lt "$1" ] && [ -n "$({_UNREAD_STREAMS})" ]; do sleep 0.05; n=$((n + 1)); done'


_RAW_SCHEMA = pa.schema(RAW_FIELDS)


def _raw(table: pa.Table) -> pa.Table:
    raw = table.select(list(RAW_FIELDS))
    return raw if raw.schema == _RAW_SCHEMA else raw.cast(_RAW_SCHEMA)


def _section_table(section: Section) -> tuple[pa.Table, int]:
    if not section.ok:
        raise CommandFailed(f"journalctl failed (exit {section.exited}): {clip(section.stderr.strip(), 500, tail=True)}")
    return export_table(section.data)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _unit(unit: str) -> str:
    unit = normalize_unit(unit)
    if not valid_unit(unit):
        raise ConfigError(f"not a valid unit name: {unit!r}")
    return unit


def _limits_section(unit: str) -> tuple[str, Sequence[str]]:
    return ("limits", ratelimit.limits_argv(unit))


def _check_known(sections: dict[str, Section], unit: str, rows: int, host: str) -> ratelimit.Limits | None:
    """The unit's rate limits; UnitNotFound when systemd does not know it and nothing was logged about it."""
    sec = sections.get("limits")
    if sec is None or not sec.ok:
        return None
    limits, load = ratelimit.parse_limits(sec.data.decode("utf-8", "replace"))
    if load == "not-found" and rows == 0:
        raise UnitNotFound(f"{host}: no unit {unit} (systemd does not know it and the journal holds no line about "
                           "it); check the name with `workbench status HOST 'PATTERN'`", host=host, unit=unit)
    return limits


def _note_rate_limit(frame: JournalFrame, limits: ratelimit.Limits | None) -> JournalFrame:
    """Count the windows in which the unit reached journald's limit and no "Suppressed" record followed."""
    if limits is None or frame.lost is None or not len(frame):
        return frame
    own = (frame["origin"] == "unit").to_numpy(bool)  # two columns, not a copy of the whole frame
    windows = ratelimit.reached(frame["usec"].to_numpy(np.int64)[own],
                                frame["priority"].astype("float64").to_numpy()[own], limits)
    if not windows:
        return frame
    reports = sorted(int(r["usec"]) for r in frame.lost.suppressed_records)
    unreported = 0
    for start, _, _ in windows:
        later = [u for u in reports if u > start]
        if later:
            reports.remove(later[0])
        else:
            unreported += 1
    frame.lost.rate_limited = unreported
    frame.lost.rate_limit = f"{limits.describe()}; {max(n for _, n, _ in windows)} lines kept in a window here"
    return frame


def _time_arg(value: Any) -> int | str | None:
    """journalctl's --since/--until: µs, or a string in journalctl's own syntax ("-1h", "today")."""
    if value is None:
        return None
    return value if isinstance(value, str) and not value[:1].isdigit() else to_usec(value)


def _frame_table(table: pa.Table, keep: np.ndarray | pa.Array) -> pa.Table:
    if not len(table) or bool(np.all(keep.to_numpy(zero_copy_only=False) if isinstance(keep, pa.Array) else keep)):
        return table
    return table.filter(keep)


# ---------------------------------------------------------------------------
# invocations
# ---------------------------------------------------------------------------


def invocations(host: Host, unit: str, n: int | None = None, *, timeout: float = 120.0) -> pd.DataFrame:
    """The unit's invocations, oldest first (the last ``n`` when given).

    Columns: invocation (ID), start, end (NaT while running), result ("success", systemd's
    failure result such as "exit-code", "running", or "stopped"), exit_code ("exited",
    "killed", "dumped"), exit_status, messages (PID 1's lines about it).
    """
    unit = _unit(unit)
    lines = None if n is None else max(64, 16 * n)
    last_own = export_argv([f"_SYSTEMD_UNIT={unit}"], lines=1)
    sections = fetch(host, [("pid1", export_argv(manager_matches(unit), lines=lines)), ("own", last_own),
                            _limits_section(unit)], timeout=timeout)
    table, _ = _section_table(sections["pid1"])
    own, _ = _section_table(sections["own"])
    _check_known(sections, unit, len(table) + len(own), host.name)
    out = invocations_of(_with_last_own(table, own))
    recent = set(out["invocation"].tail(n if n is not None else 32))
    out = _first_lines(host, out, unstarted(table, recent), timeout=timeout)
    return out.tail(n).reset_index(drop=True) if n is not None else out


def _with_last_own(pid1: pa.Table, own: pa.Table) -> pa.Table:
    """PID 1's rows plus the unit's last own line when its invocation is one PID 1 said nothing of
    (its lines were filtered, e.g. ``LogLevelMax=``, or rotated away): that invocation still counts."""
    if not len(own):
        return pid1
    inv = own["invocation"][0].as_py()
    if not inv or (len(pid1) and inv in set(pid1["invocation"].to_pylist())):
        return pid1
    return pa.concat_tables([pid1, own.select(pid1.column_names)]) if len(pid1) else own


def _first_lines(host: Host, table: pd.DataFrame, ids: set[str], *, timeout: float) -> pd.DataFrame:
    """Start times of invocations whose start PID 1 did not log: their first own line."""
    if not ids:
        return table
    commands: list[tuple[str, Sequence[str]]] = [
        (f"first{k}", ["sh", "-c", f'"$@" | head -c {_PROBE_BYTES}', "first",
                       *export_argv([f"_SYSTEMD_INVOCATION_ID={i}"])]) for k, i in enumerate(sorted(ids))]
    sections = fetch(host, commands, timeout=timeout)
    table = table.copy()
    for k, inv in enumerate(sorted(ids)):
        data = sections[f"first{k}"].data
        cut = data.rfind(b"\n\n")  # whole entries only (head may cut the last one)
        rows, _ = export_table(data[:cut + 2] if cut >= 0 else b"")
        if len(rows):
            first = pd.Timestamp(int(rows["usec"][0].as_py()) * 1000, tz="UTC")
            at = table["invocation"] == inv
            table.loc[at, "start"] = table.loc[at, "start"].where(table.loc[at, "start"] <= first, first)
    return table.sort_values("start", kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


def read(
    host: Host,
    unit: str,
    *,
    invocation: str | int | None = None,
    last_invocations: int | None = None,
    since: Any = None,
    until: Any = None,
    after_cursor: str | None = None,
    timeout: float = 600.0,
    compress: bool = True,
    jobs: int | None = None,
    text: bool = True,
) -> JournalFrame:
    """The unit's journal as a :class:`JournalFrame`.

    Choose at most one of ``invocation`` (an ID, ``"last"``, or an index into
    :func:`invocations`: -1 last, 0 oldest), ``last_invocations`` (the last N) and
    ``after_cursor`` (what came after a cursor: a journal cursor, or for the process
    backend ``proc:INODE:OFFSET`` / ``@USEC``); ``since``/``until`` bound the time
    (datetimes, epoch seconds, ISO strings, or journalctl expressions such as "-1h").
    With nothing chosen: all of the unit's lines in the window.  ``jobs`` > 1 reads the
    chosen invocations (once they have ended) in that many time slices at once: the host
    formats them on several cores and each is parsed here while the rest arrive; None (the
    default) chooses (:func:`auto_jobs`: 4 for an ended window of 2 s or more, else 1).  ``text``:
    an invocation's stream lines come as ``-o short-unix`` text (journal_text: about twice as
    fast on the host, no per-row cursors); False reads every row through ``-o export``.
    """
    chosen = [x is not None for x in (invocation, last_invocations, after_cursor)]
    if sum(chosen) > 1:
        raise ConfigError("choose one of invocation, last_invocations and after_cursor")
    unit = _unit(unit)
    if after_cursor is not None:
        frame, _ = since_cursor(host, unit, after_cursor, timeout=timeout, compress=compress)
        return frame
    if invocation is None and last_invocations is None:
        return _read_window(host, unit, since, until, timeout=timeout, compress=compress)
    picked = select_invocations(invocations(host, unit, timeout=timeout), invocation, last_invocations)
    if len(picked) and picked["end"].notna().all():
        settle_streams(host, timeout=timeout)
    return _read_invocations(host, unit, picked, since, until, timeout=timeout, compress=compress, jobs=jobs,
                             text=text)


def settle_streams(host: Host, *, timeout: float = 60.0) -> None:
    """Wait (at most :data:`STREAMS_SETTLE_S`) until journald has read every stream whose writer is
    gone or whose bytes wait: what an exited process wrote is then in the journal."""
    steps = int(STREAMS_SETTLE_S / 0.05)
    host.run(["sh", "-c", _SETTLE_SCRIPT, "settle", str(steps)], timeout=min(timeout, STREAMS_SETTLE_S + 30))


def _read_window(host: Host, unit: str, since: Any, until: Any, *, timeout: float, compress: bool) -> JournalFrame:
    argv = export_argv(unit_matches(unit), since=_time_arg(since), until=_time_arg(until))
    sections = fetch(host, [("main", argv), _limits_section(unit)], timeout=timeout, compress=compress)
    table, binary = _section_table(sections["main"])
    table = fill_invocation(_frame_table(table, about(table, unit)))
    # A window (since/until) may be empty for a unit that exists; without one, nothing at all means no unit.
    rows = len(table) if since is None and until is None else 1
    limits = _check_known(sections, unit, rows, host.name)
    return _note_rate_limit(build_frame(_raw(table), unit=unit, lost=Lost(binary=binary)), limits)


AUTO_JOBS = 4  # slices of a long ended invocation when the caller chose none (BENCHMARKS.md, issue 14)
AUTO_MIN_SPAN_US = 2_000_000  # shorter: one slice (a 220-row read costs 0.33 s in 4 slices, 0.28 s in one)


def auto_jobs(span: tuple[int, int] | None) -> int:
    """Slices for ``jobs=None``: :data:`AUTO_JOBS` for an ended invocation window of at least
    :data:`AUTO_MIN_SPAN_US`, else 1.  Slicing overlaps the host formatting one slice with the
    transfer and parsing of the others (1M lines written in 14 s: 0.63 of the raw rate against 0.38
    in one slice).  The window's length is the only size known before the read: under 2 s, one
    slice; a longer window with few lines (a simulated start: 220 in 19 s) costs 40 ms more in 4."""
    return AUTO_JOBS if span is not None and span[1] - span[0] >= AUTO_MIN_SPAN_US else 1


def _read_invocations(host: Host, unit: str, picked: pd.DataFrame, since: Any, until: Any, *,
                      timeout: float, compress: bool, jobs: int | None = None, text: bool = True) -> JournalFrame:
    ids = [str(i) for i in picked["invocation"]]
    starts = picked["start"].dropna()
    first = int(starts.min().value // 1000) - 1_000_000 if len(starts) else None
    lo = _time_arg(since) if since is not None else first
    hi = _time_arg(until)
    ends = {i: int(e.value // 1000) for i, e in zip(picked["invocation"], picked["end"], strict=True) if pd.notna(e)}
    last_end = ends.get(ids[-1])
    extra: list[tuple[str, Sequence[str]]] = [_limits_section(unit)]
    if last_end is not None:
        probe = export_argv(["_SYSTEMD_UNIT=" + unit, "+", f"MESSAGE_ID={MSG_JOURNAL_DROPPED}",
                             f"OBJECT_SYSTEMD_UNIT={unit}"], since=last_end + 1)
        extra.append(("after", ["sh", "-c", f'"$@" | head -c {_PROBE_BYTES}', "probe", *probe]))
    # Slices need a known, finished window: from the first start to past the last end (the
    # last lines of a dying process are written after PID 1 logs its exit: the last slice is open).
    span = (lo, max(ends.values())) if isinstance(lo, int) and hi is None and len(ends) == len(ids) else None
    jobs = auto_jobs(span) if jobs is None else jobs
    if text:
        table, streams, binary, sections = _fetch_text(host, unit, ids, lo, hi, span=span, jobs=jobs, extra=extra,
                                                       timeout=timeout, compress=compress)
    else:
        table, binary, sections = _fetch_export(host, invocation_matches(ids), lo, hi, span=span, jobs=jobs,
                                                extra=extra, timeout=timeout, compress=compress)
    windows = {i: (int(s.value // 1000) if pd.notna(s) else 0, ends.get(i)) for i, s in
               zip(picked["invocation"], picked["start"], strict=True)}
    keep = about(table, unit).to_numpy(zero_copy_only=False) & in_invocations(table, set(ids), windows)
    table = _frame_table(table, keep)
    if text:
        table = journal_text.merge_order([streams, _raw(table)])
    unattributed = _unattributed(host, unit, table, ends, timeout=timeout, compress=compress)
    after = sections.get("after")
    late = late_report(after.data if after is not None else None, unit)
    parts = [_raw(t) for t in (table, unattributed, late) if t is not None and len(t)]
    merged = pa.concat_tables(parts) if len(parts) > 1 else (parts[0] if parts else table)
    if len(parts) > 1:
        merged = merged.take(pa.array(np.argsort(journal_order(merged), kind="stable")))
    limits = _check_known(sections, unit, 1, host.name)
    return _note_rate_limit(build_frame(_raw(merged), unit=unit, lost=Lost(binary=binary)), limits)


def _fetch_export(host: Host, matches: list[str], since: int | str | None, until: int | str | None, *,
                  span: tuple[int, int] | None, jobs: int, extra: list[tuple[str, Sequence[str]]], timeout: float,
                  compress: bool) -> tuple[pa.Table, int, dict[str, Section]]:
    """The export rows of ``matches``, in ``jobs`` time slices of ``span`` fetched at once when given.

    Each slice is its own journalctl on the host (its own SSH channel), so the host formats
    them in parallel, and each is parsed here as soon as it arrives while the others are
    still coming.  Slice i covers ``[b_i, b_i+1 - 1 µs]``; the last one is open-ended.
    """
    if jobs <= 1 or span is None or span[1] <= span[0]:
        sections = fetch(host, [("main", export_argv(matches, since=since, until=until)), *extra],
                         timeout=timeout, compress=compress)
        table, binary = _section_table(sections["main"])
        return table, binary, sections
    lo, hi = span
    bounds = [lo + (hi - lo) * k // jobs for k in range(jobs)]
    argvs = [export_argv(matches, since=bounds[k], until=bounds[k + 1] - 1 if k + 1 < jobs else None)
             for k in range(jobs)]
    with ThreadPoolExecutor(max_workers=jobs + 1, thread_name_prefix="journal-slice") as pool:
        futures = [pool.submit(fetch, host, [(f"s{k}", argv)], timeout=timeout, compress=compress)
                   for k, argv in enumerate(argvs)]
        side = pool.submit(fetch, host, extra, timeout=timeout, compress=compress) if extra else None
        tables, binary = [], 0
        for k, fut in enumerate(futures):
            t, b = _section_table(fut.result()[f"s{k}"])
            tables.append(t)
            binary += b
        sections = side.result() if side is not None else {}
    return pa.concat_tables(tables), binary, sections


def _other_matches(ids: list[str]) -> list[str]:
    """invocation_matches without the stream lines (those come as text): native and syslog lines,
    PID 1's, journald's and other daemons' about the invocations."""
    own = [f"_SYSTEMD_INVOCATION_ID={i}" for i in ids]
    rest = invocation_matches(ids)
    return [*own, "_TRANSPORT=journal", "_TRANSPORT=syslog", *rest[rest.index("+"):]]


def _fetch_text(host: Host, unit: str, ids: list[str], since: int | str | None, until: int | str | None, *,
                span: tuple[int, int] | None, jobs: int, extra: list[tuple[str, Sequence[str]]], timeout: float,
                compress: bool) -> tuple[pa.Table, pa.Table, int, dict[str, Section]]:
    """(export rows of everything but the stream lines, the stream lines from ``-o short-unix`` text,
    binary count, side sections): the text in ``jobs`` time slices per invocation when ``span``
    is known, fetched at once and parsed as each arrives; the rest in one side round trip."""
    slices: list[tuple[int | str | None, int | str | None]] = [(since, until)]
    if jobs > 1 and span is not None and span[1] > span[0]:
        a, b = span
        bounds = [a + (b - a) * k // jobs for k in range(jobs)]
        slices = [(bounds[k], bounds[k + 1] - 1 if k + 1 < jobs else None) for k in range(jobs)]
    text_args = {(n, k): journal_text.text_argv(inv, since=lo, until=hi)
                 for n, inv in enumerate(ids) for k, (lo, hi) in enumerate(slices)}
    side: list[tuple[str, Sequence[str]]] = [
        ("main", export_argv(_other_matches(ids), since=since, until=until)),
        *[(f"x{n}", export_argv(journal_text.exceptions_matches(inv), since=since, until=until))
          for n, inv in enumerate(ids)], *extra]
    with ThreadPoolExecutor(max_workers=len(text_args) + 1, thread_name_prefix="journal-text") as pool:
        futures = {key: pool.submit(fetch, host, [(f"t{key[0]}s{key[1]}", argv)], timeout=timeout,
                                    compress=compress) for key, argv in text_args.items()}
        side_future = pool.submit(fetch, host, side, timeout=timeout, compress=compress)
        parsed: dict[int, list[pa.Table]] = {n: [] for n in range(len(ids))}
        binary = 0
        for (n, k), fut in futures.items():
            sec = fut.result()[f"t{n}s{k}"]
            if not sec.ok and (sec.data.strip() or sec.stderr.strip()):  # --show-cursor exits 1 on no entries
                raise CommandFailed(f"journalctl failed (exit {sec.exited}): "
                                    f"{clip(sec.stderr.strip(), 500, tail=True)}")
            rows = journal_text.parse_short_unix(sec.data, unit=unit, invocation=ids[n])
            binary += journal_text.undecodable(sec.data, rows)
            parsed[n].append(rows)
        sections = side_future.result()
    table, b = _section_table(sections["main"])
    streams = []
    for n, parts in parsed.items():
        exceptions, _ = _section_table(sections[f"x{n}"])
        streams.append(journal_text.patch(pa.concat_tables(parts) if len(parts) > 1 else parts[0], _raw(exceptions)))
    return table, pa.concat_tables(streams), binary + b, sections


def _unattributed(host: Host, unit: str, table: pa.Table, ends: dict[str, int], *, timeout: float,
                  compress: bool) -> pa.Table | None:
    """Lines of each ended invocation's processes that journald logged without a unit (#2913)."""
    slim = table.select(["origin", "invocation", "pid", "identifier"])
    own = slim.filter(pc.fill_null(pc.equal(slim["origin"], "unit"), False)) if len(slim) else slim
    commands: list[tuple[str, Sequence[str]]] = []
    wanted: list[tuple[str, str, set[int], set[str]]] = []
    for inv, end in ends.items():
        rows = own.filter(pc.equal(own["invocation"], inv)) if len(own) else own
        pids = {p for p in pc.unique(rows["pid"]).to_pylist() if p} if len(rows) else set()
        idents = {i for i in pc.unique(rows["identifier"]).to_pylist() if i} if len(rows) else set()
        if not pids and not idents:
            continue
        # stdout/stderr streams keep their unit (PID 1 names it when it opens the stream): only
        # syslog and native-protocol records can lose it, so only those are read again
        transports = ["_TRANSPORT=syslog", "_TRANSPORT=journal"]
        matches = [f"SYSLOG_IDENTIFIER={i}" for i in sorted(idents)] + transports if idents else []
        if pids:
            matches += (["+"] if matches else []) + [f"_PID={p}" for p in sorted(pids)] + transports
        name = f"inv{len(wanted)}"
        commands.append((name, export_argv(matches, since=end - UNATTRIBUTED_BEFORE_US,
                                           until=end + UNATTRIBUTED_AFTER_US)))
        wanted.append((name, inv, pids, idents))
    if not commands:
        return None
    sections = fetch(host, commands, timeout=timeout, compress=compress)
    found = []
    for name, inv, pids, idents in wanted:
        t, _ = _section_table(sections[name])
        if not len(t):
            continue
        origin = t["origin"].to_numpy(zero_copy_only=False)
        pid = t["pid"].to_numpy(zero_copy_only=False)
        ident = t["identifier"].to_numpy(zero_copy_only=False)
        mask = (origin == "unattributed") & (np.isin(pid, list(pids)) | np.isin(ident, list(idents)))
        if mask.any():
            rows = t.filter(pa.array(mask))
            for col, value in (("unit", unit), ("invocation", inv)):
                rows = rows.set_column(rows.schema.get_field_index(col), col, pa.array([value] * len(rows), pa.large_string()))
            found.append(rows)
    return pa.concat_tables(found) if found else None


# ---------------------------------------------------------------------------
# incremental
# ---------------------------------------------------------------------------


def since_cursor(
    host: Host,
    unit: str,
    cursor: str,
    *,
    invocation: str | None = None,
    timeout: float = 600.0,
    compress: bool = True,
) -> tuple[JournalFrame, str]:
    """The unit's lines after ``cursor`` and the cursor to pass next time.

    Repeated calls never return a line twice nor skip one: the query starts *at* the
    cursor (``--cursor``) and drops the cursor's own entry, and a line still being split
    at LineMax (its last part not yet written) is left for the next call.  ``cursor``
    may be any journal cursor, e.g. ``Services.cursor()`` or a watch Outcome's.
    """
    unit = _unit(unit)
    if not cursor:
        raise ConfigError("since_cursor needs a cursor (Services.cursor() gives the journal's end)")
    matches = invocation_matches([invocation]) if invocation else unit_matches(unit)
    sec = fetch(host, [("main", export_argv(matches, cursor=cursor))], timeout=timeout, compress=compress)["main"]
    if not sec.ok and "cursor" in sec.stderr.lower():
        raise ConfigError(f"journalctl rejected the cursor {cursor!r}: {clip(sec.stderr.strip(), 300, tail=True)}")
    table, binary = _section_table(sec)
    if len(table) and table["cursor"][0].as_py() == cursor:
        table = table.slice(1)
    table, next_cursor = hold_back(table, cursor)
    table = _frame_table(table, about(table, unit))
    frame = build_frame(_raw(table), unit=unit, cursor=next_cursor, lost=Lost(binary=binary))
    return frame, next_cursor
