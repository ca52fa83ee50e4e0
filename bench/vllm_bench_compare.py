"""vLLM's own ``vllm bench serve`` vs the workbench's client, same server, same run (issue 9 figure).

    .venv/bin/python bench/vllm_bench_compare.py [--host gpu-a] [--concurrency 1,8] [--rounds 2]

On the testbed provisioned with ``sim,vllm``: takes gpu-a's lock, stops the simulated SGLang unit
(it holds the simulated GPUs), starts ``vllm-tiny.service``, then for each concurrency and round
runs, alternately, ``vllm bench serve`` (random dataset, fixed input/output lengths, ignore_eos;
run on the host next to the server, from the bind-mounted vLLM env) and the workbench's host client
(the same shape), ingests vLLM's result file with ``workbench.bench.ingest.load_results`` and
prints both side by side. The host is restored at the end.

``--api-server-nice -10`` (the default) renices vLLM's API-server process (the unit's main PID) for
the measurement: on two shared cores its EngineCore and Worker processes, busy while they decode,
otherwise starve it, and it then delivers a whole response in one burst at the end (TTFT = E2E,
ITL = 0) for any client; with ``--api-server-nice 0`` that shows up in both clients' figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from workbench.bench.ingest import load_results, recompute
from workbench.bench.loadcore import LoadSpec
from workbench.bench.metrics import summarize
from workbench.bench.remote import run_on_host
from workbench.hosts import connect
from workbench.session import HostSession
from workbench.testbed.provision import (
    BASE_UNIT,
    VLLM_HEALTH_PATH,
    VLLM_MODEL_DIR,
    VLLM_PORT,
    VLLM_UNIT,
)
from workbench.testbed.vllm import ensure_vllm_env
from workbench.watch import watch_start

INPUT, OUTPUT = 64, 64
KEYS = ("output_throughput", "ttft_mean_ms", "ttft_p50_ms", "ttft_p99_ms", "tpot_mean_ms", "tpot_p50_ms",
        "itl_mean_ms", "itl_p50_ms", "e2e_mean_ms")


def vllm_bench(host: Any, vllm: str, concurrency: int, prompts: int, tag: str) -> dict[str, Any]:
    out_dir = "/tmp/wb-vllm-bench"
    argv = ["env", "HF_HUB_OFFLINE=1", "VLLM_NO_USAGE_STATS=1", vllm, "bench", "serve", "--backend", "vllm",
            "--base-url", f"http://127.0.0.1:{VLLM_PORT}", "--model", VLLM_MODEL_DIR, "--dataset-name", "random",
            "--random-input-len", str(INPUT), "--random-output-len", str(OUTPUT), "--num-prompts", str(prompts),
            "--max-concurrency", str(concurrency), "--ignore-eos", "--percentile-metrics", "ttft,tpot,itl,e2el",
            "--metric-percentiles", "50,99", "--save-result", "--save-detailed", "--result-dir", out_dir,
            "--result-filename", f"{tag}.json", "--num-warmups", "1"]
    res = host.run(argv, timeout=900)
    if not res.ok:
        raise SystemExit(f"vllm bench serve failed: {res.tail(20)}")
    local = f"/tmp/{tag}.json"
    with open(local, "wb") as fh:
        fh.write(host.get(f"{out_dir}/{tag}.json"))
    ing = load_results(local, "vllm")
    row = ing.table.iloc[0].to_dict()
    ours = recompute(ing.requests) if ing.requests is not None else {}
    return ({k: row.get(k) for k in KEYS} | {"input_tokens": row.get("total_input_tokens"), "completed": row.get("completed")}
            | {f"recomputed_{k}": ours.get(k) for k in ("ttft_p50_ms", "tpot_p50_ms", "itl_p50_ms")})


def workbench_client(host: Any, concurrency: int, prompts: int) -> dict[str, Any]:
    spec = LoadSpec(url=f"http://127.0.0.1:{VLLM_PORT}", model=VLLM_MODEL_DIR, input_len=INPUT, output_len=OUTPUT,
                    num_requests=prompts, concurrency=concurrency, warmup=1, ignore_eos=True)
    records, run = run_on_host(host, spec, progress=False)
    s = summarize(records, run)
    return {k: s.get(k) for k in KEYS} | {"input_tokens": s.get("total_input_tokens"), "completed": s.get("completed"),
                                          "client_bound": s.get("client_bound")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="gpu-a")
    ap.add_argument("--concurrency", default="1,8")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=48)
    ap.add_argument("--api-server-nice", type=int, default=-10)
    args = ap.parse_args()
    host = connect(args.host)
    vllm = str(ensure_vllm_env().root / "bin" / "vllm")
    rows: list[dict[str, Any]] = []
    with HostSession(host, purpose="bench: vllm bench serve vs workbench", lock_wait=600) as s:
        s.make_room([BASE_UNIT])
        s.protect(VLLM_UNIT)
        out = watch_start(s.svc, VLLM_UNIT, health_path=VLLM_HEALTH_PATH, timeout=600)
        assert out.ok, out.describe()
        if args.api_server_nice:
            pid = s.svc.status(VLLM_UNIT).main_pid
            host.run(["renice", "-n", str(args.api_server_nice), "-p", str(pid)], check=True)
        for c in [int(x) for x in args.concurrency.split(",")]:
            for r in range(args.rounds):
                order = [("vllm bench serve", None), ("workbench", None)]
                if r % 2:
                    order.reverse()
                for name, _ in order:
                    if name == "workbench":
                        m = workbench_client(host, c, args.prompts)
                    else:
                        m = vllm_bench(host, vllm, c, args.prompts, f"c{c}-r{r}")
                    rows.append({"client": name, "concurrency": c, "round": r, **m})
                    print(json.dumps(rows[-1], default=str), flush=True)
    summary = {}
    for c in {r["concurrency"] for r in rows}:
        for name in ("vllm bench serve", "workbench"):
            sel = [r for r in rows if r["concurrency"] == c and r["client"] == name]
            summary[f"{name} c={c}"] = {k: round(statistics.median(float(x[k]) for x in sel if x.get(k) is not None), 2)
                                        for k in KEYS if any(x.get(k) is not None for x in sel)}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
