"""SIGTERM and SIGHUP end a command as Ctrl-C does; one arriving during a restore waits for its end."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

PROGRAM = textwrap.dedent("""
    import sys, time
    from workbench import signals
    with signals.terminate_as_interrupt():
        try:
            print("READY", flush=True)
            if sys.argv[1] == "shielded":
                with signals.shielded():
                    print("RESTORING", flush=True)
                    time.sleep(1.5)
                    print("RESTORED", flush=True)
            else:
                time.sleep(30)
        except KeyboardInterrupt as exc:
            print(f"INTERRUPTED {exc}", flush=True)
""")


def start(mode: str) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", PROGRAM, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "READY"
    return p


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_termination_signals_raise_keyboard_interrupt(sig):
    p = start("plain")
    p.send_signal(sig)
    out, err = p.communicate(timeout=10)
    assert f"INTERRUPTED {sig.name}" in out and p.returncode == 0
    assert f"{sig.name}: stopping and restoring the host" in err


def test_a_signal_during_a_restore_waits_for_its_end_and_a_second_one_is_ignored():
    p = start("shielded")
    assert p.stdout is not None and p.stdout.readline().strip() == "RESTORING"
    p.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=10)
    assert out.splitlines() == ["RESTORED", "INTERRUPTED SIGTERM"], out
    assert "finishing the restore first" in err and "still restoring the host" in err
