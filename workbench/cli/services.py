"""``workbench status|start|stop|restart|variant``: service control on a host."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.errors import ConfigError
from workbench.inputs import check_edits, check_timeout

STATUS_EXAMPLES = """\
examples:
  workbench status gpu-a                       # every service
  workbench status gpu-a 'sglang*' --json | jq '.[].active'
  workbench status slurm:testbed --json | jq '.nodes[].state'
  workbench status gpu-a,gpu-b sglang-k26-2node.service  # a deployment: every node and the overall state
  workbench status k26-2node --json                       # the same by the deployment's name
"""
VERB_EXAMPLES = """\
examples:
  workbench {verb} gpu-a sglang-k26-ddtree.service{wait}
  workbench {verb} gpu-a,gpu-b sglang-k26-2node.service{wait}   # a deployment, in its {verb} order
"""
VARIANT_EXAMPLES = """\
examples:
  workbench variant gpu-a sglang-k26-ddtree.service --set ep-size=8 --set enable-nccl-nvls --plan
  workbench variant gpu-a sglang-k26-ddtree.service --set ep-size=8 --json | jq .outcome
  workbench variant gpu-a sglang-k26-ddtree.service --unset disable-cuda-graph --env NCCL_DEBUG=INFO --keep
  workbench variant slurm:testbed sglang-k26-ddtree.sbatch --set ep-size=8 --json   # one job, cancelled after
exit: 0 the variant became ready, 1 it failed to start (its last lines on stderr), 2 bad edits,
3 host problem; the host is restored either way (unless --keep).
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("status", help="units on a host with state, invocation, restarts, GPUs and command line",
                       description="One line per unit: load/active state, sub-state, exit status, restarts, "
                                   "the invocation, the GPUs its processes hold, and its command line.",
                       epilog=STATUS_EXAMPLES)
    p.add_argument("host", help="host alias (ssh_config), 'local', a local-testbed host; a host list or group "
                                "(gpu-a,gpu-b, @group) for a deployment or one listing per host; a deployment's "
                                "name; or slurm:NAME (a Slurm cluster: partitions, nodes, the workbench's jobs)")
    p.add_argument("pattern", nargs="?", default="*", help="unit glob, or a deployment's unit or name "
                                                           "(default: every service)")
    p.add_argument("--json", action="store_true", help="a JSON array of the units (one object each) on stdout")
    p.set_defaults(func=_status)
    for verb in ("start", "stop", "restart"):
        v = sub.add_parser(verb, help=f"{verb} a unit", description=f"{verb.capitalize()} a unit through its "
                           "backend (systemctl, or the process supervisor).",
                           epilog=VERB_EXAMPLES.format(verb=verb, wait="" if verb == "stop" else " --wait"))
        v.add_argument("host", help="host alias (ssh_config), 'local', a local-testbed host, or a deployment's "
                                    "host list (gpu-a,gpu-b, @group) or name")
        v.add_argument("unit", nargs="?", default="",
                       help="the unit (.service may be left out); a deployment's unit or name")
        v.add_argument("--wait", action="store_true",
                       help="wait until ready or failed, with the phase timeline on stderr (start/restart); "
                            "exit 1 if it failed")
        v.add_argument("--health", default="/health", help="health path polled for readiness with --wait")
        v.add_argument("--timeout", type=float, default=900.0, metavar="SECONDS",
                       help="with --wait: give up (and call it failed) after this long")
        for opt in ("partition", "account", "qos"):
            v.add_argument(f"--{opt}", help=f"slurm:NAME: the base job's {opt} (default: the cluster's)")
        v.set_defaults(func=_verb, verb=verb)
    var = sub.add_parser("variant", help="run a variant of a working unit, watch it, restore the host",
                         description="Flags may be given with or without their leading dashes: "
                                     "--set ep-size=8 --set enable-nccl-nvls --unset disable-cuda-graph "
                                     "(or --set=--ep-size=8). Phase lines go to stderr; stdout holds the "
                                     "outcome (only JSON with --json).",
                         epilog=VARIANT_EXAMPLES)
    var.add_argument("host", help="host alias (ssh_config), 'local', a local-testbed host, or slurm:NAME "
                     "(the variant is one job of the edited job script, cancelled after its verdict)")
    var.add_argument("unit", help="the base unit (left untouched), or the cluster's job script")
    var.add_argument("--set", action="append", default=[], metavar="FLAG[=VALUE]",
                     help="set or add a flag (a boolean flag without =VALUE); repeatable")
    var.add_argument("--unset", action="append", default=[], metavar="FLAG",
                     help="remove a flag and its value; repeatable")
    var.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                     help="set an environment variable of the server; repeatable")
    var.add_argument("--plan", action="store_true", help="show the unit diff and the commands; change nothing")
    var.add_argument("--keep", action="store_true", help="leave the variant running (and the base stopped)")
    var.add_argument("--health", default="/health", help="health path polled for readiness")
    var.add_argument("--replace-base", action="store_true",
                     help="slurm:NAME: cancel the script's base job for the variant, submit it again after")
    var.add_argument("--timeout", type=float, default=900.0, metavar="SECONDS",
                     help="give up on readiness (and call it failed) after this long")
    var.add_argument("--lock-wait", type=float, default=0.0, metavar="SECONDS",
                     help="wait this long for a host another session holds (0: fail at once, exit 3)")
    var.add_argument("--json", action="store_true",
                     help="stdout: one JSON object (variant, outcome, phase, reason, seconds, exit_status, "
                          "invocation); progress on stderr")
    var.set_defaults(func=_variant)
    com = sub.add_parser("compose", help="create a compose file's service as a named container on a host",
                         description="Reads the service from the compose YAML here (no compose provider needed "
                                     "on the host: see docs/containers.md) and creates it with one "
                                     "`podman|docker run -d --name NAME ...`; from then on it is a container like "
                                     "any other (status, variant, journal, restore).  Variables are "
                                     "interpolated from this shell's environment, as compose does.",
                         epilog="examples:\n  workbench compose gpu-c docker/compose.yaml --service sglang --plan\n"
                                "  workbench compose gpu-c docker/compose.yaml --service sglang\n"
                                "exit: 0 created and started, 2 bad file or refused (name, image, port), "
                                "3 host problem")
    com.add_argument("host", help="host alias (ssh_config), 'local', or a local-testbed host")
    com.add_argument("file", help="the compose file (compose.yaml, docker-compose.yml)")
    com.add_argument("--service", help="the service to run (default: the file's only one)")
    com.add_argument("--plan", action="store_true",
                     help="check it against the host and print the run command (secrets masked); create nothing")
    com.set_defaults(func=_compose)


