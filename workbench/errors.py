"""The one exception tree of the workbench.

Every error carries the data a caller needs to act on it, and its message says
what happened and what to do::

    WorkbenchError
    ├── ConfigError              bad input: parameters, flags, files (nothing was touched)
    │   └── DeploymentMismatch   a node's command line disagrees with its deployment (.node, .flag, ...)
    ├── HostError                anything about reaching or using a host (.host)
    │   ├── HostKeyError         unknown or changed host key: refused (fail closed)
    │   ├── ConnectError         could not connect / authenticate
    │   │   └── SudoAuthFailure  sudo refused: wrong password, none given, or not allowed
    │   ├── CommandTimeout       a command ran past its deadline (.result, killed on the host)
    │   ├── HostUnresponsive     the host stopped answering (.waited, .restored)
    │   ├── CommandFailed        a command exited non-zero where success was required (.result)
    │   ├── SessionFenced        the session's commands are refused: its host was taken over (.why)
    │   └── GuardError           the host's guard could not be armed (before any change)
    ├── ServiceError             unit-level problems (.host, .unit)
    │   ├── UnitNotFound         LoadState=not-found
    │   ├── VariantError         a variant could not be built or verified
    │   ├── GpuBusy              the GPUs are held by something else
    │   └── ContainerRuntimeMissing  no podman/docker on the host (container backend)
    ├── LockHeld                 another session holds the host lock (.owner)
    ├── RestoreError             the host could not be put back as found (.details)
    │   └── StaleRecord          the base changed since the session recorded it (.changes)
    ├── ParseError               input text could not be parsed (.source, .line)
    └── RunbookError             a runbook run failed (.run_dir, .kind)
"""

from __future__ import annotations

from typing import Any


class WorkbenchError(Exception):
    """Base of every error the workbench raises on purpose."""


class ConfigError(WorkbenchError, ValueError):
    """Bad input (parameters, flags, files); raised before anything is changed."""


class DeploymentMismatch(ConfigError):
    """A deployment's node runs a command line that does not fit the deployment: ``--nnodes`` is not
    its node count, ``--node-rank`` not the node's rank, or ``--dist-init-addr`` not the head's.
    Found in the pre-flight read of every node's command line, before any node is stopped or
    started.  ``problems`` lists every one as (node, host, flag, expected, found); the first is
    also ``.node`` / ``.host`` / ``.flag`` / ``.expected`` / ``.found``."""

    def __init__(self, message: str, *, deployment: str,
                 problems: list[tuple[str, str, str, str, str]]) -> None:
        super().__init__(message)
        self.deployment = deployment
        self.problems = problems
        self.node, self.host, self.flag, self.expected, self.found = problems[0]


class HostError(WorkbenchError):
    """A problem reaching or using a host."""

    def __init__(self, message: str, *, host: str | None = None, result: Any = None) -> None:
        super().__init__(message)
        self.host = host
        self.result = result


class HostKeyError(HostError):
    """The host's key is unknown or has changed; the connection was refused."""


class ConnectError(HostError):
    """The host could not be reached or refused authentication."""


class SudoAuthFailure(ConnectError):
    """``sudo`` on the host refused us: a wrong password, none given where one is needed, or
    a user sudoers does not allow.  Raised before any command ran as root."""


class CommandTimeout(HostError, TimeoutError):
    """A command ran past its deadline; it was killed on the host."""


class CommandRefused(HostError):
    """The host did not start a command, though its SSH connection answers: sshd refused the channel's
    request (a host out of processes or memory).  Nothing ran; the connection (and a session's lock
    held over it) is kept."""


class HostUnresponsive(HostError, TimeoutError):
    """The host stopped answering: ``waited`` seconds without a reply; ``restored`` says what
    became of the host: ``"restored"``, ``"guard"`` (its guard restores it), ``"not restored"``,
    or ``""`` when no session had changed it."""

    def __init__(self, message: str, *, host: str | None = None, result: Any = None, waited: float | None = None,
                 restored: str = "") -> None:
        super().__init__(message, host=host, result=result)
        self.waited = waited
        self.restored = restored


class CommandFailed(HostError):
    """A command exited non-zero where success was required."""


class SessionFenced(HostError):
    """A command of a session was refused on the host: the session was fenced off, because its host
    was handed to a restorer (its guard, or a later session); ``why`` says what the restorer found,
    when it said.  Nothing more of the session runs there (:mod:`workbench.inflight`)."""

    def __init__(self, message: str, *, host: str | None = None, result: Any = None, why: str = "") -> None:
        super().__init__(message, host=host, result=result)
        self.why = why


class GuardError(HostError):
    """The guard that restores a host without its controller could not be armed; nothing was changed."""


class ServiceError(WorkbenchError):
    """A unit-level problem on a host."""

    def __init__(self, message: str, *, host: str | None = None, unit: str | None = None) -> None:
        super().__init__(message)
        self.host = host
        self.unit = unit


class Stopped(WorkbenchError):
    """The work was told to stop (its run was interrupted, or work beside it failed) and ended early."""


class UnitNotFound(ServiceError, LookupError):
    """The unit does not exist on the host (LoadState=not-found)."""


class VariantError(ServiceError):
    """A variant could not be built, verified or materialized."""


class GpuBusy(ServiceError):
    """The GPUs a start needs are held by other processes."""


class LockHeld(WorkbenchError):
    """Another session holds the host lock."""

    def __init__(self, message: str, *, host: str | None = None, owner: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.host = host
        self.owner = owner or {}


class RestoreError(WorkbenchError):
    """The host could not be put back exactly as it was found."""

    def __init__(self, message: str, *, host: str | None = None, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.host = host
        self.details = details or []


class StaleRecord(RestoreError):
    """A base unit changed (files or enablement) since the session recorded it: the record no longer
    says what "as found" is.  ``changes`` maps each unit to what changed; nothing is guessed."""

    def __init__(self, message: str, *, host: str | None = None, details: list[str] | None = None,
                 changes: dict[str, list[str]] | None = None) -> None:
        super().__init__(message, host=host, details=details)
        self.changes = changes or {}


class ParseError(WorkbenchError, ValueError):
    """Input text could not be parsed."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.line = line


class RunbookError(WorkbenchError):
    """A runbook run failed; ``kind`` tells kernel death, server crash, SSH loss, ..."""

    def __init__(self, message: str, *, run_dir: str | None = None, kind: str = "error") -> None:
        super().__init__(message)
        self.run_dir = run_dir
        self.kind = kind


class ContainerRuntimeMissing(ServiceError):
    """The host has no container runtime (``podman``, or ``docker`` with a daemon that answers)."""
