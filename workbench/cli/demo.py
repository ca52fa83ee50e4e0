"""``workbench demo``: the main job on the embedded default (the local simulated GPU hosts)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = sub.add_parser("demo", help="bring the testbed up and run the main job on it")
    p.add_argument("--backend", choices=("auto", "nspawn", "local"), default="auto")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from workbench.cli.testbed import _up

    return _up(argparse.Namespace(hosts=2, backend=args.backend, provision="sim"))
