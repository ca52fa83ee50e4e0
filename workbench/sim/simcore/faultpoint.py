"""Per-process fault arming: native kernels ask here whether they must fail right now."""

from __future__ import annotations

from typing import Any

from .faults import Strike

_state: dict[str, Any] = {"strike": None, "rank": -1, "phase": None, "fired": False}


def arm(strike: Strike | None, rank: int) -> None:
    """Arm this process (global ``rank``) with the server's strike, if it names this rank."""
    _state["strike"] = strike if strike is not None and rank in strike.ranks else None
    _state["rank"] = rank
    _state["fired"] = False


def set_phase(phase: str) -> None:
    _state["phase"] = phase


def phase() -> str | None:
    return _state["phase"]


def armed() -> Strike | None:
    return _state["strike"]


def fire() -> None:
    """Warmup/serving: the trigger is met; the next forward on this rank must fail."""
    _state["fired"] = True


def pending() -> bool:
    """True when a forward on this rank is about to fail (selects the eager model path)."""
    s: Strike | None = _state["strike"]
    if s is None or s.phase != _state["phase"]:
        return False
    return s.phase not in ("warmup", "serving") or _state["fired"]


def check(kind: str) -> dict[str, Any] | None:
    """Parameters of the armed fault when a ``kind`` error must be raised now, else None."""
    s: Strike | None = _state["strike"]
    if s is None or s.kind != kind or not pending():
        return None
    return dict(s.fault.params)
