"""A stack cut before its exception line, under the record that announced it: that record's words say what failed."""

from __future__ import annotations

from workbench.tracebacks import analyze

_HEAD = "(EngineCore_DP0 pid=7) ERROR 05-16 11:10:22 [core.py:708] "


def test_the_announcing_record_of_a_cut_stack_is_its_message() -> None:
    log = (f"{_HEAD}EngineCore encountered a fatal error.\n"
           f"{_HEAD}Traceback (most recent call last):\n"
           f'{_HEAD}  File "/x/vllm/v1/engine/core.py", line 699, in run_engine_core\n'
           f"{_HEAD}    engine_core.run_busy_loop()\n")
    root = analyze(log).root_cause
    assert root is not None and root.exception_type is None
    assert root.message == "EngineCore encountered a fatal error."


def test_a_record_naming_only_the_call_stays_out() -> None:
    log = (f"{_HEAD}Error executing method 'determine_available_memory'. This might cause deadlock.\n"
           f"{_HEAD}Traceback (most recent call last):\n"
           f'{_HEAD}  File "/x/vllm/worker/worker_base.py", line 620, in execute_method\n')
    root = analyze(log).root_cause
    assert root is not None and "Error executing method" not in root.message
