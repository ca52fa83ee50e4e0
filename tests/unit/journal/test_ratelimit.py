"""journald's rate limit replayed over a unit's lines (issue 14, item 5): the limits from real
``systemctl show`` / ``systemd-analyze cat-config`` output, and the windows that reached them."""

from pathlib import Path

import numpy as np
import pyarrow as pa

from workbench.journal import ratelimit
from workbench.journal.entries import MSG_UNIT_FAILED, MSG_UNIT_PROCESS_EXIT, MSG_UNIT_STARTED
from workbench.journal.ratelimit import Limits, burst_values, parse_limits, reached
from workbench.journal.systemd import unstarted

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "journal" / "ratelimit"


def test_a_units_own_limits():
    limits, load = parse_limits((FIXTURES / "own_limits.txt").read_text())
    assert limits == Limits(5_000_000, 200) and load == "loaded"


def test_a_gone_unit_gets_journalds_defaults():
    limits, load = parse_limits((FIXTURES / "not_found.txt").read_text())
    assert limits == Limits(30_000_000, 10_000) and load == "not-found"


def test_journald_conf_overrides_the_defaults_and_the_unit_overrides_each_one():
    text = (FIXTURES / "not_found.txt").read_text() + "\n# /etc/systemd/journald.conf.d/x.conf\n[Journal]\n" \
        "RateLimitIntervalSec=1min 30s\nRateLimitBurst=500\n"
    assert parse_limits(text)[0] == Limits(90_000_000, 500)
    half = text.replace("LogRateLimitBurst=0", "LogRateLimitBurst=7")
    assert parse_limits(half)[0] == Limits(90_000_000, 7)


def test_the_bursts_journald_may_apply():
    values = burst_values(10_000)
    assert {10_000, 12_500, 37_500, 40_000} <= values and 37_501 not in values and min(values) == 10_000


def flood(kept: int, start: int = 1_000_000, spacing: int = 10) -> np.ndarray:
    return start + np.arange(kept, dtype=np.int64) * spacing


def test_a_flood_cut_at_the_limit_is_found():
    usec = flood(37_500)  # what journald kept of a 200,000-line flood at 2-4 GB free (seen on the testbed)
    got = reached(usec, np.full(len(usec), 6.0), Limits(30_000_000, 10_000))
    assert got == [(1_000_000, 37_500, 3)]


def test_windows_follow_journald_each_opens_at_the_first_line_after_the_last():
    limits = Limits(5_000_000, 1_000)
    first = flood(3_750)
    second = flood(3_750, start=first[0] + 5_000_001)  # the next window: limited again
    tail = flood(10, start=second[0] + 5_000_001)  # the unit's next lines: under the limit
    usec = np.concatenate([first, second, tail])
    got = reached(usec, np.full(len(usec), 6.0), limits)
    assert [(s, n) for s, n, _ in got] == [(first[0], 3_750), (second[0], 3_750)]


def test_a_busy_unit_under_its_limit_is_not_lossy():
    limits = Limits(30_000_000, 10_000)
    steady = flood(100_000, spacing=1_000)  # 1,000 lines/s: 30,000 a window, not a burst value
    assert reached(steady, np.full(len(steady), 6.0), limits) == []
    assert reached(flood(9_999), np.full(9_999, 6.0), limits) == []


def test_each_priority_pool_has_its_own_count():
    limits = Limits(30_000_000, 1_000)
    usec = flood(2_500)
    prio = np.where(np.arange(2_500) % 2 == 0, 6.0, 3.0)  # 1,250 info and 1,250 err lines
    got = reached(usec, prio, limits)
    assert sorted(p for _, _, p in got) == [1, 3]  # 1,250 = 1,000 x (21-16)/4: each pool hit its limit
    assert reached(flood(2_600), np.full(2_600, 6.0), limits) == []  # no burst journald would apply


def test_no_limit_no_finding():
    assert reached(flood(40_000), np.full(40_000, 6.0), Limits(0, 10_000)) == []
    assert reached(flood(40_000), np.full(40_000, 6.0), Limits(30_000_000, 0)) == []


def test_limits_command_quotes_the_unit():
    argv = ratelimit.limits_argv("a b;rm.service")
    assert argv[-1] == "a b;rm.service" and "a b" not in argv[2]


def test_invocations_without_a_start_record():
    table = pa.table({"invocation": ["a", "a", "b", "b"],
                      "message_id": [MSG_UNIT_STARTED, MSG_UNIT_PROCESS_EXIT, MSG_UNIT_PROCESS_EXIT, MSG_UNIT_FAILED]},
                     schema=pa.schema([("invocation", pa.large_string()), ("message_id", pa.large_string())]))
    assert unstarted(table, {"a", "b", "c"}) == {"b", "c"}
