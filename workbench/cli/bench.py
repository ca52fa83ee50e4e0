"""``workbench bench``: a concurrency sweep against an OpenAI-compatible server.

Forms (``_target`` turns them into a base URL and a runner)::

    workbench bench --url http://127.0.0.1:30000 --concurrency 1,4      # load from this machine
    workbench bench HOST http://127.0.0.1:30000 --concurrency 1,4        # load from HOST, next to the server
    workbench bench HOST http://127.0.0.1:30000 --via-tunnel ...         # from here, through an SSH tunnel
    workbench bench HOST sglang-k26-ddtree.service ...                   # the unit's port, from its ExecStart
    workbench bench --url URL --rates 1,2,4 --max-concurrency 64          # Poisson arrivals instead
    workbench bench --url URL --dataset sharegpt.json --rates 4 --burstiness 0.5 --duration 60 --json

The API key comes from the environment only (``WORKBENCH_API_KEY``, else ``OPENAI_API_KEY``, or the
variable ``--api-key-env`` names), as do ``--header NAME=ENVVAR`` values: never from the command line,
and never written into the output (run records hold the header names with redacted values).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from workbench.bench.metrics import PERCENTILES, SLO, check_percentiles, percentile_key
from workbench.bench.options import (
    API_KEY_ENVS,
    GOODPUT_KEYS,
    Workload,
    goodput_slo,
    request_headers,
)
from workbench.bench.sweep import Runner, host_runner, local_runner, run_sweep, write_sweep
from workbench.bench.workloads import FORMATS
from workbench.errors import ConfigError
from workbench.gpus import inventory as gpus_inventory
from workbench.gpuspecs import GPUS, GpuSpec, gpu_for
from workbench.modelarch import ModelArch, load_config, read_served_config
from workbench.roofline import against_results, served_shape
from workbench.services import Services, exec_argv, services_for
from workbench.systemd import normalize_unit, valid_unit
from workbench.watch import server_port

SHOWN = ("concurrency", "rate", "repeat", "completed", "failed", "output_throughput", "request_throughput",
         "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "itl_p50_ms", "tokens_per_chunk", "client_bound")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bench", help="run a concurrency sweep against an OpenAI-compatible server",
        description="Stream synthetic requests at fixed concurrencies (with warmup and repeats) and report "
        "TTFT/TPOT/ITL/throughput with the definitions of docs/metrics.md. The table goes to stdout, "
        "progress and warnings to stderr.", epilog=EXAMPLES)
    p.add_argument("target", nargs="*", metavar="HOST URL|UNIT",
                   help="[HOST] URL, or HOST UNIT (its port from its ExecStart): with HOST the load runs on that host")
    p.add_argument("--url", help="server base URL, e.g. http://127.0.0.1:30000 (load from this machine)")
    p.add_argument("--via-tunnel", action="store_true", help="with HOST: run the load here through Host.tunnel")
    p.add_argument("--concurrency", default="1,4,16,64", help="comma-separated concurrencies (default 1,4,16,64)")
    p.add_argument("--rates", help="comma-separated Poisson request rates (req/s) instead of concurrencies")
    p.add_argument("--max-concurrency", type=int, help="with --rates: cap on requests in flight")
    p.add_argument("--repeats", type=int, default=1, metavar="N",
                   help="measure each point N times (the charts' confidence bands need >= 2)")
    p.add_argument("--burstiness", type=float, default=1.0,
                   help="with --rates: gamma shape of the arrival gaps (1 = Poisson, < 1 burstier)")
    p.add_argument("--num-requests", type=int, metavar="N", help="measured requests per point (at least; default 32)")
    p.add_argument("--duration", type=float, metavar="SECONDS",
                   help="measure for this long per point (no request starts after it) instead of a count")
    p.add_argument("--requests-per-concurrency", type=int, default=4, help="measured requests >= this x concurrency")
    p.add_argument("--warmup", type=int, default=2, help="warmup requests per point (excluded)")
    p.add_argument("--input-len", type=int, default=128, metavar="TOKENS", help="prompt length of each request")
    p.add_argument("--output-len", type=int, default=128, metavar="TOKENS",
                   help="tokens each request asks for (with ignore_eos, it gets them)")
    p.add_argument("--range-ratio", type=float, default=0.0,
                   help="synthetic lengths uniform in [L(1-r), L(1+r)] (vLLM's --random-range-ratio)")
    p.add_argument("--prefix-len", type=int, default=0, help="shared-prefix tokens (with --prefix-groups)")
    p.add_argument("--prefix-groups", type=int, default=0, help="number of distinct shared prefixes")
    p.add_argument("--dataset", metavar="PATH", help="ShareGPT JSON or JSONL (prompt / messages, output_len)")
    p.add_argument("--dataset-format", choices=FORMATS, default="auto",
                   help="how to read --dataset (auto: by its content)")
    p.add_argument("--dataset-output-len", type=int, help="fixed output tokens for every dataset request")
    p.add_argument("--flush-cache", action="store_true", help="POST the server's /flush_cache before each point (SGLang)")
    p.add_argument("--api-key-env", metavar="VAR",
                   help=f"environment variable holding the API key (default: {' or '.join(API_KEY_ENVS)} if set)")
    p.add_argument("--header", action="append", default=[], metavar="NAME=ENVVAR",
                   help="send header NAME with the value of environment variable ENVVAR")
    p.add_argument("--percentiles", default=",".join(f"{q:g}" for q in PERCENTILES),
                   help="comma-separated latency percentiles (default 50,90,95,99)")
    p.add_argument("--goodput", nargs="+", default=[], metavar="METRIC:MS",
                   help="SLOs for goodput, e.g. ttft:2000 tpot:50 e2el:30000 (vLLM's --goodput)")
    p.add_argument("--roofline", action="store_true",
                   help="place each point under the model's decode roofline (HOST UNIT: config and GPU from the host)")
    p.add_argument("--model-config", metavar="PATH", help="with --roofline: a local config.json of the served model")
    p.add_argument("--gpu", help="with --roofline: the GPU (a key of the GPU table, or an nvidia-smi name)")
    p.add_argument("--tp", type=int, help="with --roofline: GPUs the model is split over (default: the unit's TP, or 1)")
    p.add_argument("--sample-gpus", action="store_true",
                   help="with HOST: sample the host's GPUs (nvidia-smi) during the sweep and join power/utilisation")
    p.add_argument("--json", action="store_true", help="print the results as JSON on stdout (nothing else)")
    p.add_argument("--api", choices=("completions", "chat"), default="completions",
                   help="/v1/completions or /v1/chat/completions")
    p.add_argument("--model", default="", help="model name (default: the first of /v1/models)")
    p.add_argument("--no-ignore-eos", action="store_true", help="do not send ignore_eos (for servers that reject it)")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", help="joined into every row")
    p.add_argument("--out", metavar="DIR", help="write results.parquet, requests.parquet, records.jsonl here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)


EXAMPLES = """\
examples:
  workbench bench --url http://127.0.0.1:30000 --concurrency 1,4 --repeats 3
  workbench bench gpu-a sglang-k26-ddtree.service --concurrency 1,4,16,64 --out data/bench/k26
  workbench bench gpu-a http://127.0.0.1:30000 --via-tunnel --rates 1,2,4 --max-concurrency 64
