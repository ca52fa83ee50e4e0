"""Run a runbook end to end: checked parameters, papermill, a sanitized notebook, the report, the host restored.

``execute("bisect", {"host": "gpu-b"}, preset="seeds-k26")`` resolves ``runbooks/bisect.ipynb`` (a name; an old
name that is now a preset, ``isolate_ep_vs_nvls``; or any notebook file: ``PATH.ipynb``, see
:mod:`workbench.runbooks.anynotebook`), starts from the ``preset``'s parameters if one is named
(:mod:`workbench.runbooks.presets`; the given ones win),
validates the parameters against the runbook's schema before any kernel starts
(a wrong name, type or value raises ``ConfigError``: nothing touched), picks
the run id, and runs the notebook with papermill.  Papermill's saves go to a
``workbench-run://`` sink, never to disk as they are: each save is sanitized
(:func:`sanitize`) into ``data/runs/<run-id>/notebook.ipynb``, so a run killed
at any moment leaves only a redacted notebook behind.  Then ``result.json`` is
completed (a run whose kernel died before writing one gets one), any host left
with a session record is restored, and ``report.html`` is written — always.

Failure kinds and exit codes: :mod:`workbench.runbooks.outcome`.  Ctrl-C interrupts the kernel (the
running cell restores its host and records the interruption); a second one kills it.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import nbformat

from workbench.errors import ConfigError
from workbench.inputs import check_timeout
from workbench.redact import Redactor
from workbench.runbooks import presets as presets_
from workbench.runbooks.anynotebook import inferred_model
from workbench.runbooks.notebooks import RUNBOOKS_DIR
from workbench.runbooks.outcome import (
    EXIT_BAD_PARAMETERS,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_LOST,
    EXIT_OK,
    MARKER_NAME,
    NOTEBOOK_NAME,
    TRANSIENT,
    RunOutcome,
    classify,
    complete_result,
    exit_code,
    finish_restore,
    recover_incomplete,
)
from workbench.runbooks.params import RunbookParams, validate
from workbench.runbooks.progress import RunProgress
from workbench.runbooks.report import export_fallback, export_html
from workbench.runbooks.sanitize import sanitize
from workbench.runs import DEFAULT_DATA_DIR, Run, new_run_id

__all__ = [
    "DEFAULT_TIMEOUT", "EXIT_BAD_PARAMETERS", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_LOST", "EXIT_OK",
    "MARKER_NAME", "NOTEBOOK_NAME", "TRANSIENT", "RunOutcome", "classify", "complete_result", "execute",
    "exit_code", "finish_restore", "params_model", "prepare", "recover_incomplete", "resolve", "runbooks",
    "sanitize", "supervise",
]

DEFAULT_TIMEOUT = 4 * 3600.0  # seconds any one cell may run
# Charts as SVG in the kernel: the saved notebook then shows them offline too (Altair's default HTML
# output loads Vega from a CDN; its "mimetype" output for Vega-Lite 6 fails nbformat's schema).
# workbench first where the kernel has it: its import puts off what altair's jsonschema would compile
# (importcost.py; 1.5 s a kernel).
KERNEL_SETUP = ('--IPKernelApp.exec_lines=try:\n    import workbench\nexcept ImportError:\n    pass\n'
                'import altair; altair.renderers.enable("svg")')
_SINK = "workbench-run://"


# -- runbooks and parameters ------------------------------------------------------


def runbooks() -> list[str]:
    """The runbooks there are: ``runbooks/*.ipynb``."""
    return sorted(p.stem for p in RUNBOOKS_DIR.glob("*.ipynb"))


def _is_notebook_file(runbook: str | Path) -> bool:
    return Path(runbook).suffix == ".ipynb" and Path(runbook).is_file() and Path(runbook).parent.resolve() != RUNBOOKS_DIR


def resolve(runbook: str | Path, model: type[RunbookParams] | None = None) -> tuple[str, Path]:
    """``bisect``, ``bisect.ipynb`` or ``runbooks/bisect.ipynb`` -> (name, notebook path); any other
    existing notebook file (``PATH.ipynb``) is itself (its name: the file's stem)."""
    name = Path(runbook).name.removesuffix(".ipynb")
    if _is_notebook_file(runbook):
        return name, Path(runbook)
    path = RUNBOOKS_DIR / f"{name}.ipynb"
    if not path.is_file():
        old = sorted(presets_.aliases())
        raise ConfigError(f"unknown runbook {str(runbook)!r}; there are: {runbooks()} (and, as presets, {old}); "
                          "or give a notebook file: workbench run PATH.ipynb")
    return name, path


def resolve_preset(runbook: str | Path, preset: str = "", params: Mapping[str, Any] | None = None,
                   ) -> tuple[str | Path, presets_.Preset | None]:
    """(runbook, preset) for a runbook and a preset name, or an old name that is now a preset; with
    ``params`` and no preset named, the preset that is the default for their ``base_unit``."""
    if _is_notebook_file(runbook):
        if preset:
            raise ConfigError(f"--preset: {runbook} is a notebook file; presets belong to the built-in runbooks")
        return runbook, None
    name = Path(runbook).name.removesuffix(".ipynb")
    return presets_.resolve(name, preset, params=params)


def params_model(path: Path) -> type[RunbookParams]:
    """The parameter model a runbook notebook names (``metadata.workbench.parameters``, "module:Class");
    for a notebook of the user's that names none, one read from its ``parameters`` cell."""
    ref = str(nbformat.read(str(path), as_version=4).metadata.get("workbench", {}).get("parameters", ""))
    if not ref and path.parent.resolve() != RUNBOOKS_DIR:
        return inferred_model(path)
    module, _, cls = ref.partition(":")
    model = getattr(importlib.import_module(module), cls, None) if module.startswith("workbench.") else None
    if not (isinstance(model, type) and issubclass(model, RunbookParams)):
        raise ConfigError(f"{path} names no parameter model (metadata.workbench.parameters = {ref!r}); "
                          "regenerate it with `python -m workbench.runbooks.notebooks`")
    return model


def prepare(runbook: str | Path, params: Mapping[str, Any], *, data_dir: str | Path = DEFAULT_DATA_DIR,
            run_id: str = "", model: type[RunbookParams] | None = None, preset: str = "",
            ) -> tuple[str, Path, RunbookParams, dict[str, Any]]:
    """Check everything before anything starts: (name, notebook, validated params, values to inject)."""
    runbook, chosen = resolve_preset(runbook, preset, params)
    name, path = resolve(runbook, model)
    given = presets_.apply(chosen, params)
    if "data_dir" in given and str(given["data_dir"]) != str(data_dir):
        raise ConfigError(f"data_dir is given twice ({given['data_dir']!r} and {str(data_dir)!r}); give it once")
    given["data_dir"] = str(data_dir)
    given["run_id"] = given.get("run_id") or run_id or new_run_id(name)
    validated = validate(model or params_model(path), given)
    if (Path(data_dir) / "runs" / validated.run_id / "result.json").exists():
        raise ConfigError(f"run {validated.run_id} already exists; leave run_id empty for a new one")
    return name, path, validated, validated.model_dump(include=set(given))


def _code_cells(path: Path) -> int:
    """The cells papermill runs: the notebook's code cells plus the injected parameters cell."""
    return 1 + sum(1 for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code" and c.source.strip())


def hosts_of(params: Mapping[str, Any]) -> list[str]:
    """The hosts a run may have changed (its ``host`` and ``hosts`` parameters)."""
    out = [params["host"]] if isinstance(params.get("host"), str) and params.get("host") else []
    out += [h for h in params.get("hosts") or [] if isinstance(h, str) and h not in out]
    return out


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


class _Sink:
    """papermill I/O for ``workbench-run://<run-id>/notebook.ipynb``: every save lands sanitized in the run dir."""

    targets: ClassVar[dict[str, Callable[[str], None]]] = {}
    registered: ClassVar[bool] = False

    @classmethod
    def register(cls) -> None:
        if not cls.registered:
            from papermill.iorw import papermill_io

            papermill_io.register(_SINK, cls)
            cls.registered = True

    @classmethod
    def write(cls, buf: str, path: str) -> None:
        cls.targets[path](buf)

    @classmethod
    def read(cls, path: str) -> str:
        raise ConfigError(f"{path} is write-only")

    @classmethod
    def listdir(cls, path: str) -> list[str]:
        return []

    @classmethod
    def pretty_path(cls, path: str) -> str:
        return path


# -- the kernel -------------------------------------------------------------------------


def _ipc_prefix() -> str:
    """A fresh path prefix for a kernel's IPC sockets, in Jupyter's runtime dir (made 0700)."""
    import uuid

    from jupyter_core.paths import jupyter_runtime_dir

    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    return str(runtime / f"workbench-kernel-{uuid.uuid4().hex[:12]}-ipc")


def _tracking_manager(kernels: list[Any]) -> type:
    """A kernel manager class that puts each manager it makes in ``kernels`` (to signal the kernel)."""
    from jupyter_client.manager import AsyncKernelManager

    class Manager(AsyncKernelManager):  # type: ignore[misc,unused-ignore]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # IPC sockets (files in Jupyter's runtime dir, 0700): a kernel only this user on this machine
            # can reach, and no "Kernel is running over TCP without encryption" warning.
            # The sockets' path prefix goes in that runtime dir too: left unset, jupyter_client names
            # them "kernel-ipc-N" in the current directory (a user's checkout, when a kernel is killed).
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("ip", _ipc_prefix())
            super().__init__(*args, **kwargs)
            kernels.append(self)

    return Manager


def _signal_kernels(kernels: list[Any], sig: int) -> bool:
    sent = False
    for km in kernels:
        pid = getattr(getattr(km, "provisioner", None), "pid", None)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(int(pid), sig)
                sent = True
    return sent


def supervise(work: Callable[[], Any], kernels: list[Any]) -> BaseException | None:
    """Run ``work`` (papermill) in a thread; what it raised, or None.

    Ctrl-C (and SIGTERM) interrupt the kernel — the running cell gets ``KeyboardInterrupt``, so a
    runbook restores its host and records the interruption — a second one kills the kernel
    (``workbench run`` then finishes the restore).  Papermill itself would swallow the signal."""
    box: list[BaseException] = []
    done = threading.Event()  # not Thread.join: a join cut by Ctrl-C can report a live thread as dead

    def target() -> None:
        try:
            work()
        except BaseException as exc:
            box.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=target, name="papermill", daemon=True)
    old = None
    if threading.current_thread() is threading.main_thread():
        def on_term(*_: Any) -> None:
            raise KeyboardInterrupt
        old = signal.signal(signal.SIGTERM, on_term)
    interrupts = 0
    try:
        thread.start()
        while not done.is_set():
            try:
                done.wait(0.5)
            except KeyboardInterrupt:
                interrupts += 1
                sent = _signal_kernels(kernels, signal.SIGINT if interrupts == 1 else signal.SIGKILL)
                if not sent and interrupts > 1:  # no kernel to stop: leave it to the daemon thread
                    return KeyboardInterrupt()
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    return box[0] if box else None


# -- the whole run -------------------------------------------------------------------------


def execute(runbook: str | Path, params: Mapping[str, Any], *, data_dir: str | Path = DEFAULT_DATA_DIR,
            progress: bool = True, timeout: float | None = DEFAULT_TIMEOUT, run_id: str = "",
            kernel_name: str | None = None, kernel_start_timeout: float = 120.0,
            model: type[RunbookParams] | None = None, preset: str = "") -> RunOutcome:
    """Run ``runbooks/<runbook>.ipynb`` (or a notebook file) with ``params`` over the ``preset``'s;
    see the module docstring.

    ``timeout`` bounds each cell (None: no bound); ``model`` overrides the runbook's parameter model."""
    import papermill

    if timeout is not None:
        check_timeout(timeout, "timeout (per cell)")
    chosen = resolve_preset(runbook, preset, params)[1]
    name, path, validated, injected = prepare(runbook, params, data_dir=data_dir, run_id=run_id, model=model,
                                              preset=preset)
    recover_incomplete(data_dir)
    redactor = Redactor.for_params(validated.model_dump())
    run = Run.create(name, data_dir=data_dir, run_id=validated.run_id, redactor=redactor)
    notebook = run.dir / NOTEBOOK_NAME
    marker = run.dir / MARKER_NAME
    started = time.time()
    _write_atomic(marker, json.dumps({"pid": os.getpid(), "runbook": name, "started": started,
                                      "host": injected.get("host"), "hosts": injected.get("hosts"),
                                      "params": redactor.obj(validated.model_dump())}))

    def save(buf: str) -> None:
        clean = sanitize(nbformat.reads(buf, as_version=4), redactor, injected, notebook_path=str(notebook))
        _write_atomic(notebook, nbformat.writes(clean))

    url = f"{_SINK}{run.id}/{NOTEBOOK_NAME}"
    _Sink.register()
    _Sink.targets[url] = save
    kernels: list[Any] = []
    shown = RunProgress(name, redactor, total_cells=_code_cells(path)) if progress else None
    hooks: dict[str, Any] = {"on_cell_complete": shown.cell_complete} if shown else {}
    try:
        error = supervise(lambda: papermill.execute_notebook(
            str(path), url, parameters=injected, progress_bar=False, stdout_file=shown, stderr_file=shown,
            execution_timeout=timeout, start_timeout=kernel_start_timeout, kernel_name=kernel_name,
            extra_arguments=[KERNEL_SETUP], kernel_manager_class=_tracking_manager(kernels), **hooks), kernels)
    finally:
        _Sink.targets.pop(url, None)
        if shown:
            shown.close()
    # a notebook of the user's that ran to its end without writing a result.json: that is its success
    ran_through = error is None and run.result() is None and _is_notebook_file(runbook)
    result = complete_result(run, validated, None if ran_through else classify(error, run.result()), started)
    if ran_through:
        result.update(status="ok", conclusion=f"{path.name} ran to its end (it wrote no result.json).")
    result.setdefault("runbook", name)
    if chosen is not None:
        result["preset"] = chosen.name
    hosts = hosts_of(injected) or hosts_of(validated.model_dump())
    if hosts and not (result.get("status") == "ok" and result.get("host_restored")):
        ok, notes = finish_restore(hosts, ssh_config=str(getattr(validated, "ssh_config", "") or ""),
                                   run_id=run.id, ready_timeout=float(getattr(validated, "start_timeout", 900.0)))
        result["host_restored"] = ok
        result["restore_notes"] = notes
    run.write_result(result)
    result = run.result() or result
    try:
        if not notebook.exists():
            raise FileNotFoundError("no notebook was saved (the kernel did not start)")
        report = export_html(notebook, run.dir, redactor=redactor, result=result)
    except Exception as exc:  # the report is always written: a plain one says why the full one is not
        report = export_fallback(run.dir, result, f"{type(exc).__name__}: {exc}", redactor=redactor)
    marker.unlink(missing_ok=True)
    return RunOutcome(name, run.id, run.dir, result, notebook, report)
