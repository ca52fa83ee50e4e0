"""Multi-node deployments on the command line.

Wherever a command takes one host, a host list (``gpu-a,gpu-b``, ``gpu-[a-b]``, an inventory group)
with a unit that is a deployment's unit on exactly those hosts (or the deployment's name in place
of the unit, or the name alone in place of the host) means that deployment:

- ``workbench status gpu-a,gpu-b sglang-k26-2node.service`` — every node and the overall state;
- ``workbench start|stop|restart gpu-a,gpu-b sglang-k26-2node.service`` — workers first on a start
  (they wait at the rendezvous), the head first on a stop; ``--wait`` judges the whole start;
- ``workbench tracebacks --host gpu-a,gpu-b --unit ...`` — each node's failures and the first
  failing node and rank across nodes (``node1/TP9``), with the clock offsets taken off;
- ``workbench journal gpu-a,gpu-b ...`` — one journal in corrected time order with a node column.

``workbench deployment ACTION NAME`` does the same by name, and runs a variant on every node.
:func:`resolve` is the one place that tells a deployment from a host.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.deployment.model import Deployment
    from workbench.hosts import Host

EXAMPLES = """\
examples:
  workbench deployment status k26-2node --json
  workbench deployment start k26-2node --make-room sglang-k26-ddtree.service
  workbench deployment variant k26-2node --set enable-nccl-nvls --make-room sglang-k26-ddtree.service
  workbench deployment journal k26-2node
the same through the usual commands, with a host list:
  workbench status gpu-a,gpu-b sglang-k26-2node.service
  workbench tracebacks --host gpu-a,gpu-b --unit sglang-k26-2node.service
exit: 0 ok (status: every node running or none), 1 a failed start or a degraded deployment,
2 bad input, 3 host problem.
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("deployment", help="a server made of units or containers on several hosts (SGLang --nnodes)",
                       description="A deployment is described once in deployments.toml ($WORKBENCH_DEPLOYMENTS, "
                                   "else beside the ssh_config); start order workers first, stop order head "
                                   "first, a variant edits every node the same way.",
                       epilog=EXAMPLES)
    p.add_argument("action", choices=["status", "start", "stop", "variant", "journal"], help="what to do")
    p.add_argument("name", help="deployment name, or its unit (with --hosts when several match)")
    p.add_argument("--hosts", default="", help="host list (commas, ranges, groups) to pick a deployment by unit")
    p.add_argument("--file", help="deployments file (default: $WORKBENCH_DEPLOYMENTS, else next to the ssh_config)")
    p.add_argument("--set", action="append", default=[], metavar="FLAG[=VALUE]", help="variant: set a flag")
    p.add_argument("--unset", action="append", default=[], metavar="FLAG", help="variant: remove a flag")
    p.add_argument("--make-room", action="append", default=[], metavar="UNIT",
                   help="stop UNIT on every node for the session (restored afterwards)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for a judged start")
    p.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS",
                   help="start/variant: wait this long for a node another session holds (0: fail at once, exit 3)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=_run)


# -- telling a deployment from a host ----------------------------------------------


def _unit_name(word: str) -> str:
    return word if "." in word or "*" in word else f"{word}.service"


