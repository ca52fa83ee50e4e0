"""Run SGLang's ``bench_serving`` without torch: ``python bench/client_sglang_shim.py ARGS...``.

Use it with an interpreter that has ``pip install sglang --no-deps`` plus aiohttp, numpy, tqdm,
requests, msgspec, orjson, pybase64, pillow, psutil, pyzmq, ipython, datasets and transformers (never the project venv).
``sglang.benchmark.serving`` imports two small things from ``sglang.srt`` whose package
``__init__`` pulls in torch: ``sglang.srt.utils.network`` (standard library only; loaded here
without its package ``__init__``) and the ``FAKE_BOOTSTRAP_HOST`` constant (copied below).
Nothing in the benchmark's measuring code is replaced.
"""

import importlib.util
import sys
import types
from pathlib import Path

spec = importlib.util.find_spec("sglang")
assert spec is not None and spec.origin is not None, "sglang is not installed in this interpreter"
srt = Path(spec.origin).parent / "srt"
for name, path in (("sglang.srt.utils", srt / "utils"), ("sglang.srt.disaggregation", srt / "disaggregation")):
    pkg = types.ModuleType(name)
    pkg.__path__ = [str(path)]  # submodules load from the real files, the package __init__ does not run
    sys.modules[name] = pkg
disagg = types.ModuleType("sglang.srt.disaggregation.utils")
disagg.FAKE_BOOTSTRAP_HOST = "2.2.2.2"  # sglang/srt/disaggregation/utils.py, 0.5.23
sys.modules["sglang.srt.disaggregation.utils"] = disagg

from sglang.benchmark.serving import cli_main  # noqa: E402

if __name__ == "__main__":
    sys.argv[0] = "sglang.bench_serving"
    cli_main()
