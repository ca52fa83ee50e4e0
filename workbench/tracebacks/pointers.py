"""What only points at a failure reported elsewhere: a wrapper, a dead child, a shutdown.

Such an exception is never the first thing to fix when the same start shows the failure it points at; the root
cause is looked for behind it (``diagnose``), and the last error of a start that only points takes the phase of
the failure it points at.
"""

from __future__ import annotations

import re

from workbench.code_phases import STEPS
from workbench.tracebacks.model import CppException, Final, RootCause, Traceback

_POINTER = re.compile(
    r"See root cause above|See stack trace|stack trace \(?above|check the stack trace above|"
    r"Engine core initialization failed|EngineCore encountered an issue|initialization failed due to an exception in a background process|"
    r"Worker failed with error|died during initialization|scheduler (?:is dead|died)|^Initialization failed|"
    r"died unexpectedly|Please see the error messages above|Check the logs? above|due to a previous error", re.I)
_POINTER_TYPES = {
    "SystemExit", "KeyboardInterrupt", "EOFError", "BrokenPipeError", "ConnectionResetError",
    "CancelledError", "EngineDeadError", "ChildFailedError", "ProcessRaisedException", "ProcessExitedException",
    "RayTaskError", "RayActorError",
}
# vLLM's executor relays a worker's error in its own: "Worker failed with error '<the error>', please
# check the stack trace above" carries the error itself, so it points only when the error is there
_RELAYED = re.compile(r"failed with error '[^']{12,}")


def is_pointer(t: Traceback | CppException | Final) -> bool:
    """True when the exception only reports a failure elsewhere (a wrapper, a dead child, shutdown)."""
    etype = (t.exception_type or "").split("(", 1)[0].rsplit(".", 1)[-1]
    message = t.message or ""
    # a web framework's HTTP 5xx only says the request failed inside the server (TensorRT-LLM behind Briton)
    if etype == "HTTPException" and message.lstrip()[:1] == "5":
        return True
    return etype in _POINTER_TYPES or (bool(_POINTER.search(message)) and _RELAYED.search(message) is None)


def points_to_roots_step(final: Final, root: RootCause) -> bool:
    """The last error only reports the root cause's, raised later in the same start (vLLM's "Engine core initialization
    failed. See root cause above."): it failed in the step the root failed in, whatever the words or the timeline
    around the pointer alone would say (start-up, or the step the log had reached when it was printed)."""
    return final.phase != root.phase and root.phase in STEPS and root.line < final.line and is_pointer(final)