def _compose(args: argparse.Namespace) -> int:
    import shlex

    from workbench.compose import load
    from workbench.redact import is_secret_name
    from workbench.services import ContainerServices

    service = load(args.file, args.service)  # a bad file is an error before any host is reached
    for name in service.unset:
        print(f"workbench compose: {name} is not set; it stands for an empty string", file=sys.stderr)
    if service.ignored:
        print(f"workbench compose: not carried into the container: {', '.join(service.ignored)}", file=sys.stderr)
    svc = ContainerServices(_host(args))
    argv = svc.run_service(service, check_only=args.plan)
    shown = [a.split("=", 1)[0] + "=<secret>" if is_secret_name(a.split("=", 1)[0]) and "=" in a else a
             for a in argv]
    print(shlex.join(shown))
    if not args.plan:
        st = svc.status(service.container_name)
        print(f"{service.container_name}: {st.active_state} ({st.sub_state}) inv={st.invocation_id[:8] or '-'}")
    return 0


def _phase_line(ev: Any) -> None:
    print(f"  {ev.seconds:6.1f}s  {ev.phase}", file=sys.stderr, flush=True)


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
    if args.host.startswith("slurm:"):
        from workbench.cli.slurm import status

        return status(args)
    from workbench.cli import deployment as dep_cli

    dep = dep_cli.resolve(args.host, args.pattern, ssh_config=args.ssh_config, several_hosts_ok=True)
    if dep is not None:
        with dep_cli.connected(dep, args.ssh_config) as hosts:
            return dep_cli.print_status(dep, hosts, as_json=args.json)
    names = dep_cli.resolve_hosts(args.host)
    if len(names) == 1:
        return _status_one(args)
    code, everything = 0, []
    for name in names:  # several hosts, no deployment: one listing each
        one = argparse.Namespace(**{**vars(args), "host": name})
        if args.json:
            everything += [{"host": name, **row} for row in _rows(one)]
        else:
            print(f"== {name} ==")
            code = max(code, _status_one(one))
    if args.json:
        print(json.dumps(everything, indent=2, default=str))
    return code


