"""Simulator-only machinery: fault plans, performance model, synthetic tokenizer, GPU state.

Importable both as ``workbench.sim.simcore`` (tests) and as top-level ``simcore`` (inside the
simulated host, where ``workbench/sim`` is on ``PYTHONPATH``); modules here use relative imports
only and never import ``sglang`` or ``torch``.
"""

PHASES = (
    "nccl_init",
    "weight_loading",
    "kv_cache_alloc",
    "cuda_graph_capture",
    "warmup",
    "serving",
)
