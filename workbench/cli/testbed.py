"""``workbench testbed up|status|down``: the simulated GPU hosts."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("testbed", help="simulated GPU hosts with real systemd, journald and sshd",
                       epilog="examples:\n  workbench testbed up --hosts 2\n  workbench testbed status --json\n"
                              "  workbench testbed down\n")
    tsub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = tsub.add_parser("up", help="build (once) and boot the hosts; idempotent",
                         epilog="examples:\n  workbench testbed up\n  workbench testbed up --hosts 3 --provision sim,vllm\n"
                                "  workbench testbed up --provision sim,slurm\n")
    up.add_argument("--hosts", type=int, default=2, metavar="N", help="number of hosts (gpu-a, gpu-b, ...)")
    up.add_argument("--backend", choices=("auto", "nspawn", "local"), default="auto",
                    help="nspawn (root + systemd-nspawn) or local processes; auto picks nspawn when it can")
    up.add_argument("--provision", default="sim", metavar="LIST",
                    help="comma-separated provisioners: sim (the simulated SGLang), vllm (the real vLLM), containers "
                         "(podman on gpu-c), multinode (a 2-node unit), slurm (a Slurm cluster on gpu-d, gpu-e)")
    up.set_defaults(func=_up)
    st = tsub.add_parser("status", help="what runs", epilog="examples:\n  workbench testbed status --json\n")
    st.add_argument("--json", action="store_true", help="one JSON object: backend, hosts, ssh_config")
    st.set_defaults(func=_status)
    dn = tsub.add_parser("down", help="stop every host and remove every trace",
                         epilog="examples:\n  workbench testbed down\n")
    dn.set_defaults(func=_down)


def _backend(choice: str) -> str:
    from workbench.testbed import testbed

    if choice != "auto":
        return choice
    ok, why = testbed.can_use_nspawn()
    print(f"backend: {'nspawn' if ok else 'local'} ({why})")
    return "nspawn" if ok else "local"


def _up(args: argparse.Namespace) -> int:
    provision = tuple(p for p in args.provision.split(",") if p)
    from workbench.testbed import local, testbed

    # One backend at a time: the aliases gpu-a, gpu-b, ... must mean one thing.
    if _backend(args.backend) == "nspawn":
        local.down()
        testbed.up(args.hosts, provision=provision)
    else:
        if testbed.load() is not None:
            testbed.down()
        local.up(args.hosts, provision=provision)
    return _status(argparse.Namespace(json=False))


def _status(args: argparse.Namespace) -> int:
    from workbench.testbed import local, testbed

    st = testbed.status()
    if not st.get("hosts"):
        st = local.status() or st
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    if not st.get("hosts"):
        print("testbed: not running" + (f" (leftovers: {st['leftovers']})" if st.get("leftovers") else ""))
        return 0
    print(f"testbed: {'running' if st['running'] else 'DEGRADED'} ({st['backend']}); ssh_config: {st.get('ssh_config')}")
    for h in st["hosts"]:  # type: ignore[attr-defined]
        print(f"  {h['name']:8} {'up' if h['alive'] else 'DOWN'}  pid {h['pid']}")
    return 0


def _down(args: argparse.Namespace) -> int:
    from workbench.testbed import local, testbed

    testbed.down()
    local.down()
    return 0