exit: 0 every point served requests, 1 a point where every request failed, 2 bad options, 3 host problem.
"""


def parse_rates(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--rates must be comma-separated numbers, not {text!r}") from None
    if not values or min(values) <= 0:
        raise ConfigError(f"--rates needs numbers > 0, got {text!r}")
    return values


def parse_concurrency(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--concurrency must be comma-separated integers, not {text!r}") from None
    if not values or min(values) < 1:
        raise ConfigError(f"--concurrency needs integers >= 1, got {text!r}")
    return values


def parse_labels(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--label takes KEY=VALUE, not {item!r}")
        out[key] = value
    return out


def parse_percentiles(text: str) -> tuple[float, ...]:
    try:
        return check_percentiles([float(x) for x in text.split(",") if x.strip()])
    except ValueError as exc:
        raise ConfigError(f"--percentiles: {exc}") from None


def parse_goodput(items: list[str]) -> SLO | None:
    """``["ttft:2000", "tpot:50"]`` -> ``SLO(ttft_ms=2000, tpot_ms=50)``."""
    bounds: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition(":")
        if not sep or key.lower() not in GOODPUT_KEYS:
            raise ConfigError(f"--goodput takes ttft:MS, tpot:MS or e2el:MS, not {item!r}")
        bounds[key] = value
    return goodput_slo(bounds, "--goodput")


def _is_url(text: str) -> bool:
    return urlsplit(text).scheme in ("http", "https")


def unit_url(svc: Services, unit: str) -> str:
    """The URL (as seen from the host) of the server a running unit runs: its port from its ExecStart."""
    argv = exec_argv(svc.unit_text(unit), unit)
    st = svc.status(unit)
    if not st.running:
        raise ConfigError(f"{st.unit} is {st.active_state} on {svc.host.name}: start it before benchmarking it")
    return f"http://127.0.0.1:{server_port(argv)}"


@dataclass
class Target:
    url: str
    runner: Runner
    host: Any = None
    argv: list[str] | None = None  # the unit's ExecStart, for HOST UNIT


@dataclass
class RooflineInputs:
    arch: ModelArch
    gpu: GpuSpec
    tp: int
    draft_tokens: int | None


def roofline_inputs(args: argparse.Namespace, target: Target) -> RooflineInputs | None:
    """What ``--roofline`` needs, from the flags or else from the host and unit; None without ``--roofline``."""
    if not args.roofline:
        return None
    if args.tp is not None and args.tp < 1:
        raise ConfigError("--tp must be >= 1")
    tp, draft = served_shape(target.argv) if target.argv else (1, None)
    if args.model_config:
        try:
            text = Path(args.model_config).read_text()
        except OSError as exc:
            raise ConfigError(f"--model-config: cannot read {args.model_config}: {exc.strerror or exc}") from None
        arch = load_config(text, name=Path(args.model_config).parent.name or "model", source=args.model_config)
    elif target.host is not None and target.argv is not None:
        arch = read_served_config(target.host, target.argv)
    else:
        raise ConfigError("--roofline needs the model: give --model-config PATH/config.json, or the HOST UNIT form")
    if args.gpu:
        gpu = GPUS.get(args.gpu) or gpu_for(args.gpu)
        if gpu is None:
            raise ConfigError(f"--gpu {args.gpu!r} is not in the GPU table ({', '.join(GPUS)})")
    elif target.host is not None:
        inv = gpus_inventory(target.host)
        name = inv.gpus[0]["name"] if inv.gpus else ""
        gpu = gpu_for(name) if name else None
        if gpu is None:
            raise ConfigError(f"--roofline: the GPU of {target.host.name} ({name or inv.error or 'none found'}) is "
                              f"not in the table: give --gpu one of {', '.join(GPUS)}")
    else:
        raise ConfigError(f"--roofline needs the GPU: give --gpu (one of {', '.join(GPUS)})")
    return RooflineInputs(arch, gpu, args.tp or tp, draft)


@contextlib.contextmanager
def _target(args: argparse.Namespace) -> Iterator[Target]:
    """The base URL as the runner sees it, the runner, and (HOST forms) the host and unit's argv."""
    progress = not args.no_progress
    target = list(args.target)
    if args.url:
        if target:
            raise ConfigError("give the server either as --url or as positional HOST URL, not both")
        yield Target(args.url, local_runner(progress))
        return
    if len(target) == 1 and _is_url(target[0]):
        yield Target(target[0], local_runner(progress))
        return
    if len(target) != 2:
        raise ConfigError("give --url URL, HOST URL (the URL as seen from HOST), or HOST UNIT")
    from workbench.hosts import connect

    host_name, where = target
    if not _is_url(where) and not valid_unit(normalize_unit(where)):
        raise ConfigError(f"{where!r} is neither a URL nor a unit name: give the server URL as seen from the host, "
                          "or the unit that runs it")
    ssh_config = getattr(args, "ssh_config", None)
    host = connect(host_name, ssh_config=ssh_config)
    try:
        argv = None
        if not _is_url(where):
            svc = services_for(host)
            argv = exec_argv(svc.unit_text(where), where)
            where = unit_url(svc, where)
        if not args.via_tunnel:
            yield Target(where, host_runner(host, progress=progress), host, argv)
            return
        parts = urlsplit(where)
        with host.tunnel(parts.port or (443 if parts.scheme == "https" else 80)) as local_port:
            yield Target(urlunsplit((parts.scheme, f"127.0.0.1:{local_port}", parts.path, "", "")),
                         local_runner(progress), host, argv)
    finally:
        host.close()


