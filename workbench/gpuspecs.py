"""Published per-GPU peaks of common datacenter GPUs, for roofline arithmetic.

Every figure is the vendor's own, per GPU, **dense** (NVIDIA and AMD quote tensor FLOP/s "with
sparsity" in their headline tables: dense is half of that), for the SXM/OAM board unless the
name says otherwise. ``peak_flops`` holds only the dtypes the tensor cores run natively (no FP8 on
A100, no FP4 before Blackwell). ``interconnect_bytes_per_s`` is the total GPU-to-GPU bandwidth of
one GPU (NVLink / Infinity Fabric, both directions), or its PCIe link where it has no such fabric.

Sources (vendor datasheets and product pages, as published; see docs/metrics.md "GPU table"):

- A100: NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB): 2,039 GB/s HBM2e, 312 TFLOPS BF16 dense
  (624 with sparsity), 400 W, NVLink 600 GB/s.
- H100: NVIDIA H100 Tensor Core GPU datasheet (SXM5): 3.35 TB/s HBM3, 80 GB, 1,979 / 3,958 TFLOPS
  BF16 / FP8 with sparsity, up to 700 W, NVLink 900 GB/s, PCIe Gen5 128 GB/s.
- H200: NVIDIA H200 Tensor Core GPU datasheet (SXM): 4.8 TB/s HBM3e, 141 GB, same tensor throughput
  as H100 SXM, up to 700 W, NVLink 900 GB/s.
- B200: NVIDIA HGX B200 / DGX B200 datasheet: 8 TB/s HBM3e and 180 GB per GPU, 72 / 144 PFLOPS FP8 /
  FP4 per 8 GPUs with sparsity (so 4.5 / 9 PF dense each; BF16 2.25 PF dense), 1,000 W, NVLink 5 1.8 TB/s.
- B300: NVIDIA HGX B300 (Blackwell Ultra) datasheet: 288 GB HBM3e and 8 TB/s per GPU, 108 PFLOPS FP4
  dense per 8 GPUs (13.5 PF each), FP8 / BF16 as B200, NVLink 5 1.8 TB/s; 1,100 W board power
  (the seeds' ``power.limit``).
- L40S: NVIDIA L40S datasheet: 864 GB/s GDDR6, 48 GB, 733 / 1,466 TFLOPS BF16 / FP8 with sparsity
  (362 / 733 dense), 350 W, PCIe Gen4 x16 (64 GB/s), no NVLink.
- RTX PRO 6000: NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet: 1,792 GB/s GDDR7, 96 GB,
  4 PFLOPS FP4 with sparsity (2 PF dense; FP8 1 PF and BF16 0.5 PF dense by the usual 2x steps),
  600 W, PCIe Gen5 x16 (128 GB/s), no NVLink.
- MI300X: AMD Instinct MI300X data sheet: 5.3 TB/s HBM3, 192 GB, 1,307.4 / 2,614.9 TFLOPS BF16 / FP8
  dense, 750 W, 896 GB/s peak Infinity Fabric (7 links x 128 GB/s).

The keys are substrings of the names ``nvidia-smi`` / ``amd-smi`` print (``NVIDIA H200``,
``NVIDIA B300 SXM6 AC``, ``AMD Instinct MI300X``), so ``gpu_for(name)`` finds the entry of a host's GPU.
PCIe and NVL variants of H100 (2.0 / 3.9 TB/s) are not in the table: their names contain ``H100``
and would match the SXM figures, so ``gpu_for`` refuses them rather than guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field

T, P = 1e12, 1e15


@dataclass(frozen=True)
class GpuSpec:
    """Per-GPU peaks: HBM bytes/s, memory, dense tensor FLOP/s by dtype, board power, interconnect."""

    name: str
    hbm_bytes_per_s: float
    memory_gb: float
    peak_flops: dict[str, float]
    power_limit_w: float
    source: str = ""
    interconnect: str = ""
    interconnect_bytes_per_s: float = 0.0
    aliases: tuple[str, ...] = field(default=())

    def flops(self, dtype: str) -> float:
        """Peak dense FLOP/s in ``dtype``, falling back to the next wider dtype the GPU has (an FP4
        model on a Hopper GPU runs its matmuls in FP8 or BF16 kernels)."""
        for d in {"fp4": ("fp4", "fp8", "bf16"), "fp8": ("fp8", "bf16")}.get(dtype, (dtype,)):
            if d in self.peak_flops:
                return self.peak_flops[d]
        return self.peak_flops["bf16"]

    def compute_dtype(self, dtype: str) -> str:
        """The dtype ``flops(dtype)`` actually uses on this GPU."""
        for d in {"fp4": ("fp4", "fp8", "bf16"), "fp8": ("fp8", "bf16")}.get(dtype, (dtype,)):
            if d in self.peak_flops:
                return d
        return "bf16"


GPUS: dict[str, GpuSpec] = {
    "A100": GpuSpec("A100 SXM4 80GB", 2.039 * T, 80, {"bf16": 312 * T}, 400, "NVIDIA A100 datasheet",
                    "NVLink 3", 600e9),
    "H100": GpuSpec("H100 SXM", 3.35 * T, 80, {"bf16": 989.5 * T, "fp8": 1979 * T}, 700, "NVIDIA H100 datasheet",
                    "NVLink 4", 900e9),
    "H200": GpuSpec("H200 SXM", 4.8 * T, 141, {"bf16": 989.5 * T, "fp8": 1979 * T}, 700, "NVIDIA H200 datasheet",
                    "NVLink 4", 900e9),
    "B200": GpuSpec("B200 (HGX)", 8 * T, 180, {"bf16": 2.25 * P, "fp8": 4.5 * P, "fp4": 9 * P}, 1000,
                    "NVIDIA HGX/DGX B200 datasheet", "NVLink 5", 1.8e12),
    "B300": GpuSpec("B300 (HGX)", 8 * T, 288, {"bf16": 2.25 * P, "fp8": 4.5 * P, "fp4": 13.5 * P}, 1100,
                    "NVIDIA HGX B300 datasheet", "NVLink 5", 1.8e12),
    "L40S": GpuSpec("L40S", 0.864 * T, 48, {"bf16": 362 * T, "fp8": 733 * T}, 350, "NVIDIA L40S datasheet",
                    "PCIe Gen4 x16", 64e9),
    "RTX PRO 6000": GpuSpec("RTX PRO 6000 Blackwell Server", 1.792 * T, 96,
                            {"bf16": 0.5 * P, "fp8": 1 * P, "fp4": 2 * P}, 600,
                            "NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet", "PCIe Gen5 x16", 128e9),
    "MI300X": GpuSpec("Instinct MI300X", 5.3 * T, 192, {"bf16": 1307.4 * T, "fp8": 2614.9 * T}, 750,
                      "AMD Instinct MI300X data sheet", "Infinity Fabric", 896e9),
}
_NOT_SXM = ("PCIE", "NVL")


def gpu_for(name: str) -> GpuSpec | None:
    """The table's entry for a GPU name as ``nvidia-smi`` prints it, or ``None`` if not in it."""
    text = " ".join(name.upper().replace("-", " ").split())
    hits = [k for k in GPUS if k.upper() in text]
    if not hits:
        return None
    key = max(hits, key=len)
    if key in ("H100", "A100") and any(v in text for v in _NOT_SXM):
        return None
    return GPUS[key]
