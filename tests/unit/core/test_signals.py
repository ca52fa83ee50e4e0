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


HELD = textwrap.dedent("""
    import signal, sys, threading
    from workbench import signals
    with signals.terminate_as_interrupt():
        mode = sys.argv[1]
        try:
            if mode == "held":
                with signals.held:
                    with signals.held:  # nested: raised at the outermost end
                        signal.raise_signal(signal.SIGINT)
                        print("INSIDE", flush=True)
                    print("OUTER", flush=True)
                print("NOT REACHED", flush=True)
            elif mode == "held-error":  # an error leaving the call: the interrupt still comes, after it
                try:
                    with signals.held:
                        signal.raise_signal(signal.SIGINT)
                        raise OSError("the call failed")
                except OSError:
                    print("NOT REACHED", flush=True)
            elif mode == "restore":
                with signals.shielded():
                    with signals.held:
                        signal.raise_signal(signal.SIGINT)
                    print("HELD ENDED", flush=True)
                    signal.raise_signal(signal.SIGINT)
                    print("RESTORED", flush=True)
                print("NOT REACHED", flush=True)
            elif mode == "held-twice":  # a second Ctrl-C inside the call: at once
                with signals.held:
                    signal.raise_signal(signal.SIGINT)
                    print("ONE", flush=True)
                    signal.raise_signal(signal.SIGINT)
                    print("NOT REACHED", flush=True)
            elif mode == "twice":
                for k in range(2):
                    try:
                        signal.raise_signal(signal.SIGINT)
                        print("NOT REACHED", flush=True)
                    except KeyboardInterrupt:
                        print(f"INTERRUPTED {k}", flush=True)
                raise SystemExit(0)
            elif mode == "thread":  # another thread's held calls do not hold the main thread's signal
                inside, release = threading.Event(), threading.Event()
                def work():
                    with signals.held:
                        inside.set()
                        release.wait(10)
                t = threading.Thread(target=work)
                t.start()
                inside.wait(10)
                try:
                    signal.raise_signal(signal.SIGINT)
                    print("NOT REACHED", flush=True)
                finally:
                    release.set()
                    t.join()
        except KeyboardInterrupt as exc:
            print(f"INTERRUPTED {exc} {type(exc.__context__).__name__}", flush=True)
""")


def _held(mode: str) -> tuple[list[str], str]:
    p = subprocess.run([sys.executable, "-c", HELD, mode], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines(), p.stderr


def test_ctrl_c_inside_a_held_call_is_raised_when_the_outermost_call_returns():
    assert _held("held")[0] == ["INSIDE", "OUTER", "INTERRUPTED SIGINT NoneType"]


def test_ctrl_c_inside_a_held_call_that_fails_comes_after_its_error():
    assert _held("held-error")[0] == ["INTERRUPTED SIGINT OSError"]


def test_ctrl_c_during_a_restore_waits_for_the_restore_not_for_its_calls():
    out, err = _held("restore")
    assert out == ["HELD ENDED", "RESTORED", "INTERRUPTED SIGINT NoneType"]
    assert "SIGINT: finishing the restore first" in err and "SIGINT again: still restoring" in err


def test_a_second_ctrl_c_interrupts_again():
    assert _held("twice")[0] == ["INTERRUPTED 0", "INTERRUPTED 1"]


def test_held_calls_of_another_thread_do_not_hold_the_main_threads_ctrl_c():
    assert _held("thread")[0] == ["INTERRUPTED SIGINT NoneType"]


OUTSIDE = textwrap.dedent("""
    import signal, sys
    from workbench import signals
    # Python's own handler, whatever this process inherited (started in the background, SIGINT is ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if sys.argv[1] == "custom":  # a program's own handler (ipykernel's, say) gets the signal after the call
        signal.signal(signal.SIGINT, lambda *_: print("HANDLER", flush=True))
    try:
        with signals.held:
            signal.raise_signal(signal.SIGINT)
            print("INSIDE", flush=True)
            if sys.argv[1] == "twice":  # a second one: to the program's handler at once
                signal.raise_signal(signal.SIGINT)
                print("NOT REACHED", flush=True)
        print("AFTER", flush=True)
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
    print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
""")


@pytest.mark.parametrize(("mode", "expected"), [("default", ["INSIDE", "INTERRUPTED", "True"]),
                                                ("custom", ["INSIDE", "HANDLER", "AFTER", "False"]),
                                                ("twice", ["INSIDE", "INTERRUPTED", "True"])])
def test_outside_the_cli_a_held_call_hands_ctrl_c_to_the_programs_own_handler_after_it(mode, expected):
    p = subprocess.run([sys.executable, "-c", OUTSIDE, mode], capture_output=True, text=True, timeout=30)
    assert p.stdout.splitlines() == expected, p.stderr


def test_a_second_ctrl_c_inside_a_held_call_interrupts_at_once():
    assert _held("held-twice")[0] == ["ONE", "INTERRUPTED SIGINT NoneType"]


def test_a_ctrl_c_the_process_was_started_ignoring_stays_ignored():
    """A shell script's background job starts with SIGINT ignored; Python leaves it so, and so does the CLI's handler."""
    program = ("import signal\nfrom workbench import signals\n"
               "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
               "with signals.terminate_as_interrupt():\n"
               "    print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN, signal.getsignal(signal.SIGTERM) != signal.SIG_DFL)\n")
    p = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30)
    assert p.stdout.split() == ["True", "True"], p.stderr