def workload(args: argparse.Namespace) -> Workload:
    """The flags' workload (:class:`workbench.bench.options.Workload`, shared with the runbooks)."""
    return Workload(api=args.api, model=args.model, input_len=args.input_len, output_len=args.output_len,
                    num_requests=args.num_requests, requests_per_concurrency=args.requests_per_concurrency,
                    warmup=args.warmup, ignore_eos=not args.no_ignore_eos, max_concurrency=args.max_concurrency,
                    burstiness=args.burstiness, duration_s=args.duration, range_ratio=args.range_ratio,
                    prefix_len=args.prefix_len, prefix_groups=args.prefix_groups, dataset=args.dataset or "",
                    dataset_format=args.dataset_format, dataset_output_len=args.dataset_output_len,
                    flush_cache=args.flush_cache)


def run(args: argparse.Namespace) -> int:
    rates = parse_rates(args.rates) if args.rates else []
    concurrencies = [] if rates else parse_concurrency(args.concurrency)
    labels = parse_labels(args.label)
    percentiles = parse_percentiles(args.percentiles)
    slo = parse_goodput(args.goodput)
    headers = request_headers(args.api_key_env, args.header)
    if args.repeats < 1:
        raise ConfigError("--repeats must be >= 1")
    if args.num_requests is not None and args.num_requests < 1:
        raise ConfigError("--num-requests must be >= 1")
    if args.json:
        args.no_progress = True
    with _target(args) as target:
        work = workload(args)
        base = work.spec(target.url, rates=rates, concurrencies=concurrencies, headers=headers)
        roof = roofline_inputs(args, target)
        if args.sample_gpus and target.host is None:
            raise ConfigError("--sample-gpus needs the HOST form (HOST URL or HOST UNIT): the GPUs are the host's")
        result = run_sweep(base, concurrencies, rates=rates, repeats=args.repeats, runner=target.runner,
                           labels=labels, requests_per_concurrency=work.per_concurrency(rates), slo=slo, percentiles=percentiles,
                           gpu_host=target.host if args.sample_gpus else None)
    table = result.results
    points = (against_results(table, roof.arch, roof.gpu, roof.tp, tokens_per_request=roof.draft_tokens)
              if roof else [])
    if args.json:
        rows = json.loads(table.to_json(orient="records", double_precision=15))
        doc: dict[str, Any] = {"percentiles": list(percentiles), "slo": vars(slo) if slo else None, "results": rows}
        if roof:
            doc["roofline"] = {"model": roof.arch.name, "gpu": roof.gpu.name, "tp": roof.tp, "points": points}
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        shown = [*SHOWN, percentile_key("ttft", 95), percentile_key("tpot", 95), "input_throughput",
                 "total_token_throughput", "goodput_rps", "gpu_power_w", "gpu_util_pct"]
        shown = list(dict.fromkeys(c for c in shown if c in table))
        sys.stdout.write(table[shown].to_string(index=False, float_format=lambda x: f"{x:.2f}") + "\n")
        for pt in points:
            where = f"c={pt['concurrency']}" if pt["rate"] is None or pt["rate"] != pt["rate"] else f"rate={pt['rate']}"
            sys.stdout.write(f"roofline {where} repeat {pt['repeat']}: {pt['words']}\n")
    for _, row in table[table["client_bound"]].iterrows():
        print(f"warning: c={row['concurrency']} repeat {row['repeat']} was client-bound: {row['client_bound_reason']}",
              file=sys.stderr)
    if "delivery_note" in table:
        for _, row in table[table["delivery_note"].fillna("") != ""].iterrows():
            print(f"note: c={row['concurrency']} repeat {row['repeat']}: {row['delivery_note']}", file=sys.stderr)
    if args.out:
        paths = write_sweep(result, args.out)
        print(f"wrote {', '.join(str(p) for p in paths.values())}", file=sys.stderr)
    dead = all_failed(result.results)
    for where in dead:
        print(f"error: every request failed at {where}", file=sys.stderr)
    return 1 if dead else 0


def all_failed(results: Any) -> list[str]:
    """The points (``c=4 repeat 0``) where no request completed and some failed."""
    if results is None or not len(results) or "completed" not in results:
        return []
    bad = results[(results["completed"].fillna(0) == 0) & (results.get("failed", 0) > 0)]
    key = "rate" if "rate" in bad and bad["rate"].notna().any() else "concurrency"
    return [f"{'rate' if key == 'rate' else 'c'}={row[key]} repeat {row.get('repeat', 0)}" for _, row in bad.iterrows()]
