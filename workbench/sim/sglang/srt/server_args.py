"""The server arguments (SGLang's flag spelling, aliases and argparse behaviour)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from simcore.faults import FlagInfo, FlagView
from simcore.timing import DEFAULT_TIME_SCALE

SPECULATIVE_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DDTREE"]
QUANTIZATION_METHODS = [
    "awq",
    "fp8",
    "gptq",
    "marlin",
    "gptq_marlin",
    "awq_marlin",
    "bitsandbytes",
    "gguf",
    "modelopt",
    "modelopt_fp8",
    "modelopt_fp4",
    "w8a8_int8",
    "w8a8_fp8",
    "moe_wna16",
    "qoq",
    "w4afp8",
    "mxfp4",
    "compressed-tensors",
    "auto-round",
]
ATTENTION_BACKENDS = [
    "aiter",
    "ascend",
    "cutlass_mla",
    "fa3",
    "fa4",
    "flashinfer",
    "flashmla",
    "intel_amx",
    "nsa",
    "torch_native",
    "trtllm_mha",
    "trtllm_mla",
    "triton",
    "wave",
]
MOE_RUNNER_BACKENDS = [
    "auto",
    "deep_gemm",
    "triton",
    "triton_kernel",
    "flashinfer_trtllm",
    "flashinfer_cutlass",
    "flashinfer_mxfp4",
    "flashinfer_cutedsl",
    "cutlass",
]


def _sim(default: Any) -> Any:
    return field(default=default, repr=False, metadata={"sim": True})


@dataclass
class ServerArgs:
    model_path: str
    tokenizer_path: str | None = None
    load_format: str = "auto"
    trust_remote_code: bool = False
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    quantization: str | None = None
    context_length: int | None = None
    served_model_name: str | None = None
    chat_template: str | None = None
    reasoning_parser: str | None = None
    tool_call_parser: str | None = None
    host: str = "127.0.0.1"
    port: int = 30000
    mem_fraction_static: float | None = None
    max_running_requests: int | None = None
    max_total_tokens: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int = 16384
    page_size: int = 1
    tp_size: int = 1
    pp_size: int = 1
    dp_size: int = 1
    ep_size: int = 1
    enable_dp_attention: bool = False
    moe_a2a_backend: str = "none"
    moe_runner_backend: str = "auto"
    base_gpu_id: int = 0
    gpu_id_step: int = 1
    nnodes: int = 1
    node_rank: int = 0
    dist_init_addr: str | None = None
    dist_timeout: int | None = None
    random_seed: int | None = None
    stream_interval: int = 1
    watchdog_timeout: float = 300
    log_level: str = "info"
    log_level_http: str | None = None
    log_requests: bool = False
    enable_metrics: bool = False
    decode_log_interval: int = 40
    api_key: str | None = None
    enable_cache_report: bool = False
    attention_backend: str | None = None
    speculative_algorithm: str | None = None
    speculative_draft_model_path: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    enable_nccl_nvls: bool = False
    enable_symm_mem: bool = False
    enable_flashinfer_allreduce_fusion: bool = False
    disable_custom_all_reduce: bool = False
    cuda_graph_max_bs: int | None = None
    cuda_graph_bs: list[int] | None = None
    disable_cuda_graph: bool = False
    disable_cuda_graph_padding: bool = False
    enable_torch_compile: bool = False
    disable_radix_cache: bool = False
    skip_server_warmup: bool = False
    allow_auto_truncate: bool = False
    sim_time_scale: float = _sim(DEFAULT_TIME_SCALE)
    sim_speed: float = _sim(1.0)
    sim_seed: int = _sim(0)
    sim_fault_file: str | None = _sim(None)
    sim_host_file: str | None = _sim(None)
    sim_gpu_state_dir: str | None = _sim(None)

    def __post_init__(self) -> None:
        if self.tokenizer_path is None:
            self.tokenizer_path = self.model_path
        if self.served_model_name is None:
            self.served_model_name = self.model_path
        if self.random_seed is None:
            self.random_seed = self.sim_seed or 42
        if self.chunked_prefill_size is None:
            self.chunked_prefill_size = 8192
        if self.speculative_algorithm is not None:
            defaults = {
                "EAGLE": (3, 1, 4),
                "NEXTN": (3, 1, 4),
                "EAGLE3": (3, 1, 4),
                "STANDALONE": (3, 1, 4),
                "NGRAM": (1, 1, 8),
                "DFLASH": (1, 1, 16),
                "DDTREE": (1, 1, 16),
            }
            steps, topk, ndraft = defaults[self.speculative_algorithm]
            if self.speculative_num_steps is None:
                self.speculative_num_steps = steps
            if self.speculative_eagle_topk is None:
                self.speculative_eagle_topk = topk
            if self.speculative_num_draft_tokens is None:
                self.speculative_num_draft_tokens = ndraft
        if (
            self.speculative_algorithm in ("DFLASH", "DDTREE")
            and not self.speculative_draft_model_path
        ):
            raise ValueError(
                f"{self.speculative_algorithm} requires --speculative-draft-model-path."
            )
        if (
            self.speculative_algorithm in ("EAGLE", "NEXTN")
            and not self.speculative_draft_model_path
        ):
            self.speculative_draft_model_path = self.model_path
        if self.speculative_algorithm == "NGRAM":
            self.speculative_draft_model_path = self.model_path
        if self.tp_size % max(self.ep_size, 1) != 0:
            raise ValueError(f"tp_size {self.tp_size} must be divisible by ep_size {self.ep_size}")
        if self.enable_nccl_nvls:
            os.environ["NCCL_NVLS_ENABLE"] = "1"
        else:
            os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

    @property
    def world_size(self) -> int:
        dp = 1 if self.enable_dp_attention else self.dp_size
        return self.tp_size * self.pp_size * dp

    def public_dict(self) -> dict[str, Any]:
        """asdict() without the simulator's own options."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if not f.metadata.get("sim")
        }

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> None:
        a = parser.add_argument
        d = ServerArgs
        a(
            "--model-path",
            "--model",
            type=str,
            required=True,
            help="The path of the model weights. This can be a local folder or a Hugging Face repo ID.",
        )
        a("--tokenizer-path", type=str, default=None, help="The path of the tokenizer.")
        a(
            "--load-format",
            type=str,
            default=d.load_format,
            choices=[
                "auto",
                "pt",
                "safetensors",
                "npcache",
                "dummy",
                "sharded_state",
                "gguf",
                "bitsandbytes",
                "layered",
                "remote",
                "remote_instance",
            ],
        )
        a(
            "--trust-remote-code",
            action="store_true",
            help="Whether or not to allow for custom models defined on the Hub in their own modeling files.",
        )
        a(
            "--dtype",
            type=str,
            default=d.dtype,
            choices=["auto", "half", "float16", "bfloat16", "float", "float32"],
        )
        a(
            "--kv-cache-dtype",
            type=str,
            default=d.kv_cache_dtype,
            choices=["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"],
        )
        a("--quantization", type=str, default=None, choices=QUANTIZATION_METHODS)
        a("--context-length", type=int, default=None)
        a("--served-model-name", type=str, default=None)
        a("--chat-template", type=str, default=None)
        a("--reasoning-parser", type=str, default=None)
        a("--tool-call-parser", type=str, default=None)
        a("--host", type=str, default=d.host, help="The host of the HTTP server.")
        a("--port", type=int, default=d.port, help="The port of the HTTP server.")
        a("--mem-fraction-static", type=float, default=None)
        a("--max-running-requests", type=int, default=None)
        a("--max-total-tokens", type=int, default=None)
        a("--chunked-prefill-size", type=int, default=None)
        a("--max-prefill-tokens", type=int, default=d.max_prefill_tokens)
        a("--page-size", type=int, default=d.page_size)
        a(
            "--tensor-parallel-size",
            "--tp-size",
            "--tp",
            type=int,
            default=d.tp_size,
            dest="tp_size",
        )
        a("--pipeline-parallel-size", "--pp-size", type=int, default=d.pp_size, dest="pp_size")
        a("--data-parallel-size", "--dp-size", "--dp", type=int, default=d.dp_size, dest="dp_size")
        a(
            "--expert-parallel-size",
            "--ep-size",
            "--ep",
            type=int,
            default=d.ep_size,
            dest="ep_size",
        )
        a("--enable-dp-attention", action="store_true")
        a(
            "--moe-a2a-backend",
            type=str,
            default=d.moe_a2a_backend,
            choices=["none", "deepep", "mooncake", "ascend_fuseep"],
        )
        a(
            "--moe-runner-backend",
            type=str,
            default=d.moe_runner_backend,
            choices=MOE_RUNNER_BACKENDS,
        )
        a("--base-gpu-id", type=int, default=d.base_gpu_id)
        a("--gpu-id-step", type=int, default=d.gpu_id_step)
        a("--nnodes", type=int, default=d.nnodes)
        a("--node-rank", type=int, default=d.node_rank)
        a("--dist-init-addr", "--nccl-init-addr", type=str, default=None)
        a("--dist-timeout", type=int, default=None)
        a("--random-seed", type=int, default=None)
        a("--stream-interval", type=int, default=d.stream_interval)
        a("--watchdog-timeout", type=float, default=d.watchdog_timeout)
        a("--log-level", type=str, default=d.log_level, help="The logging level of all loggers.")
        a("--log-level-http", type=str, default=None)
        a("--log-requests", action="store_true")
        a("--enable-metrics", action="store_true", help="Enable log prometheus metrics.")
        a("--decode-log-interval", type=int, default=d.decode_log_interval)
        a("--api-key", type=str, default=None)
        a("--enable-cache-report", action="store_true")
        a("--attention-backend", type=str, default=None, choices=ATTENTION_BACKENDS)
        a("--speculative-algorithm", type=str, default=None, choices=SPECULATIVE_ALGORITHMS)
        a("--speculative-draft-model-path", "--speculative-draft-model", type=str, default=None)
        a("--speculative-num-steps", type=int, default=None)
        a("--speculative-eagle-topk", type=int, default=None)
        a("--speculative-num-draft-tokens", type=int, default=None)
        a("--enable-nccl-nvls", action="store_true")
        a("--enable-symm-mem", action="store_true")
        a("--enable-flashinfer-allreduce-fusion", action="store_true")
        a("--disable-custom-all-reduce", action="store_true")
        a("--cuda-graph-max-bs", type=int, default=None)
        a("--cuda-graph-bs", type=int, nargs="+", default=None)
        a("--disable-cuda-graph", action="store_true")
        a("--disable-cuda-graph-padding", action="store_true")
        a("--enable-torch-compile", action="store_true")
        a("--disable-radix-cache", action="store_true")
        a("--skip-server-warmup", action="store_true")
        a("--allow-auto-truncate", action="store_true")
        env = os.environ.get
        a(
            "--sim-time-scale",
            type=float,
            default=float(env("SGLANG_SIM_TIME_SCALE", DEFAULT_TIME_SCALE)),
            help="Simulator: multiply startup phase durations (1.0 = real-time, ~165 s for K2.6 TP8).",
        )
        a(
            "--sim-speed",
            type=float,
            default=float(env("SGLANG_SIM_SPEED", "1.0")),
            help="Simulator: divide serving step times (1.0 = calibrated real-time throughput).",
        )
        a(
            "--sim-seed",
            type=int,
            default=int(env("SGLANG_SIM_SEED", "0")),
            help="Simulator: seed for jitter, accept lengths and fault draws.",
        )
        a(
            "--sim-fault-file",
            type=str,
            default=None,
            help="Simulator: fault file (else $SGLANG_SIM_FAULT_FILE, /etc/sglang-sim/faults.toml, packaged).",
        )
        a(
            "--sim-host-file",
            type=str,
            default=None,
            help="Simulator: host description (else $SGLANG_SIM_HOST_FILE, /etc/sglang-sim/host.toml).",
        )
        a(
            "--sim-gpu-state-dir",
            type=str,
            default=None,
            help="Simulator: GPU state directory (else $SIM_GPU_STATE_DIR, /run/nvidia-sim).",
        )

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> ServerArgs:
        names = [f.name for f in dataclasses.fields(cls)]
        return cls(**{n: getattr(args, n) for n in names})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return parser