def resolve(host_spec: str, unit: str | None, *, ssh_config: str | None = None,
            path: str | None = None, several_hosts_ok: bool = False) -> Deployment | None:
    """The deployment a command's host (list) and unit mean, or None for an ordinary single host.

    A host list of several hosts must match one deployment (by its unit or name, on exactly those
    hosts): anything else is a :class:`ConfigError` before a host is touched.  One word that is a
    deployment's name (and not a host list) is that deployment."""
    from workbench.deployment.model import default_path, find_deployment, load_deployments
    from workbench.inventory import expand_hosts

    hosts = expand_hosts(host_spec)
    have_file = path is not None or default_path(ssh_config) is not None
    if len(hosts) == 1:
        if not have_file:
            return None
        try:
            deps = load_deployments(path, ssh_config=ssh_config)
        except ConfigError:  # a broken deployments file is no business of a single-host command
            return None
        if hosts[0] in deps and unit in (None, "*", "", deps[hosts[0]].head.unit, _unit_name(hosts[0])):
            return deps[hosts[0]]
        return None
    if not have_file and several_hosts_ok and (not unit or unit == "*"):
        return None
    if not have_file:
        raise ConfigError(f"{host_spec!r} names {len(hosts)} hosts: a command on several hosts needs a "
                          "deployment (no deployments file: set $WORKBENCH_DEPLOYMENTS or put deployments.toml "
                          "beside the ssh_config)")
    deps = load_deployments(path, ssh_config=ssh_config)
    if not unit or unit == "*":
        spanning = [d for d in deps.values() if set(d.hosts) == set(hosts)]
        if len(spanning) != 1 and several_hosts_ok:
            return None
        if len(spanning) != 1:
            raise ConfigError(f"{', '.join(hosts)}: {len(spanning)} deployments span these hosts "
                              f"({', '.join(d.name for d in spanning) or 'none'}); name the unit")
        return spanning[0]
    return find_deployment(deps, unit if unit in deps else _unit_name(unit), tuple(hosts))


@contextmanager
def connected(dep: Deployment, ssh_config: str | None) -> Iterator[dict[str, Host]]:
    """Every node's host, closed on the way out; a node no inventory or ssh_config names is a
    :class:`ConfigError` (exit 2) before any node is reached."""
    from workbench.hosts import connect
    from workbench.inventory import require_known

    require_known(dep.hosts, ssh_config=ssh_config, what=f"deployment {dep.name}: ")
    hosts: dict[str, Host] = {}
    try:
        for h in dep.hosts:
            hosts[h] = connect(h, ssh_config=ssh_config)
        yield hosts
    finally:
        for host in hosts.values():
            host.close()


# -- status / start / stop / restart -------------------------------------------------


def print_status(dep: Deployment, hosts: dict[str, Host], *, as_json: bool) -> int:
    from workbench.deployment import control
    from workbench.errors import DeploymentMismatch

    st = control.status(dep, hosts)
    refused: DeploymentMismatch | None = None
    try:
        diffs = control.flag_differences(dep, hosts)
    except DeploymentMismatch as exc:  # shown with the nodes, then exit 2: nothing can start it as it is
        refused, diffs = exc, {}
    if as_json:
        print(json.dumps({"deployment": dep.name, "overall": st.overall, "nodes": st.rows(),
                          "flag_differences": diffs, **({"mismatch": [
                              dict(zip(("node", "host", "flag", "expected", "found"), p, strict=True))
                              for p in refused.problems]} if refused else {})}, indent=2, default=str))
    else:
        print(f"{dep.name}: {st.overall.upper()} ({len(dep.nodes)} nodes, head {dep.head.host})")
        for n in st.nodes:
            s = n.status
            extra = f" exit {s.exit_status}" if s.exit_status not in (None, 0) else ""
            print(f"  {n.node.label:6} {n.node.host:12} {s.unit:40} {s.active_state:>10} ({s.sub_state})"
                  f"{extra} pid={s.main_pid or '-'}")
        if diffs:
            print(f"  flags differ between nodes: {control.describe_differences(diffs)}")
    if refused is not None:
        raise refused
    return 0 if st.overall != "degraded" else 1


def verb(dep: Deployment, hosts: dict[str, Host], action: str, *, wait: bool, timeout: float,
         health_path: str = "/health") -> int:
    """``start`` (workers first), ``stop`` (head first), ``restart`` (both); ``wait``: judge the start."""
    from workbench.deployment import control
    from workbench.deployment.flags import differences
    from workbench.services import services_for

    svcs = {h: services_for(host) for h, host in hosts.items()}
    argvs = control.preflight(dep, dict(svcs))  # a node that does not fit: refused before any stop or start
    if action in ("stop", "restart"):
        for n in dep.stop_order():
            print(f"{n.label} {svcs[n.host].stop(n.unit).describe()}", file=sys.stderr if action == "restart"
                  else sys.stdout)
    if action == "stop":
        return 0
    diffs = differences(argvs)
    if diffs:
        print(f"warning: {dep.name}: flags differ between nodes ({control.describe_differences(diffs)}): "
              "its nodes will meet in different collectives", file=sys.stderr)
    if wait:
        def phase(ev: Any) -> None:
            print(f"  {ev.seconds:6.1f}s  head: {ev.phase}", file=sys.stderr, flush=True)

        out = control.start(dep, dict(svcs), timeout=timeout, health_path=health_path, on_event=phase)
        print(out.describe())
        return 0 if out.ok else 1
    for n in dep.start_order():
        print(f"{n.label} {svcs[n.host].start(n.unit).describe()}")
    return 0


