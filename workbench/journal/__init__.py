"""Journals: what a unit (or a supervised process) logged, read exactly and fast.

Layout (pure pieces apart from the thin code that touches a host):

* :mod:`.entries`  — command builders, the JSON entry parser, systemd's message ids (shared by
  the watch and every reader);
* :mod:`.export`   — the ``journalctl -o export`` format parsed vectorised;
* :mod:`.systemd`  — which records belong to a unit or an invocation (matches, PID 1's lines);
* :mod:`.fetch`    — getting the records over the host seam (compressed, in time slices);
* :mod:`.frame`    — the typed DataFrame (:class:`~.frame.JournalFrame`) and what was lost;
* :mod:`.annotate` — rank, level and phase columns from the server's own line formats;
* :mod:`.process`  — the same from the process backend's rotated JSON log files;
* :mod:`.read`     — the public readers: ``invocations``, ``read``, ``since_cursor``;
* :mod:`.filter`   — the seeds' grep as filters, and a text export.
"""

from workbench.journal.entries import (
    MSG_COREDUMP,
    MSG_JOURNAL_DROPPED,
    MSG_UNIT_FAILED,
    MSG_UNIT_PROCESS_EXIT,
    MSG_UNIT_RESTART_SCHEDULED,
    MSG_UNIT_STARTED,
    MSG_UNIT_STARTING,
    MSG_UNIT_STOPPED,
    MSG_UNIT_SUCCESS,
    TERMINAL_MESSAGE_IDS,
    Entry,
    cursor_argv,
    decode_field,
    export_argv,
    follow_argv,
    invocation_matches,
    manager_matches,
    parse_cursor,
    parse_json_entry,
    parse_process_entry,
    query_argv,
    unit_matches,
    usec_arg,
)

__all__ = [
    "MSG_COREDUMP",
    "MSG_JOURNAL_DROPPED",
    "MSG_UNIT_FAILED",
    "MSG_UNIT_PROCESS_EXIT",
    "MSG_UNIT_RESTART_SCHEDULED",
    "MSG_UNIT_STARTED",
    "MSG_UNIT_STARTING",
    "MSG_UNIT_STOPPED",
    "MSG_UNIT_SUCCESS",
    "TERMINAL_MESSAGE_IDS",
    "Entry",
    "cursor_argv",
    "decode_field",
    "export_argv",
    "follow_argv",
    "invocation_matches",
    "manager_matches",
    "parse_cursor",
    "parse_json_entry",
    "parse_process_entry",
    "query_argv",
    "unit_matches",
    "usec_arg",
]