def prepare_server_args(argv: list[str]) -> ServerArgs:
    parser = build_parser()
    raw_args = parser.parse_args(argv)
    server_args = ServerArgs.from_cli_args(raw_args)
    server_args.given_dests = _given_dests(parser, argv)  # type: ignore[attr-defined]
    return server_args


def _given_dests(parser: argparse.ArgumentParser, argv: list[str]) -> frozenset[str]:
    """Destinations the command line set explicitly (any alias or abbreviation)."""
    probe = build_parser()
    for action in probe._actions:
        action.default = argparse.SUPPRESS
        action.required = False
    ns, _ = probe.parse_known_args(argv)
    return frozenset(vars(ns))


def flag_view(server_args: ServerArgs) -> FlagView:
    parser = build_parser()
    options: dict[str, FlagInfo] = {}
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        if isinstance(action, argparse._StoreTrueAction):
            kind = "bool"
        elif action.type is int:
            kind = "int"
        elif action.type is float:
            kind = "float"
        else:
            kind = "str"
        for opt in action.option_strings:
            options[opt] = FlagInfo(action.dest, kind)
    values = dataclasses.asdict(server_args)
    given: frozenset[str] = getattr(server_args, "given_dests", frozenset())
    return FlagView(options=options, values=values, given=frozenset(given))
