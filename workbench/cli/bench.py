"""``workbench bench``: a concurrency sweep against an OpenAI-compatible server.

Forms (``_target`` turns them into a base URL and a runner)::

    workbench bench --url http://127.0.0.1:30000 --concurrency 1,4      # load from this machine
    workbench bench HOST http://127.0.0.1:30000 --concurrency 1,4        # load from HOST, next to the server
    workbench bench HOST http://127.0.0.1:30000 --via-tunnel ...         # from here, through an SSH tunnel
    workbench bench HOST sglang-k26-ddtree.service ...                   # the unit's port, from its ExecStart
    workbench bench --url URL --rates 1,2,4 --max-concurrency 64          # Poisson arrivals instead
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from workbench.bench.loadcore import LoadSpec
from workbench.bench.sweep import Runner, host_runner, local_runner, run_sweep, write_sweep
from workbench.errors import ConfigError
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
    p.add_argument("--num-requests", type=int, default=32, metavar="N",
                   help="measured requests per point (at least)")
    p.add_argument("--requests-per-concurrency", type=int, default=4, help="measured requests >= this x concurrency")
    p.add_argument("--warmup", type=int, default=2, help="warmup requests per point (excluded)")
    p.add_argument("--input-len", type=int, default=128, metavar="TOKENS", help="prompt length of each request")
    p.add_argument("--output-len", type=int, default=128, metavar="TOKENS",
                   help="tokens each request asks for (with ignore_eos, it gets them)")
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


def _is_url(text: str) -> bool:
    return urlsplit(text).scheme in ("http", "https")


def unit_url(svc: Services, unit: str) -> str:
    """The URL (as seen from the host) of the server a running unit runs: its port from its ExecStart."""
    argv = exec_argv(svc.unit_text(unit), unit)
    st = svc.status(unit)
    if not st.running:
        raise ConfigError(f"{st.unit} is {st.active_state} on {svc.host.name}: start it before benchmarking it")
    return f"http://127.0.0.1:{server_port(argv)}"


@contextlib.contextmanager
def _target(args: argparse.Namespace) -> Iterator[tuple[str, Runner]]:
    """(base URL as the runner sees it, runner) for the command line's target form."""
    progress = not args.no_progress
    target = list(args.target)
    if args.url:
        if target:
            raise ConfigError("give the server either as --url or as positional HOST URL, not both")
        yield args.url, local_runner(progress)
        return
    if len(target) == 1 and _is_url(target[0]):
        yield target[0], local_runner(progress)
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
        if not _is_url(where):
            where = unit_url(services_for(host), where)
        if not args.via_tunnel:
            yield where, host_runner(host, progress=progress)
            return
        parts = urlsplit(where)
        with host.tunnel(parts.port or (443 if parts.scheme == "https" else 80)) as local_port:
            yield urlunsplit((parts.scheme, f"127.0.0.1:{local_port}", parts.path, "", "")), local_runner(progress)
    finally:
        host.close()


def run(args: argparse.Namespace) -> int:
    rates = parse_rates(args.rates) if args.rates else []
    concurrencies = [] if rates else parse_concurrency(args.concurrency)
    labels = parse_labels(args.label)
    if args.repeats < 1:
        raise ConfigError("--repeats must be >= 1")
    with _target(args) as (url, runner):
        try:
            base = LoadSpec(url=url, model=args.model, api=args.api, input_len=args.input_len,
                            output_len=args.output_len, num_requests=args.num_requests, warmup=args.warmup,
                            ignore_eos=not args.no_ignore_eos, concurrency=args.max_concurrency if rates else 1,
                            rate=rates[0] if rates else None)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        result = run_sweep(base, concurrencies, rates=rates, repeats=args.repeats, runner=runner, labels=labels,
                           requests_per_concurrency=None if rates else args.requests_per_concurrency)
    shown = [c for c in SHOWN if c in result.results]
    sys.stdout.write(result.results[shown].to_string(index=False, float_format=lambda x: f"{x:.2f}") + "\n")
    bound = result.results[result.results["client_bound"]]
    for _, row in bound.iterrows():
        print(f"warning: c={row['concurrency']} repeat {row['repeat']} was client-bound: {row['client_bound_reason']}",
              file=sys.stderr)
    if "delivery_note" in result.results:
        for _, row in result.results[result.results["delivery_note"].fillna("") != ""].iterrows():
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