def _rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    from workbench.services import inventory, services_for

    return [info.row() for info in inventory(services_for(_host(args)), args.pattern)]


def _status_one(args: argparse.Namespace) -> int:
    from workbench.guard import describe, session_state
    from workbench.services import inventory, services_for

    svc = services_for(_host(args))
    rows = [info.row() for info in inventory(svc, args.pattern)]
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    session = session_state(svc.host, svc)  # a guarded or abandoned session on the host
    if session is not None:
        print(describe(args.host, session))
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
    from workbench.cli import deployment as dep_cli
    from workbench.services import services_for
    from workbench.watch import watch_start

    if args.wait:
        check_timeout(args.timeout, "--timeout")
    if args.host.startswith("slurm:"):  # the job script as the base job: sbatch / scancel
        from workbench.cli.slurm import verb

        return verb(args)
    if args.partition or args.account or args.qos:
        raise ConfigError(f"{args.verb}: --partition/--account/--qos are for a Slurm base job (slurm:NAME)")
    dep = dep_cli.resolve(args.host, args.unit or None, ssh_config=args.ssh_config)
    if dep is not None:
        with dep_cli.connected(dep, args.ssh_config) as hosts:
            return dep_cli.verb(dep, hosts, args.verb, wait=args.wait, timeout=args.timeout,
                                health_path=args.health)
    if not args.unit:
        raise ConfigError(f"{args.verb}: name the unit")
    svc = services_for(_host(args))
    if args.verb == "stop":
        print(svc.stop(args.unit).describe())
        return 0
    if args.wait:
        if args.verb == "restart":
            svc.stop(args.unit)
        out = watch_start(svc, args.unit, health_path=args.health, timeout=args.timeout,
                          on_event=_phase_line)
        print(out.describe())
        return 0 if out.ok else 1
    st = svc.start(args.unit) if args.verb == "start" else svc.restart(args.unit)
    print(st.describe())
    return 0


def _variant(args: argparse.Namespace) -> int:
    from workbench.session import HostSession, plan

    edits = list(check_edits(parse_edits(args.set, args.unset), allow_empty=bool(args.env), name="variant"))
    check_timeout(args.timeout, "--timeout")
    if args.host.startswith("slurm:"):  # the job script with edited flags as one new job
        from workbench.cli.slurm import variant

        return variant(args, edits)
    if args.replace_base:
        raise ConfigError("--replace-base: a Slurm variant's option (a unit's variant always stops its base)")
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
    if args.lock_wait < 0:
        raise ConfigError("--lock-wait needs 0 or more seconds")
    with HostSession(host, purpose=f"variant of {args.unit}", lock_wait=args.lock_wait) as session:
        trial = session.run_variant(args.unit, edits, env or None, health_path=args.health, timeout=args.timeout,
                                    keep=args.keep,
                                    on_event=_phase_line)
        if args.keep:
            session.record.created.clear()  # the user asked to keep it: not ours to remove
            session.restored = True
            session.host.run(["rm", "-f", "--", session.record_path], timeout=30)
    out = trial.outcome
    if args.json:
        print(json.dumps({"variant": trial.variant, "outcome": out.outcome, "phase": out.phase,
                          "reason": out.reason, "seconds": round(out.seconds, 2), "exit_status": trial.exit_status,
                          "invocation": out.invocation_id, "kept": args.keep,
                          "tail": [] if out.ok else out.tail[-15:]}, indent=2))
    else:
        print(out.describe())
        if not out.ok:
            print("\n".join(f"    {line}" for line in out.tail[-15:]), file=sys.stderr)
        print("host restored" if not args.keep else f"kept {trial.variant} running; base left stopped",
              file=sys.stderr)
    return 0 if out.ok else 1
