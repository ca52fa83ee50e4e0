"""Fault injection for ``bench/vllm_faults.py``: imported by every Python process of the server.

``WB_FAULT=module:Qual.name:mode[:armed-file]`` rewrites that function or method, as soon as its module
has been executed (before anything imports the name from it), so that its first statement fails once
armed (``armed-file`` exists, or always without one): ``raise`` (``RuntimeError: injected fault``, a
message that names nothing), ``segv`` (a real segmentation fault: a read of address 0), ``abort``
(``os.abort()``), ``exit`` (``os._exit(3)``: the process vanishes without a word).

The function is recompiled from its own source file with the failing statement in front of its first
one, under its own file name and line numbers, and its code object swapped in: the traceback's
innermost frame is the real function at its first line, as a failure there would show it, and no frame
of this file appears. Not part of the product: the bench puts this directory first on the server's PYTHONPATH.

``WB_TRACE=dir`` instead records, for ``bench/vllm_traced_faults.py``, the first call of every function of vLLM's
own code in every process: one JSON line each in ``dir/<pid>.jsonl`` with its module, qualified name, wall time and
the names of the vLLM frames around it, innermost first (a ``collective_rpc`` frame adds the method it was asked to
run, inside it, and so does the worker's ``_execute_worker_rpc``), and whether a web request or the engine's busy
loop is among them; and every entry to and return from a vLLM function named in ``WB_TRACE_STEPS`` (commas).
"""

import ast
import importlib.abc
import importlib.machinery
import inspect
import os
import sys
import textwrap

_SPEC = os.environ.get("WB_FAULT", "")
_STATEMENTS = {
    "raise": 'raise RuntimeError("injected fault")',
    "segv": '__import__("ctypes").string_at(0)',
    "abort": '__import__("os").abort()',
    "exit": '__import__("os")._exit(3)',
}


def _rewritten(function, module_globals, mode, armed):
    lines, first = inspect.getsourcelines(function)
    source = textwrap.dedent("".join(lines))
    tree = ast.parse(source)
    node = tree.body[0]
    body_line = node.body[0].lineno  # 1-based, in ``source``
    indent = " " * node.body[0].col_offset
    statement = _STATEMENTS[mode]
    if armed:
        statement = f"if __import__('os').path.exists({armed!r}): {statement}"
    src_lines = source.splitlines(keepends=True)
    src_lines.insert(body_line - 1, f"{indent}{statement}\n")
    del src_lines[: node.lineno - 1]  # the decorators: the rewritten function replaces what they wrapped
    # a factory whose parameter is ``__class__`` gives zero-argument super() the class it needs
    text = "def _wb_factory(__class__):\n" + textwrap.indent("".join(src_lines), "    ")
    text += f"    return {node.name}\n"
    padding = first + node.lineno - 1 - 2  # the def line lands on its own line number
    code = compile("\n" * max(padding, 0) + text, inspect.getsourcefile(function), "exec")
    namespace = {}
    exec(code, module_globals, namespace)
    return namespace["_wb_factory"]


def _install(module, qual, mode, armed):
    owner = module
    *path, name = qual.split(".")
    for part in path:
        owner = getattr(owner, part)
    # the function itself, under any decorator (a tracing wrapper, torch.inference_mode): its code is swapped, so
    # every reference to it, decorated or imported by name, runs the new code
    original = inspect.unwrap(owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name))
    factory = _rewritten(original, module.__dict__, mode, armed)
    original.__code__ = factory(owner if isinstance(owner, type) else None).__code__


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, module, qual, mode, armed):
        self.module, self.qual, self.mode, self.armed = module, qual, mode, armed

    def find_spec(self, name, path, target=None):
        if name != self.module:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _install(module, self.qual, self.mode, self.armed)

        spec.loader.exec_module = exec_module
        return spec


def _trace(directory):
    import json
    import threading
    import time

    seen = set()
    steps = set(os.environ.get("WB_TRACE_STEPS", "").split(","))

    def write(record):
        with open(os.path.join(directory, f"{os.getpid()}.jsonl"), "a") as out:
            out.write(json.dumps(record) + "\n")

    def profile(frame, event, arg):
        code = frame.f_code
        if code.co_name in steps and event in ("call", "return") and "/vllm/" in code.co_filename:
            write({"t": time.time(), "pid": os.getpid(), "step": code.co_name, "event": event})
        if event != "call" or code in seen:
            return
        seen.add(code)
        if "/vllm/" not in code.co_filename:
            return
        names, web, f = [], False, frame
        while f is not None:
            name = f.f_code.co_filename
            if "/vllm/" in name:
                if (f.f_code.co_name in ("collective_rpc", "_execute_worker_rpc")
                        and isinstance(f.f_locals.get("method"), str)):
                    names.append(f.f_locals["method"])
                names.append(f.f_code.co_name)
            elif "/starlette/" in name or "/uvicorn/protocols/" in name:
                web = True
            f = f.f_back
        write({"t": time.time(), "pid": os.getpid(), "module": frame.f_globals.get("__name__"),
               "qualname": code.co_qualname, "file": code.co_filename, "line": code.co_firstlineno,
               "stack": names, "web": web})

    sys.setprofile(profile)
    threading.setprofile(profile)


if os.environ.get("WB_TRACE"):
    _trace(os.environ["WB_TRACE"])
elif _SPEC:
    _module, _qual, _mode, *_rest = _SPEC.split(":")
    sys.meta_path.insert(0, _Finder(_module, _qual, _mode, _rest[0] if _rest else ""))
