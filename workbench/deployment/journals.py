"""Journals across nodes: one frame in corrected time order, and the first failing node and rank.

Each node's rows keep their journal time (``time``, the host's clock) and gain ``node`` and
``time_corrected`` (``time`` minus the host's measured clock offset); rows are sorted by the
corrected time, ties kept in node then journal order.  The frame's ``attrs["clock_offsets"]``
says which offset was taken off each node.

The root cause across nodes is the real exception with the earliest corrected time: a rank that
merely waited for a dead peer (an NCCL watchdog timeout, rank 0's "waiting for clients" after
a node never joined, a scheduler found dead) is a consequence, not a cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import pandas as pd

from workbench.deployment.model import Deployment
from workbench.deployment.topology import RENDEZVOUS_BEGIN, RENDEZVOUS_JOINED
from workbench.journal.read import read as read_journal
from workbench.services import Services
from workbench.tracebacks import analyze, is_pointer

# Failures that only say "a peer is gone": never the root cause when a real one exists.
CONSEQUENCES = (
    "Watchdog caught collective operation timeout",
    "waiting for clients",
    "scheduler is dead",
    "Received sigquit from a child process",
)
# The launcher's pipe to a scheduler that died: it follows "Rank N scheduler is dead".
CONSEQUENCE_TYPES = ("EOFError",)


@dataclass(frozen=True)
class NodeFailure:
    node: str
    rank: str  # "node1/TP9" (node-qualified), or the node alone when no rank is known
    exception_type: str | None
    message: str
    phase: str
    time: pd.Timestamp  # corrected
    consequence: bool

    def describe(self) -> str:
        what = f"{self.exception_type}: {self.message}" if self.exception_type else self.message
        return f"{self.rank} in {self.phase} at {self.time:%H:%M:%S.%f}: {what}"


def read_nodes(dep: Deployment, svcs: Mapping[str, Services], units: Mapping[str, str] | None = None,
               invocation: str | int = "last") -> dict[str, pd.DataFrame]:
    """Each node's journal of the deployment's unit (or the variant that ran there), by node label."""
    return {n.label: read_journal(svcs[n.label], (units or {}).get(n.label, n.unit), invocation=invocation)
            for n in dep.nodes}


def merge(frames: Mapping[str, pd.DataFrame], offsets: Mapping[str, float] | None = None) -> pd.DataFrame:
    offsets = {label: float((offsets or {}).get(label, 0.0)) for label in frames}
    parts = []
    for order, (label, frame) in enumerate(frames.items()):
        part = pd.DataFrame(frame).copy()
        part.insert(0, "node", label)
        part["time_corrected"] = part["time"] - pd.to_timedelta(offsets[label], unit="s")
        part["_node_order"] = order
        part["_row"] = range(len(part))
        parts.append(part)
    merged = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["node", "time_corrected"])
    if parts:
        merged = merged.sort_values(["time_corrected", "_node_order", "_row"], kind="stable")
        merged = merged.drop(columns=["_node_order", "_row"]).reset_index(drop=True)
    merged.attrs["clock_offsets"] = offsets
    return merged


def _own(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["origin"].isin(["unit", "unattributed"])] if "origin" in frame else frame


def node_failures(frames: Mapping[str, pd.DataFrame], offsets: Mapping[str, float] | None = None) -> list[NodeFailure]:
    """Every node's failures (exceptions and C++ aborts), node-qualified, in corrected time order."""
    out = []
    for label, frame in frames.items():
        own = _own(frame)
        text = "\n".join(own["message"].fillna("").tolist())
        analysis = analyze(text)
        shift = pd.to_timedelta(float((offsets or {}).get(label, 0.0)), unit="s")
        times = own["time"].tolist()

        def at(line: int, times: list[pd.Timestamp] = times, shift: pd.Timedelta = shift) -> pd.Timestamp:
            return times[min(max(line - 1, 0), len(times) - 1)] - shift

        for tb in analysis.tracebacks:
            if tb.exception_type is None:
                continue
            msg = tb.message or ""
            out.append(NodeFailure(label, f"{label}/{tb.rank}" if tb.rank else label, tb.exception_type, msg,
                                   tb.phase, at(tb.start_line),
                                   tb.exception_type in CONSEQUENCE_TYPES or _is_consequence(msg) or is_pointer(tb)))
        for cpp in analysis.cpp_exceptions:
            rank = f"{label}/{cpp.rank}" if cpp.rank else label
            out.append(NodeFailure(label, rank, cpp.exception_type, cpp.message, cpp.phase, at(cpp.line),
                                   _is_consequence(cpp.message)))
    return sorted(_relays(out), key=lambda f: f.time)


def _relays(failures: list[NodeFailure]) -> list[NodeFailure]:
    """A failure that quotes another's message relays it (vLLM's executor on the head: "Worker failed
    with error '<node 1's error>'"): a consequence, whichever journal stamped it first. Journald stamps a
    line when it reads it, so a relay 2 ms after the cause can carry the earlier time."""
    def quotes(f: NodeFailure, g: NodeFailure) -> bool:
        said = g.message.strip()[:80]
        return len(said) >= 12 and said != f.message.strip()[:80] and said in f.message
    return [replace(f, consequence=True) if not f.consequence and any(quotes(f, g) for g in failures) else f
            for f in failures]


def _is_consequence(text: str) -> bool:
    return any(c in text for c in CONSEQUENCES)


def not_joined(frames: Mapping[str, pd.DataFrame], offsets: Mapping[str, float] | None = None) -> list[NodeFailure]:
    """Nodes that began the rendezvous and never finished it (stopped before their own error, if any)."""
    out = []
    for label, frame in frames.items():
        own = _own(frame)
        text = own["message"].fillna("")
        began = text.str.contains(RENDEZVOUS_BEGIN)
        if began.any() and not text.str.contains(RENDEZVOUS_JOINED).any():
            shift = pd.to_timedelta(float((offsets or {}).get(label, 0.0)), unit="s")
            out.append(NodeFailure(label, label, None, "began the rendezvous and never joined it "
                                   "(no line that it joined)", "nccl_init", own["time"][began].iloc[0] - shift, False))
    return out


def first_failure(frames: Mapping[str, pd.DataFrame], offsets: Mapping[str, float] | None = None) -> NodeFailure | None:
    """The root cause across nodes: the earliest real failure; else, when the only failures are a
    head waiting for clients, the node that never joined; else the earliest failure of any kind."""
    failures = node_failures(frames, offsets)
    real = [f for f in failures if not f.consequence]
    if real:
        return real[0]
    if failures and "waiting for clients" in failures[0].message:
        missing = [f for f in not_joined(frames, offsets) if f.node != failures[0].node]
        if missing:
            return missing[0]
    return failures[0] if failures else None
