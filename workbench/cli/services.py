"""``workbench status|start|stop|restart|variant``: service control on a host."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("status", help="units on a host with state, invocation, restarts, GPUs and command line")
    p.add_argument("host")
    p.add_argument("pattern", nargs="?", default="*", help="unit glob (default: every service)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--ssh-config", metavar="PATH", default=argparse.SUPPRESS,
                   help="ssh_config to resolve the alias with (as the global option)")
    p.set_defaults(func=_status)
    for verb in ("start", "stop", "restart"):
        v = sub.add_parser(verb, help=f"{verb} a unit")
        v.add_argument("host")
        v.add_argument("unit")
        v.add_argument("--wait", action="store_true", help="wait until ready or failed (start/restart)")
        v.add_argument("--health", default="/health", help="health path for --wait (default /health)")
        v.add_argument("--timeout", type=float, default=900.0)
        v.set_defaults(func=_verb, verb=verb)
    var = sub.add_parser("variant", help="run a variant of a working unit, watch it, restore the host",
                         description="Flags may be given with or without their leading dashes: "
                                     "--set ep-size=8 --set enable-nccl-nvls --unset disable-cuda-graph "
                                     "(or --set=--ep-size=8).")
    var.add_argument("host")
    var.add_argument("unit", help="the base unit (left untouched)")
    var.add_argument("--set", action="append", default=[], metavar="FLAG[=VALUE]",
                     help="set or add a flag (a boolean flag without =VALUE)")
    var.add_argument("--unset", action="append", default=[], metavar="FLAG", help="remove a flag and its value")
    var.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="set an environment variable")
    var.add_argument("--plan", action="store_true", help="show the unit diff and the commands; change nothing")
    var.add_argument("--keep", action="store_true", help="leave the variant running (and the base stopped)")
    var.add_argument("--health", default="/health")
    var.add_argument("--timeout", type=float, default=900.0)
    var.add_argument("--json", action="store_true")
    var.set_defaults(func=_variant)


def _flag(text: str) -> str:
    text = text.strip()
    if not text:
        raise ConfigError("empty flag")
    return text if text.startswith("-") else f"--{text}"


def parse_edits(sets: list[str], unsets: list[str]) -> list[tuple[str, Any]]:
    """``--set ep-size=8 --set enable-nccl-nvls --unset disable-cuda-graph`` as edits."""
    edits: list[tuple[str, Any]] = []
    for item in sets:
        flag, sep, value = item.partition("=")
        edits.append((_flag(flag), value if sep else True))
    for item in unsets:
        edits.append((_flag(item), None))
    return edits


def _host(args: argparse.Namespace) -> Any:
    from workbench.hosts import connect

    return connect(args.host, ssh_config=args.ssh_config)


def _status(args: argparse.Namespace) -> int:
    from workbench.services import inventory, services_for

    rows = [info.row() for info in inventory(services_for(_host(args)), args.pattern)]
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        print(f"{args.host}: no units match {args.pattern!r}")
        return 0
    for r in rows:
        state = r["active"] if r["load"] == "loaded" else r["load"]
        extra = f"exit {r['exit_status']}" if r["exit_status"] not in (None, 0) else ""
        gpus = ",".join(str(g) for g in r["gpus"]) if r["gpus"] else "-"  # type: ignore[attr-defined]
        print(f"{r['unit']:45} {state:>10} ({r['sub']}) {extra:8} restarts={r['restarts']} "
              f"inv={str(r['invocation'])[:8] or '-'} gpus={gpus}")
        if r["command"]:
            print(f"    {r['command']}")
    return 0


def _verb(args: argparse.Namespace) -> int:
    from workbench.services import services_for
    from workbench.watch import watch_start

    svc = services_for(_host(args))
    if args.verb == "stop":
        print(svc.stop(args.unit).describe())
        return 0
    if args.wait:
        if args.verb == "restart":
            svc.stop(args.unit)
        out = watch_start(svc, args.unit, health_path=args.health, timeout=args.timeout,
                          on_event=lambda ev: print(f"  {ev.seconds:6.1f}s  {ev.phase}", flush=True))
        print(out.describe())
        return 0 if out.ok else 1
    st = svc.start(args.unit) if args.verb == "start" else svc.restart(args.unit)
    print(st.describe())
    return 0


def _variant(args: argparse.Namespace) -> int:
    from workbench.session import HostSession, plan

    edits = parse_edits(args.set, args.unset)
    env: dict[str, str | None] = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--env needs NAME=VALUE, got {item!r}")
        env[name] = value
    host = _host(args)
    if args.plan:
        print(plan(host, args.unit, edits, env or None))
        return 0
    with HostSession(host, purpose=f"variant of {args.unit}") as session:
        trial = session.run_variant(args.unit, edits, env or None, health_path=args.health, timeout=args.timeout,
                                    keep=args.keep,
                                    on_event=lambda ev: print(f"  {ev.seconds:6.1f}s  {ev.phase}", flush=True))
        if args.keep:
            session.record.created.clear()  # the user asked to keep it: not ours to remove
            session.restored = True
            session.host.run(["rm", "-f", "--", session.record_path], timeout=30)
    out = trial.outcome
    if args.json:
        print(json.dumps({"variant": trial.variant, "outcome": out.outcome, "phase": out.phase,
                          "reason": out.reason, "seconds": round(out.seconds, 2), "exit_status": trial.exit_status,
                          "invocation": out.invocation_id}, indent=2))
    else:
        print(out.describe())
        if not out.ok:
            print("\n".join(f"    {line}" for line in out.tail[-15:]), file=sys.stderr)
        print("host restored" if not args.keep else f"kept {trial.variant} running; base left stopped")
    return 0 if out.ok else 1
