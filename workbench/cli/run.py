"""``workbench run RUNBOOK``: a runbook end to end (papermill, sanitized notebook, report.html), one run directory.

Exit codes: 0 the run succeeded; 1 the runbook failed (an exception in a cell, the
server or a restore failed); 2 bad parameters (nothing was started); 3 the kernel
died, the SSH link was lost, the host was locked or a cell timed out (rerunning
resumes from the ledger); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.runbooks.presets import Preset

EPILOG = """\
parameters: -p NAME VALUE (repeatable; dicts and lists as JSON text), -y YAML (a mapping).
exit codes: 0 ok, 1 runbook failed (cell exception, server/restore failure), 2 bad parameters,
            3 kernel died / SSH lost / host locked / timeout (rerun resumes), 130 interrupted.
examples:   workbench run bisect --host gpu-b -p base_unit my.service -p edits '{"--ep-size": "8", "--enable-nccl-nvls": true}'
            workbench run bisect --preset seeds-k26 --host gpu-a   (the seeds' unit and three edits)
            workbench run factorial --preset isolate-ep-vs-nvls --host gpu-a   (old name: isolate_ep_vs_nvls)
            workbench run ab --preset test-nvls-on-tp8 --host gpu-b             (old name: test_nvls_on_tp8)
            workbench run ./my_study.ipynb -p host gpu-a   (any notebook with a cell tagged "parameters")
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run", help="run a runbook (papermill) into data/runs/<run-id>/ with an offline report.html",
        description="Validate the parameters, run runbooks/RUNBOOK.ipynb with papermill, save the executed "
        "notebook (secrets and addresses redacted), result.json and report.html in the run directory, and "
        "leave every host as it was found.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runbook", metavar="RUNBOOK",
                   help="runbook name (runbooks/NAME.ipynb: bisect, factorial, ab, ...), an old name that is now a "
                        "preset, or PATH.ipynb (any parameterised notebook)")
    p.add_argument("--preset", default="", metavar="NAME",
                   help="start from the runbook's named parameter set (workbench/runbooks/presets/RUNBOOK.toml); "
                        "given parameters win")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="a parameter (repeatable; `papermill --help-notebook runbooks/NAME.ipynb` lists them)")
    p.add_argument("-y", "--yaml", metavar="YAML", help="parameters as a YAML mapping")
    p.add_argument("--host", action="append", metavar="HOST",
                   help="ssh_config alias: sets `host` (or `hosts`, repeatable)")
    p.add_argument("--data-dir", default=os.environ.get("WORKBENCH_DATA_DIR") or "data", metavar="DIR",
                   help="where runs are recorded (default: $WORKBENCH_DATA_DIR, else ./data)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="bound on any one cell (default: 4 hours)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or live trial lines on stderr")
    p.set_defaults(func=run)


def gather(args: argparse.Namespace, fields: set[str]) -> dict[str, Any]:
    """The parameters from -y, -p, --host and the global --ssh-config (later ones win)."""
    params: dict[str, Any] = {}
    if args.yaml:
        import yaml  # type: ignore[import-untyped,unused-ignore]

        loaded = yaml.safe_load(args.yaml)
        if not isinstance(loaded, dict):
            raise ConfigError("-y: give a YAML mapping of parameter names to values")
        params.update(loaded)
    for name, value in args.parameter:
        params[name] = value
    if "host" in params and "host" not in fields and "hosts" in fields:  # -p host X where the runbook takes hosts
        params["hosts"] = [params.pop("host")]
    if args.host:
        if "host" in fields and len(args.host) == 1:
            params["host"] = args.host[0]
        elif "hosts" in fields:
            params["hosts"] = list(args.host)
        else:
            raise ConfigError("--host: this runbook takes " + ("one host" if "host" in fields else "no host"))
    if getattr(args, "ssh_config", None) and "ssh_config" in fields:
        params.setdefault("ssh_config", args.ssh_config)
    return params


def _pick_base(args: argparse.Namespace, params: dict[str, Any], fields: dict[str, Any], runbook: str | Path,
               named: Preset | None) -> None:
    """No base named and one host: the one inference server running there (said on stderr); checked
    first with a stand-in, so other bad parameters are refused before the host is read."""
    from workbench.runbooks import basepick
    from workbench.runbooks import presets as presets_
    from workbench.runbooks.execute import prepare

    name = basepick.missing_base(presets_.apply(named, params), fields)
    host = basepick.the_host(params)
    if not name or not host:
        return
    # everything else must be right before the host is read: a stand-in for the base, and what a
    # preset that is the default for some base would give
    defaults = {} if named else {k: v for p in presets_.presets(str(runbook)).values() if p.default_for
                                 for k, v in p.params.items()}
    try:
        prepare(args.runbook, {**defaults, **params, name: "base.service"}, data_dir=args.data_dir,
                preset=getattr(args, "preset", ""))
    except ConfigError:  # the error as it reads without the stand-in (the base named missing too)
        prepare(args.runbook, params, data_dir=args.data_dir, preset=getattr(args, "preset", ""))
        raise
    picked = basepick.pick(name, host, ssh_config=getattr(args, "ssh_config", None) or params.get("ssh_config") or None)
    if picked.value is None:
        raise ConfigError(picked.words())
    params[name] = picked.value
    print(f"workbench run: {picked.words()}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from workbench.runbooks.execute import (
        DEFAULT_TIMEOUT,
        EXIT_BAD_PARAMETERS,
        execute,
        params_model,
        resolve,
        resolve_preset,
    )

    try:
        runbook, named = resolve_preset(args.runbook, getattr(args, "preset", ""))
        path = resolve(runbook)[1]
        fields = params_model(path).model_fields
        params = gather(args, set(fields))
        _pick_base(args, params, fields, runbook, named)
        implied = None if named else resolve_preset(args.runbook, "", params)[1]
        if implied is not None:
            left = ", ".join(sorted(set(implied.params) - set(params)))
            print(f"workbench run: {left} from the preset {implied.name!r}, the default for "
                  f"{params['base_unit']} (--preset NAME or -p to choose)", file=sys.stderr)
        outcome = execute(args.runbook, params, data_dir=args.data_dir, progress=not args.no_progress,
                          timeout=args.timeout or DEFAULT_TIMEOUT, preset=getattr(args, "preset", ""))
    except ConfigError as exc:
        print(f"workbench run: bad parameters: {exc}", file=sys.stderr)
        return EXIT_BAD_PARAMETERS
    status = "ok" if outcome.ok else f"failed ({outcome.kind})"
    print(f"run directory: {outcome.run_dir}")
    print(f"status: {status}")
    print(f"conclusion: {outcome.conclusion}")
    from workbench.runbooks.show import culprit_lines

    for line in culprit_lines(outcome.result):
        print(f"  {line}")
    if outcome.result.get("host_restored") is not None:
        print(f"host restored: {outcome.result['host_restored']}")
    if outcome.report:
        print(f"report: {outcome.report}")
    return outcome.exit_code
