"""The error kinds a fault can raise: where each may strike and the exact message it carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CUBLAS_CALL = (
    "cublasGemmStridedBatchedEx(handle, opa, opb, (int)m, (int)n, (int)k, (void*)&falpha, a, "
    "CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, strideb, (void*)&fbeta, c, "
    "CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)"
)
CUBLAS_STATUSES = (
    "CUBLAS_STATUS_EXECUTION_FAILED",
    "CUBLAS_STATUS_NOT_SUPPORTED",
    "CUBLAS_STATUS_INTERNAL_ERROR",
    "CUBLAS_STATUS_ALLOC_FAILED",
)
NCCL_ERRORS = {
    "unhandled system error": "unhandled system error (run with NCCL_DEBUG=INFO for details)",
    "unhandled cuda error": "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    "internal error": "internal error - please report this issue to the NCCL developers",
    "invalid usage": "invalid usage (run with NCCL_DEBUG=WARN for details)",
    "remote error": "remote process exited or there was a network error",
}
ILLEGAL_ACCESS = (
    "CUDA error: an illegal memory access was encountered\n"
    "Search for `cudaErrorIllegalAddress' in "
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
OOM_TAIL = (
    "If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
    "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)


@dataclass(frozen=True)
class Kind:
    name: str
    exception: str  # as printed on the last traceback line
    phases: tuple[str, ...]
    params: dict[str, Any]  # parameter -> default
    summary: str


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind(
            "cublas",
            "RuntimeError",
            ("cuda_graph_capture", "warmup", "serving"),
            {"status": "CUBLAS_STATUS_EXECUTION_FAILED"},
            "BF16 strided batched GEMM (torch.bmm) of the MLA absorb step in DeepseekV2AttentionMLA",
        ),
        Kind(
            "cuda_oom",
            "torch.OutOfMemoryError",
            ("weight_loading", "kv_cache_alloc", "cuda_graph_capture", "warmup", "serving"),
            {"tried_gib": 0.0},
            "CUDA caching allocator runs out of device memory",
        ),
        Kind(
            "nccl",
            "RuntimeError",
            ("nccl_init", "cuda_graph_capture", "warmup", "serving"),
            {"error": "unhandled system error"},
            "pynccl call fails (ncclCommInitRank at init, ncclAllReduce afterwards)",
        ),
        Kind(
            "nonetype",
            "AttributeError",
            ("cuda_graph_capture", "warmup", "serving"),
            {},
            "MoE top-k output is None in the expert-parallel dispatch ('topk_ids')",
        ),
        Kind(
            "illegal_memory_access",
            "torch.AcceleratorError",
            ("cuda_graph_capture", "warmup", "serving"),
            {},
            "asynchronous CUDA error surfacing at the next synchronisation",
        ),
        Kind(
            "weight_key_error",
            "KeyError",
            ("weight_loading",),
            {"name": "model.layers.3.mlp.experts.w13_weight_scale"},
            "checkpoint tensor without a matching parameter in DeepseekV2 load_weights",
        ),
    )
}


def format_size(nbytes: float) -> str:
    """torch's allocator size format (MiB below 1 GiB, else GiB)."""
    if nbytes < 1024**3:
        return f"{nbytes / 1024**2:.2f} MiB"
    return f"{nbytes / 1024**3:.2f} GiB"


def cublas_message(status: str) -> str:
    return f"CUDA error: {status} when calling `{CUBLAS_CALL}`"


def nccl_message(error: str) -> str:
    return f"NCCL error: {NCCL_ERRORS[error]}"


def oom_message(gpu: int, tried: float, total: float, free: float) -> str:
    used = total - free
    reserved_unalloc = min(used * 0.011, 3.2 * 1024**3)
    alloc = used - reserved_unalloc - 0.55 * 1024**3
    return (
        f"CUDA out of memory. Tried to allocate {format_size(tried)}. GPU {gpu} has a total "
        f"capacity of {format_size(total)} of which {format_size(free)} is free. Including "
        f"non-PyTorch memory, this process has {format_size(used)} memory in use. Of the allocated "
        f"memory {format_size(alloc)} is allocated by PyTorch, and {format_size(reserved_unalloc)} "
        f"is reserved by PyTorch but unallocated. {OOM_TAIL}"
    )
