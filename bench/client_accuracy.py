"""How fast a stream can a load client time to within 1 ms? Ours vs SGLang's bench_serving (and vLLM's).

    .venv/bin/python bench/client_accuracy.py [--itl-ms 10] [--concurrency 1,16,64,128,256,384]
        [--sglang-python /tmp/sgl-venv/bin/python] [--vllm-python ~/.cache/workbench/vllm-env/bin/python]
        [--aiperf ~/.cache/workbench/aiperf-env/bin/aiperf]   (bench/client_aiperf.py --install makes it)
        [--guidellm ~/.cache/workbench/guidellm-env/bin/guidellm]   (bench/client_guidellm.py --install makes it)

A fixed-schedule server (``workbench.bench.fixedserver``, its own process) streams one token every
``--itl-ms`` to each of ``c`` concurrent requests. The server logs when it really sent each chunk
(a loaded server sends late, never in bursts); the streamed rate is c x 1000 / the median actual
gap, and a client's error is |its median ITL - that median gap| over the same run. Each client runs in its own process, one after
the other, against the same server. Each (client, concurrency) point runs ``--repeats`` times,
clients interleaved; the median error counts. The figure: the highest streamed rate up to which
every concurrency kept the median error below 1 ms, per client, and ours over SGLang's.

``--against sim``: TTFT and ITL against the simulated SGLang K2.6 server, which stamps when it read
each request and when each chunk left (``SGLANG_SIM_STAMPS``, ``workbench/sim/simcore/stamps.py``).
Each client runs ``--requests`` requests at c=1; its median TTFT and ITL are set against the
server's median (first chunk with output − request read; gaps between chunks with output) over
the same requests (the clients' warmups dropped), so the sign says which clients read late or early.
``--nagle`` serves without TCP_NODELAY, as the simulator did before: keep-alive clients then read
the first chunk one delayed ACK late (BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import client_aiperf, client_guidellm  # noqa: E402
from bench.client_tokenizer import write as write_tokenizer  # noqa: E402
from workbench.bench import client  # noqa: E402
from workbench.bench.ingest import load_results  # noqa: E402
from workbench.bench.loadcore import LoadSpec  # noqa: E402
from workbench.bench.metrics import itl_values, summarize  # noqa: E402


def start_server(itl_ms: float, ttft_ms: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "workbench.bench.fixedserver", "--port", "0", "--itl-ms", str(itl_ms),
                             "--ttft-ms", str(ttft_ms)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "READY <port>" once it listens
    if not line.startswith("READY"):
        proc.kill()
        raise SystemExit(f"fixed server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{line.split()[1]}"


def server_gaps(url: str) -> list[float]:
    with urllib.request.urlopen(url + "/stats") as r:
        return list(json.loads(r.read())["gaps_s"])


def ours(kind: str, url: str, c: int, n: int, out_len: int, *, fixed: bool = True) -> dict[str, float]:
    spec = LoadSpec(url=url, model="fixed", input_len=32, output_len=out_len, num_requests=n, concurrency=c,
                    warmup=min(c, 4), **({"tokens_per_word": (0.0, 1.0)} if fixed else {}))
    if kind == "httpx":
        records, run = client.run_local(spec, progress=False)
    else:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(spec.to_dict(), f)
        out = subprocess.run(["/usr/bin/python3", "-I", str(ROOT / "workbench/bench/hostclient.py"), f.name],
                             capture_output=True, text=True, check=True).stdout
        os.unlink(f.name)
        lines = [json.loads(x) for x in out.splitlines()]
        records, run = [x for x in lines if x["kind"] == "request"], lines[-1]
    s = summarize(records, run)
    return {"itl_p50_ms": statistics.median(itl_values(records)) * 1000, "tok_s": s["output_throughput"],
            "ttft_p50_ms": s["ttft_p50_ms"], "tpot_p50_ms": s["tpot_p50_ms"], "failed": s["failed"],
            "cpu_frac": run["cpu_frac"], "client_bound": s["client_bound"]}


def sglang(python: str, tok: str, url: str, c: int, n: int, out_len: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "out.jsonl"
        subprocess.run([python, str(ROOT / "bench/client_sglang_shim.py"), "--backend", "sglang-oai", "--base-url", url,
                        "--model", "fixed", "--tokenizer", tok, "--dataset-name", "random-ids", "--random-input-len", "32",
                        "--random-output-len", str(out_len), "--random-range-ratio", "1", "--num-prompts", str(n),
                        "--max-concurrency", str(c), "--request-rate", "inf", "--warmup-requests", str(min(c, 4)),
                        "--output-file", str(out), "--disable-tqdm"],
                       capture_output=True, text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        t = load_results(out).table.iloc[0]
    return {"itl_p50_ms": t["itl_p50_ms"], "tok_s": t["output_throughput"], "ttft_p50_ms": t["ttft_p50_ms"],
            "failed": n - t["completed"]}


def vllm(python: str, tok: str, url: str, c: int, n: int, out_len: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([python, "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--backend", "openai", "--base-url", url,
                        "--endpoint", "/v1/completions", "--model", "fixed", "--tokenizer", tok, "--dataset-name", "random",
                        "--random-input-len", "32", "--random-output-len", str(out_len), "--num-prompts", str(n),
                        "--max-concurrency", str(c), "--ignore-eos", "--num-warmups", str(min(c, 4)), "--save-result",
                        "--result-dir", d, "--result-filename", "r.json", "--disable-tqdm"],
                       capture_output=True, text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        t = load_results(Path(d) / "r.json").table.iloc[0]
    return {"itl_p50_ms": t["itl_p50_ms"], "tok_s": t["output_throughput"], "ttft_p50_ms": t["ttft_p50_ms"],
            "failed": t["failed"]}


def aiperf(exe: str, tok: str, url: str, c: int, n: int, out_len: int, keep: str = "") -> dict[str, float]:
    t = client_aiperf.run(exe, Path(tok), url, c, n, out_len, warmup=min(c, 4),
                          keep=Path(keep) / f"c{c}-{time.time_ns()}" if keep else None).table.iloc[0]
    # itl: AIPerf's inter_chunk_latency (per chunk, as the others); its inter_token_latency is our TPOT
    return {"itl_p50_ms": t["itl_p50_ms"], "tok_s": t["output_throughput"], "ttft_p50_ms": t["ttft_p50_ms"],
            "failed": t["failed"], "tpot_p50_ms": t["tpot_p50_ms"]}


def guidellm(exe: str, tok: str, url: str, c: int, n: int, out_len: int) -> dict[str, float]:
    t = client_guidellm.run(exe, Path(tok), url, c, n, out_len).table.iloc[0]
    # itl: GuideLLM keeps no per-chunk times; its inter_token_latency (our TPOT) is the request's mean gap,
    # which on the fixed-schedule server (one token a chunk) is its mean chunk gap
    return {"itl_p50_ms": t["tpot_p50_ms"], "tok_s": t["output_throughput"], "ttft_p50_ms": t["ttft_p50_ms"],
            "failed": t["failed"], "tpot_p50_ms": t["tpot_p50_ms"]}


# -- against the simulated SGLang server's own send times -------------------------------------

MODELS = ROOT / "workbench" / "testbed" / "models"


def start_sim(stamps: Path, *, nagle: bool = False) -> tuple[subprocess.Popen[str], str]:
    """The simulated K2.6 server (TP8, DDTree) on loopback, stamping every chunk into ``stamps``
    (``nagle``: without TCP_NODELAY, as the simulator served before it matched uvicorn)."""
    from workbench.testbed.ports import free_port

    port = free_port()
    state = tempfile.mkdtemp(prefix="wb-gpu-state-")
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.sim.server", "--model-path", str(MODELS / "Kimi-K2.6"), "--tp-size", "8",
         "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", str(MODELS / "Kimi-K2.6-DFlash"),
         "--speculative-num-draft-tokens", "8", "--served-model-name", "fixed", "--trust-remote-code",
         "--host", "127.0.0.1", "--port", str(port), "--enable-metrics", "--sim-gpu-state-dir", state],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "SGLANG_SIM_STAMPS": str(stamps), "SGLANG_SIM_NAGLE": "1" if nagle else "0"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/health", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the simulated server did not become ready in 180 s")


def stamped(stamps: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in stamps.read_text().splitlines()] if stamps.exists() else []


def server_reference(lines: list[dict[str, object]]) -> dict[str, float]:
    """The server's own TTFT (first chunk with output, and first chunk of any kind) and ITL, medians in ms."""
    ttft, first_any, gaps = [], [], []
    for line in lines:
        chunks = line["chunks"]
        assert isinstance(chunks, list)
        out = [t for t, has in chunks if has]
        if not out:
            continue
        ttft.append(out[0] - float(line["t_recv"]))  # type: ignore[arg-type]
        first_any.append(chunks[0][0] - float(line["t_recv"]))  # type: ignore[arg-type]
        gaps += [b - a for a, b in itertools.pairwise(out)]
    return {"server_ttft_p50_ms": statistics.median(ttft) * 1000,
            "server_first_chunk_p50_ms": statistics.median(first_any) * 1000,
            "server_itl_p50_ms": statistics.median(gaps) * 1000, "server_requests": len(ttft)}