# -- tracebacks ----------------------------------------------------------------------


def _invocation(value: str | None) -> str | int:
    if value in (None, "last"):
        return "last"
    assert value is not None
    try:
        return int(value)
    except ValueError:
        return value


def tracebacks(dep: Deployment, hosts: dict[str, Host], *, invocation: str | None, as_json: bool) -> int:
    """Each node's analysis and the first failing node/rank across nodes; exit 1 if any failure."""
    from workbench.deployment.clock import measure_offsets
    from workbench.deployment.journals import first_failure, read_nodes
    from workbench.journal.filter import to_text
    from workbench.services import services_for
    from workbench.tracebacks import analyze, format_summary, to_json

    svcs = {n.label: services_for(hosts[n.host]) for n in dep.nodes}
    frames = read_nodes(dep, svcs, invocation=_invocation(invocation))
    offsets = measure_offsets({n.label: hosts[n.host] for n in dep.nodes})
    cause = first_failure(frames, {k: v.correction for k, v in offsets.items()})
    analyses = {label: analyze(to_text(frame)) for label, frame in frames.items()}
    found = cause is not None or any(a.root_cause is not None or a.failures for a in analyses.values())
    if as_json:
        root = None if cause is None else {
            "node": cause.node, "host": dep.node(cause.node).host, "rank": cause.rank,
            "exception_type": cause.exception_type, "message": cause.message, "phase": cause.phase,
            "time": cause.time.isoformat(), "consequence": cause.consequence}
        print(json.dumps({"deployment": dep.name, "root_cause": root,
                          "clock_offsets": {k: {"host": v.host, "offset": v.offset, "error": v.error}
                                            for k, v in offsets.items()},
                          "nodes": {label: {"host": dep.node(label).host, **to_json(a)}
                                    for label, a in analyses.items()}}, indent=2, ensure_ascii=False, default=str))
        return 1 if found else 0
    for n in dep.nodes:
        print(f"== {n.label} ({n.host}, clock {offsets[n.label].offset:+.3f} s) ==")
        sys.stdout.write(format_summary(analyses[n.label]))
    print(f"first failure across nodes: {cause.describe() if cause else 'none'}")
    return 1 if found else 0


# -- journal -------------------------------------------------------------------------

UNSUPPORTED_JOURNAL = ("follow", "list", "last", "after_cursor")


