"""GuideLLM as one more load client of bench/client_accuracy.py: its own venv, an offline tokenizer, its JSON read.

    .venv/bin/python bench/client_guidellm.py --install      # ~/.cache/workbench/guidellm-env (guidellm 0.8.1, ~5.7 GB:
                                                             #  it pulls torch with its CUDA wheels)
    .venv/bin/python bench/client_guidellm.py REPORT.json    # the figures read from a run's report

GuideLLM runs in a venv of its own (``--install`` makes it with this machine's ``/usr/bin/python3``;
never by ``make test``). Its tokenizer is the word-level one of ``bench/client_tokenizer.py``, given as
a local directory (``--tokenizer kind=huggingface_auto,model=DIR``; with ``HF_HUB_OFFLINE=1`` 0.8.1
loads it without the hub, unlike AIPerf 0.13.0). Requests go to ``/v1/chat/completions`` (its
default), streamed, ``max_completion_tokens`` and ``ignore_eos`` set by it.

What its report has, and has not (``workbench.bench.ingest``, docs/metrics.md): no per-chunk times —
a request record keeps its first and last token times and the number of iterations — so its "ITL"
(``inter_token_latency_ms``) is a request's (latency − TTFT) / (tokens − 1), our TPOT. Against the
fixed-schedule server (one token a chunk) that equals the mean chunk gap of the request, so its
median over requests is set against the server's median gap like the others' ITL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workbench.bench.ingest import Ingested, load_results

ENV = Path.home() / ".cache" / "workbench" / "guidellm-env"
VERSION = "0.8.1"


def install(env: Path = ENV) -> Path:
    """The venv with GuideLLM (made once; a second call only checks it)."""
    exe = env / "bin" / "guidellm"
    if not exe.exists():
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(env)], check=True)
        subprocess.run([str(env / "bin" / "pip"), "install", "-q", f"guidellm=={VERSION}"], check=True)
    return exe


def command(exe: str, url: str, tokenizer_dir: Path, c: int, n: int, out_len: int, report: Path, *,
            in_len: int = 32) -> list[str]:
    return [exe, "run", "--backend", f"kind=openai_http,target={url},model=fixed",
            "--profile", f"kind=concurrent,streams={c}", "--constraint", f"kind=max_requests,count={n}",
            "--tokenizer", f"kind=huggingface_auto,model={tokenizer_dir}",
            "--data", f"kind=synthetic_text,prompt_tokens={in_len},output_tokens={out_len}",
            "--output", f"kind=json,path={report}", "--disable-console-interactive"]


def run(exe: str, tokenizer_dir: Path, url: str, c: int, n: int, out_len: int) -> Ingested:
    """One GuideLLM run against ``url`` at concurrency ``c`` (``n`` requests), its JSON report read."""
    with tempfile.TemporaryDirectory(prefix="wb-guidellm-") as d:
        report = Path(d) / "report.json"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
        p = subprocess.run(command(exe, url, tokenizer_dir, c, n, out_len, report), capture_output=True, text=True,
                           env=env, timeout=900)
        if p.returncode != 0 or not report.exists():
            raise RuntimeError(f"guidellm exited {p.returncode}: {(p.stdout + p.stderr)[-2000:]}")
        return load_results(report)


if __name__ == "__main__":
    if sys.argv[1:] == ["--install"]:
        print(install())
    else:
        print(load_results(sys.argv[1]).table.T.to_string())