def against_sim(a: argparse.Namespace, clients: dict[str, object]) -> list[dict[str, object]]:
    stamps = Path(tempfile.mkdtemp(prefix="wb-stamps-")) / "stamps.jsonl"
    server, url = start_sim(stamps, nagle=a.nagle)
    rows: list[dict[str, object]] = []
    try:
        for rep in range(a.repeats):
            for name, run in clients.items():
                before = len(stamped(stamps))
                r = run(url, 1, a.requests)  # type: ignore[operator]
                new = stamped(stamps)[before:]
                ref = server_reference(new[len(new) - a.requests:])  # the last n: the client's warmup dropped
                rows.append({"client": name, "repeat": rep, **r, **ref,
                             "ttft_error_ms": r["ttft_p50_ms"] - ref["server_ttft_p50_ms"],
                             "itl_error_ms": r["itl_p50_ms"] - ref["server_itl_p50_ms"]})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        server.kill()
        server.wait()
    print("\n| client | TTFT p50 ms (client) | TTFT p50 ms (server: first output chunk) | server: first chunk of any kind "
          "| TTFT error ms | ITL p50 ms (client) | ITL p50 ms (server) | ITL error ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name in clients:
        rs = [r for r in rows if r["client"] == name]

        def med(key: str, rs: list[dict[str, object]] = rs) -> float:
            return statistics.median(float(r[key]) for r in rs)  # type: ignore[arg-type]

        print(f"| {name} | {med('ttft_p50_ms'):.2f} | {med('server_ttft_p50_ms'):.2f} | {med('server_first_chunk_p50_ms'):.2f} "
              f"| {med('ttft_error_ms'):+.2f} | {med('itl_p50_ms'):.3f} | {med('server_itl_p50_ms'):.3f} | "
              f"{med('itl_error_ms'):+.3f} |")
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--itl-ms", type=float, default=10.0)
    p.add_argument("--ttft-ms", type=float, default=20.0)
    p.add_argument("--concurrency", default="1,16,64,128,256,384")
    p.add_argument("--output-len", type=int, default=64)
    p.add_argument("--rounds", type=int, default=2, help="requests per point = rounds x concurrency")
    p.add_argument("--repeats", type=int, default=3, help="runs per (client, concurrency); medians are reported")
    p.add_argument("--sglang-python", default="/tmp/sgl-venv/bin/python")
    p.add_argument("--vllm-python", default="")
    p.add_argument("--aiperf", default=str(client_aiperf.ENV / "bin" / "aiperf"),
                   help="AIPerf's executable (bench/client_aiperf.py --install); '' leaves it out")
    p.add_argument("--guidellm", default=str(client_guidellm.ENV / "bin" / "guidellm"),
                   help="GuideLLM's executable (bench/client_guidellm.py --install); '' leaves it out")
    p.add_argument("--aiperf-keep", default="", help="copy each AIPerf run's artifact directory under here")
    p.add_argument("--clients", default="", help="comma-separated subset of the clients to run (default: all found)")
    p.add_argument("--json", help="also write the rows here")
    p.add_argument("--against", choices=("fixed", "sim"), default="fixed",
                   help="fixed: the fixed-schedule server's ITL ladder; sim: TTFT/ITL against the simulator's stamps")
    p.add_argument("--requests", type=int, default=20, help="--against sim: measured requests per client run (c=1)")
    p.add_argument("--nagle", action="store_true", help="--against sim: serve without TCP_NODELAY (the old simulator)")
    a = p.parse_args()
    tok = str(write_tokenizer(tempfile.mkdtemp(prefix="wb-tok-")))
    fixed = a.against == "fixed"
    clients = {"hostclient": lambda url, c, n: ours("hostclient", url, c, n, a.output_len, fixed=fixed),
               "httpx": lambda url, c, n: ours("httpx", url, c, n, a.output_len, fixed=fixed)}
    if a.sglang_python and Path(a.sglang_python).exists():
        clients["sglang.bench_serving"] = lambda url, c, n: sglang(a.sglang_python, tok, url, c, n, a.output_len)
    if a.vllm_python and Path(a.vllm_python).exists():
        clients["vllm bench serve"] = lambda url, c, n: vllm(a.vllm_python, tok, url, c, n, a.output_len)
    if a.aiperf and Path(a.aiperf).exists():
        clients["aiperf"] = lambda url, c, n: aiperf(a.aiperf, tok, url, c, n, a.output_len, a.aiperf_keep)
    if a.guidellm and Path(a.guidellm).exists():
        clients["guidellm"] = lambda url, c, n: guidellm(a.guidellm, tok, url, c, n, a.output_len)
    if a.clients:
        wanted = a.clients.split(",")
        if unknown := set(wanted) - set(clients):
            raise SystemExit(f"--clients: {sorted(unknown)} not available (have {sorted(clients)})")
        clients = {k: clients[k] for k in wanted}
    if not fixed:
        if clients.pop("guidellm", None) is not None:  # its ITL is per token: no chunk gap to set against the stamps
            print("guidellm left out of --against sim: it keeps no chunk times (its ITL is TPOT)", flush=True)
        sim_rows = against_sim(a, clients)
        if a.json:
            Path(a.json).write_text(json.dumps({"rows": sim_rows}, indent=1))
        return 0
    server, url = start_server(a.itl_ms, a.ttft_ms)
    rows = []
    try:
        for c in [int(x) for x in a.concurrency.split(",")]:
            for rep in range(a.repeats):  # clients interleaved, so a burst of load elsewhere hits all of them
                for name, run in clients.items():
                    before = len(server_gaps(url))
                    t0 = time.perf_counter()
                    r = run(url, c, a.rounds * c)
                    gaps = server_gaps(url)[before:]
                    ref = statistics.median(gaps) * 1000
                    # the rate the server really streamed: c streams at its actual median gap
                    rows.append({"client": name, "concurrency": c, "repeat": rep, "streamed_tok_s": c * 1000 / ref,
                                 "server_gap_p50_ms": ref, "error_ms": abs(r["itl_p50_ms"] - ref),
                                 "wall_s": time.perf_counter() - t0, **r})
                    print(json.dumps(rows[-1]), flush=True)
    finally:
        server.kill()
        server.wait()
    points = {}
    for r in rows:
        points.setdefault((r["client"], r["concurrency"]), []).append(r)
    print("\n| client | c | streamed tok/s (median) | measured tok/s | median-ITL error ms (median of runs) | errors of the runs |")
    print("|---|---|---|---|---|---|")
    table = []
    for (name, c), rs in points.items():
        row = {"client": name, "concurrency": c, "streamed_tok_s": statistics.median(x["streamed_tok_s"] for x in rs),
               "tok_s": statistics.median(x["tok_s"] for x in rs), "error_ms": statistics.median(x["error_ms"] for x in rs),
               "failed": sum(x["failed"] for x in rs)}
        table.append(row)
        print(f"| {name} | {c} | {row['streamed_tok_s']:.0f} | {row['tok_s']:.0f} | {row['error_ms']:.3f} | "
              + ", ".join(f"{x['error_ms']:.2f}" for x in rs) + " |")
    best = {}
    for name in clients:
        best[name] = 0.0
        for row in sorted((t for t in table if t["client"] == name), key=lambda t: t["concurrency"]):
            if row["error_ms"] >= 1.0 or row["failed"]:
                break  # the figure holds only while every lower concurrency held too
            best[name] = max(best[name], row["streamed_tok_s"])
        print(f"{name}: < 1 ms median-ITL error up to {best[name]:.0f} tok/s streamed")
    base = "sglang.bench_serving" if best.get("sglang.bench_serving") else "hostclient"
    if best.get(base):
        for name in best:
            if name != base:
                print(f"ratio {name} / {base}: {best[name] / best[base]:.2f}")
    print(f"load average at the end: {open('/proc/loadavg').read().split()[:3]} on {os.cpu_count()} CPUs")
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "best": best}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
