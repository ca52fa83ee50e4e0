"""``workbench deployment status|start|stop|variant|journal``: a server over several hosts as one thing.

Registration (one line for a later integration): add ``"deployment"`` to ``COMMANDS`` in
``workbench/cli/__init__.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("deployment", help="a server made of units on several hosts (SGLang --nnodes)")
    p.add_argument("action", choices=["status", "start", "stop", "variant", "journal"])
    p.add_argument("name", help="deployment name, or its unit (with --hosts when several match)")
    p.add_argument("--hosts", default="", help="comma-separated hosts, to pick a deployment by unit")
    p.add_argument("--file", help="deployments file (default: $WORKBENCH_DEPLOYMENTS, else next to the ssh_config)")
    p.add_argument("--set", action="append", default=[], metavar="FLAG[=VALUE]", help="variant: set a flag")
    p.add_argument("--unset", action="append", default=[], metavar="FLAG", help="variant: remove a flag")
    p.add_argument("--make-room", action="append", default=[], metavar="UNIT",
                   help="stop UNIT on every node for the session (restored afterwards)")
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from workbench.deployment.model import find_deployment, load_deployments
    from workbench.hosts import connect

    hosts_arg = tuple(h for h in args.hosts.split(",") if h)
    dep = find_deployment(load_deployments(args.file, ssh_config=args.ssh_config), args.name, hosts_arg)
    if args.action != "variant" and (args.set or args.unset):
        raise ConfigError("--set/--unset belong to the variant action")
    if args.action == "variant":
        from workbench.cli.services import parse_edits
        from workbench.deployment.flags import check_edits

        edits = check_edits(parse_edits(args.set, args.unset))  # refused before any host is touched
        if not edits:
            raise ConfigError("variant: give at least one --set or --unset")
    hosts = {h: connect(h, ssh_config=args.ssh_config) for h in dep.hosts}
    try:
        return _act(args, dep, hosts)
    finally:
        for h in hosts.values():
            h.close()


def _act(args: argparse.Namespace, dep: Any, hosts: dict[str, Any]) -> int:
    from workbench.deployment import control

    if args.action == "status":
        st = control.status(dep, hosts)
        diffs = control.flag_differences(dep, hosts)
        if args.json:
            print(json.dumps({"deployment": dep.name, "overall": st.overall, "nodes": st.rows(),
                              "flag_differences": diffs}, default=str))
        else:
            print(f"{dep.name}: {st.overall}")
            for row in st.rows():
                print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))
            for flag, values in diffs.items():
                print(f"  differs between nodes: {flag} {values}")
        return 0 if st.overall != "degraded" else 1
    if args.action == "stop":
        control.stop(dep, hosts)
        return 0
    if args.action == "journal":
        return _journal(args, dep, hosts)
    from workbench.cli.services import parse_edits

    with control.DeploymentSession(dep, hosts, purpose="workbench deployment", ready_timeout=args.timeout,
                                   make_room=args.make_room) as ds:
        if args.action == "start":
            out = ds.start_base(timeout=args.timeout)
        else:
            out = ds.run_variant(parse_edits(args.set, args.unset), timeout=args.timeout).outcome
    print(json.dumps({"outcome": out.outcome, "failed_node": out.failed_node, "reason": out.reason,
                      "phase": out.phase, "seconds": round(out.seconds, 2)}) if args.json else out.describe())
    return 0 if out.ok else 1


def _journal(args: argparse.Namespace, dep: Any, hosts: dict[str, Any]) -> int:
    from workbench.deployment.clock import measure_offset
    from workbench.deployment.journals import first_failure, merge, read_nodes
    from workbench.services import services_for

    svcs = {n.label: services_for(hosts[n.host]) for n in dep.nodes}
    frames = read_nodes(dep, svcs)
    offsets = {n.label: measure_offset(hosts[n.host]) for n in dep.nodes}
    for off in offsets.values():
        print(f"# {off.describe()}", file=sys.stderr)
    merged = merge(frames, {k: v.offset for k, v in offsets.items()})
    cause = first_failure(frames, {k: v.offset for k, v in offsets.items()})
    if args.json:
        print(merged[["time_corrected", "node", "rank", "message"]].to_json(orient="records", date_format="iso"))
    else:
        for row in merged.itertuples():
            print(f"{row.time_corrected:%H:%M:%S.%f} {row.node} {row.message}")
    print(f"# first failure: {cause.describe() if cause else 'none'}", file=sys.stderr)
    return 0
