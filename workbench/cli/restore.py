"""``workbench restore HOST``: put a host back by hand from the record a session left, saying what it did."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("restore", help="restore a host from the record an abandoned session left",
                       description="Takes the host's lock, reads the session record on the host, removes the "
                                   "variants it lists and puts each base unit back in its recorded run state, "
                                   "then checks the host is as found and removes the record.",
                       epilog="examples:\n  workbench restore gpu-a\n  workbench restore gpu-a --accept-current "
                              "   # the base was edited since: keep it as it is now\n"
                              "  workbench restore gpu-a --lock-wait 60 --json")
    p.add_argument("host", help="host alias (ssh_config), 'local', or a local-testbed host")
    p.add_argument("--accept-current", action="store_true",
                   help="a base unit changed since the record: take its current files as the state found")
    p.add_argument("--lock-wait", type=float, default=0.0, metavar="S",
                   help="seconds to wait for another session (or the host's guard) to let go of the lock")
    p.add_argument("--json", action="store_true", help="what was done, as one JSON object on stdout")
    p.set_defaults(func=_restore)


def _restore(args: argparse.Namespace) -> int:
    from workbench.hosts import connect
    from workbench.session import restore_host

    report = restore_host(connect(args.host, ssh_config=args.ssh_config), accept_current=args.accept_current,
                          lock_wait=args.lock_wait)
    if args.json:
        print(json.dumps({"host": report.host, "found": report.found, "owner": report.owner,
                          "actions": report.actions, "guard": report.guard}, indent=2, default=str))
        return 0
    if not report.found:
        print(f"{args.host}: no session record: nothing to restore (the host is as its last session left it)")
        return 0
    o = report.owner
    print(f"{args.host}: record of the session of {o.get('user', '?')}@{o.get('machine', '?')} "
          f"({o.get('purpose') or 'no purpose'}, since {o.get('since', '?')})")
    if report.guard.get("fired"):
        print(f"  its guard had run ({report.guard.get('why', '')}): " + "; ".join(report.guard.get("problems", [])))
    for action in report.actions:
        print(f"  {action}")
    print(f"{args.host}: restored: no variant left, base units as recorded, record removed")
    return 0