def journal(dep: Deployment, hosts: dict[str, Host], args: argparse.Namespace) -> int:
    """One frame over every node in corrected time order; offsets on stderr (and per row with --json)."""
    from workbench.cli.journal import json_lines
    from workbench.deployment.clock import measure_offsets
    from workbench.deployment.journals import merge
    from workbench.journal import read as journal_read
    from workbench.journal.filter import filter, to_text
    from workbench.services import services_for

    for name in UNSUPPORTED_JOURNAL:
        if getattr(args, name, None):
            raise ConfigError(f"--{name.replace('_', '-')} is for one host; a deployment's journal reads one "
                              "invocation per node (--invocation) or a window (--since/--until)")
    invocation = None if (args.since or args.until) and args.invocation is None else _invocation(args.invocation)
    nodes_wanted, ranks = set(), []
    for r in args.rank or []:
        node, sep, rank = r.rpartition("/")
        if sep:
            nodes_wanted.add(node)
        ranks.append(rank)
    frames = {}
    for n in dep.nodes:
        frame = journal_read.read(services_for(hosts[n.host]), n.unit, invocation=invocation, since=args.since,
                                  until=args.until, jobs=args.jobs)
        if frame.lost is not None and (frame.lost.incomplete or frame.lost.split_lines):
            print(f"workbench journal: {n.label}: {frame.lost.describe()}", file=sys.stderr)
        frames[n.label] = filter(frame, include=args.grep, exclude=args.exclude, level=args.level,
                                 rank=ranks or None, phase=args.phase)
    offsets = measure_offsets({n.label: hosts[n.host] for n in dep.nodes})
    for label, off in offsets.items():
        print(f"workbench journal: {label} {off.describe()} (taken off its times)", file=sys.stderr)
    merged = merge(frames, {k: v.offset for k, v in offsets.items()})
    if nodes_wanted:
        merged = merged[merged["node"].isin(nodes_wanted)]
    if args.lines is not None:
        merged = merged.iloc[len(merged) - args.lines:] if args.lines else merged.iloc[:0]
    if merged.empty:
        print("-- No entries --", file=sys.stderr)
        return 0
    if args.json:
        out = merged.copy()
        out["host_time"] = out["time"]
        out["time"] = out["time_corrected"]
        out["clock_offset"] = out["node"].map({k: v.offset for k, v in offsets.items()})
        lines = json_lines(out, "")
        rows = [json.loads(line) for line in lines.splitlines()]
        for row, node, host_time, off in zip(rows, out["node"], out["host_time"], out["clock_offset"], strict=True):
            row.update(host=dep.node(node).host, node=node, host_time=host_time.isoformat(), clock_offset=off)
        sys.stdout.write("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))
    else:
        shown = merged.copy()
        shown["time"] = shown["time_corrected"]
        shown["host"] = shown["node"].map(lambda label: f"{dep.node(label).host}/{label}")
        sys.stdout.write(to_text(shown))
    return 0


# -- workbench deployment ACTION NAME ------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    from workbench.deployment.model import find_deployment, load_deployments
    from workbench.inputs import check_timeout

    hosts_arg = tuple(resolve_hosts(args.hosts)) if args.hosts else ()
    dep = find_deployment(load_deployments(args.file, ssh_config=args.ssh_config), args.name, hosts_arg)
    if args.action != "variant" and (args.set or args.unset):
        raise ConfigError("--set/--unset belong to the variant action")
    check_timeout(args.timeout, "--timeout")
    if args.lock_wait < 0:
        raise ConfigError("--lock-wait needs 0 or more seconds")
    if args.action == "variant":
        from workbench.cli.services import parse_edits
        from workbench.deployment.flags import check_edits

        edits = check_edits(parse_edits(args.set, args.unset))  # refused before any host is touched
        if not edits:
            raise ConfigError("variant: give at least one --set or --unset")
    with connected(dep, args.ssh_config) as hosts:
        return _act(args, dep, hosts)


def resolve_hosts(spec: str) -> list[str]:
    from workbench.inventory import expand_hosts

    return expand_hosts(spec)


def _act(args: argparse.Namespace, dep: Deployment, hosts: dict[str, Host]) -> int:
    from workbench.deployment import control

    if args.action == "status":
        return print_status(dep, hosts, as_json=args.json)
    if args.action == "stop":
        return verb(dep, hosts, "stop", wait=False, timeout=args.timeout)
    if args.action == "journal":
        ns = argparse.Namespace(invocation=None, since=None, until=None, jobs=None, grep=None, exclude=None,
                                level=None, rank=None, phase=None, lines=None, json=args.json)
        return journal(dep, hosts, ns)
    from workbench.cli.services import parse_edits

    with control.DeploymentSession(dep, hosts, purpose="workbench deployment", ready_timeout=args.timeout,
                                   make_room=args.make_room, lock_wait=args.lock_wait) as ds:
        if args.action == "start":
            out = ds.start_base(timeout=args.timeout)
        else:
            out = ds.run_variant(parse_edits(args.set, args.unset), timeout=args.timeout).outcome
    print(json.dumps({"outcome": out.outcome, "failed_node": out.failed_node, "reason": out.reason,
                      "phase": out.phase, "seconds": round(out.seconds, 2)}) if args.json else out.describe())
    return 0 if out.ok else 1
