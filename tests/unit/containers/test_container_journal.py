"""The container backend's journal source over captured podman output: one container started
three times (each start prints two lines and exits 3), read as invocations and frames."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest

from workbench import containers as ct
from workbench.errors import ConfigError
from workbench.journal import container as jc
from workbench.journal.read import frame_text, invocation_text

CAP = Path(__file__).parents[2] / "fixtures" / "captured" / "podman-restarts"
LOGS = (CAP / "logs.txt").read_text()
EVENTS = (CAP / "events.jsonl").read_text()
(INFO,) = ct.parse_inspect((CAP / "inspect.json").read_text())
NAME = "wb-seam13-cap"


def test_each_start_is_an_invocation_with_its_exit() -> None:
    inv = jc.invocations(EVENTS, INFO)
    assert len(inv) == 3
    assert list(inv["result"]) == ["exit-code"] * 3 and list(inv["exit_status"]) == [3, 3, 3]
    assert inv["start"].is_monotonic_increasing and inv["end"].notna().all()
    assert (inv["end"] > inv["start"]).all()
    # the current (last) start carries the id status reports for it
    assert inv["invocation"].iloc[-1] == INFO.invocation
    assert len(set(inv["invocation"])) == 3 and all(i.startswith(INFO.id[:16]) for i in inv["invocation"])


def test_lines_belong_to_their_own_start_even_when_written_before_its_start_event() -> None:
    table = jc.parse(LOGS, EVENTS, INFO, unit=NAME, host="gpu-c")
    inv = jc.invocations(EVENTS, INFO)
    for k, invocation in enumerate(inv["invocation"]):
        frame = jc.read(table, inv, unit=NAME, invocation=invocation)
        own = frame[frame["origin"] == "unit"]
        assert list(own["message"].str.split().str[0]) == ["start", "Traceback"], k
        assert (frame[frame["origin"] == "manager"]["message"] == f"Container {NAME} exited with code 3").all()
    # the third start's first line precedes its "start" event: its init event opens the start
    last = jc.read(table, inv, unit=NAME, invocation=-1)
    assert last.raw.splitlines()[0] == LOGS.splitlines()[4].split(" ", 1)[1]


def test_frame_text_is_the_starts_own_lines() -> None:
    table = jc.parse(LOGS, EVENTS, INFO, unit=NAME)
    inv = jc.invocations(EVENTS, INFO)
    frame = jc.read(table, inv, unit=NAME, invocation=0)
    assert frame_text(frame) == "\n".join(line.split(" ", 1)[1] for line in LOGS.splitlines()[:2]) + "\n"


def test_since_cursor_never_repeats_nor_skips() -> None:
    table = jc.parse(LOGS, EVENTS, INFO, unit=NAME)
    seen: list[str] = []
    cursor = "@0"
    for _ in range(3):
        frame, cursor = jc.since_cursor(table, cursor, unit=NAME)
        seen += list(frame["message"])
    assert len(seen) == len(table) and len(set(zip(table["usec"].to_pylist(), seen, strict=True))) == len(table)
    frame, again = jc.since_cursor(table, cursor, unit=NAME)
    assert frame.empty and again == cursor
    with pytest.raises(ConfigError, match="not a container cursor"):
        jc.since_cursor(table, "s=abc", unit=NAME)


def test_without_events_the_log_is_the_current_start() -> None:
    """Docker (no events read): one start, the one inspect reports; earlier lines belong to none."""
    inv = jc.invocations("", INFO)
    assert list(inv["invocation"]) == [INFO.invocation] and inv["result"].iloc[0] == "exit-code"
    table = jc.parse(LOGS, "", INFO, unit=NAME)
    own = table.filter(pc.equal(table["origin"], "unit"))
    assert own["invocation"].to_pylist() == [None] * 4 + [INFO.invocation] * 2
    frame = jc.read(table, inv, unit=NAME, invocation=-1)
    assert frame.raw.splitlines() == [line.split(" ", 1)[1] for line in LOGS.splitlines()[4:]]


def test_the_backend_reads_through_journal_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """ContainerServices.journal_read is what journal.read and invocation_text reach."""
    from workbench.services import ContainerServices

    class Host:
        name = "gpu-c"

        def run(self, argv, **_):
            from workbench.hosts import Result
            if argv[:2] == ["sh", "-c"]:
                return Result("logs", LOGS + "\n@@events\n" + EVENTS, "", 0, "gpu-c")
            return Result("inspect", (CAP / "inspect.json").read_text(), "", 0, "gpu-c")

    svc = ContainerServices(Host(), "podman")  # type: ignore[arg-type]
    first = jc.invocations(EVENTS, INFO)["invocation"].iloc[0]
    assert invocation_text(svc, NAME, first).splitlines()[1] == "Traceback to stderr"
    assert len(svc.journal_invocations(NAME, 2)) == 2
    assert [e.message.split()[0] for e in svc.tail_entries(NAME, lines=3)] == ["Traceback", "start", "Traceback"]


def test_a_removed_containers_start_is_found_by_the_id_status_gave() -> None:
    """No inspect (the variant was removed, its log kept): starts are named by their start events;
    the id status reported (from StartedAt, a few hundred µs later) still finds its start."""
    table = jc.parse(LOGS, EVENTS, None, unit=NAME)
    inv = jc.invocations(EVENTS, None)
    assert INFO.invocation not in set(inv["invocation"])  # named by the start event, not StartedAt
    frame = jc.read(table, inv, unit=NAME, invocation=INFO.invocation)
    assert frame.raw.splitlines() == [line.split(" ", 1)[1] for line in LOGS.splitlines()[4:]]
    assert set(frame["invocation"]) == {INFO.invocation}
    assert jc.read(table, inv, unit=NAME, invocation=INFO.id[:16] + f"{1:016x}").empty  # no start then


def test_podmans_init_is_not_the_servers_command() -> None:
    """A container created with --init runs ``/run/podman-init -- ARGV``: ARGV is the command."""
    import json

    raw = json.loads((CAP / "inspect.json").read_text())
    raw[0]["Path"], raw[0]["Args"] = "/run/podman-init", ["--", "/usr/bin/python3", "-m", "sglang.launch_server"]
    (info,) = ct.parse_inspect(json.dumps(raw))
    assert info.argv == ["/usr/bin/python3", "-m", "sglang.launch_server"]
