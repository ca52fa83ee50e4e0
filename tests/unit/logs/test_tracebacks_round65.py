"""Mechanisms added in the twenty-third stop, from misses of the pooled held-outs, on lines written in the shapes of
real logs (the thread says which)."""

from __future__ import annotations

from workbench.tracebacks import analyze

_STACK = ("Traceback (most recent call last):\n"
          '  File "/usr/local/lib/python3.11/site-packages/swift/megatron/trainers/grpo_trainer.py", line 122, in '
          "_init_rollout_engine\n"
          "    super()._init_rollout_engine()\n")


def test_an_error_record_above_a_cut_stack_is_the_line_that_failed() -> None:
    """ms-swift#9613: a C++ allocator's error line, then a Python stack cut before its exception line. The line says
    what failed (a log line), the stack where; a record logged under the stack's own header is the exception's."""
    rc = analyze("CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:119\n" + _STACK).root_cause
    assert (rc.kind, rc.exception_type, rc.message) == ("log_line", None,
                                                        "CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:119")
    assert rc.innermost_frame is not None and rc.innermost_frame.function == "_init_rollout_engine"
    assert analyze(_STACK).root_cause.kind == "exception"  # nothing above it: the stack, cut


def test_a_python_logging_record_before_a_stack_gives_its_level_and_words() -> None:
    """xinference#1746: '%(asctime)s %(name)s %(process)d %(levelname)s' before the stack logger.exception printed; the
    record was plain text, so its time and logger's name were taken for the failure's words."""
    record = ("2024-06-29 22:47:51,612 xinference.api.restful_api 18792 ERROR    Chat completion stream got an error: "
              "[address=127.0.0.1:55110, pid=18927] GenerationMixin._get_logits_warper() missing 1 required positional "
              "argument: 'device'\n")
    rc = analyze(record + _STACK).root_cause
    assert rc.message.startswith("Chat completion stream got an error: ") or rc.message.startswith("GenerationMixin")
    assert "2024-06-29" not in rc.message and "restful_api" not in rc.message


def test_a_line_of_many_times_is_read_once_and_never_raises() -> None:
    """A time before a known header is peeled once: a line of thousands of times (a runaway logger) stays plain text
    instead of recursing once per time."""
    line = "2025-01-01 10:00:00 " * 20000 + "ERROR 07-09 17:59:40 [core.py:586] boom"
    assert analyze(line + "\n").lines >= 1  # (a RecursionError before)
