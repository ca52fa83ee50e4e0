"""A systemd unit whose ``ExecStart`` is ``podman run ...`` / ``docker run ...``: the server inside.

A common deployment: the unit runs the container in the foreground (``podman run --rm --name X
IMAGE python3 -m sglang.launch_server ...``), so its output is the unit's journal and systemd
stops and restarts it.  What differs from a unit that runs the server directly:

* the server's flags are the words after the image (:func:`parse` splits the ``run`` options from
  them); a variant edits those, never the runtime's options;
* the variant's container gets its own ``--name`` (``NAME-wb-DIGEST``) so it never meets the
  base's, its environment edits become ``-e``/``--unsetenv`` options of the ``run`` (the
  runtime does not pass the unit's environment into the container), and it is removed after
  it stops (``ExecStopPost=-RUNTIME rm -f NAME``: a podman killed hard leaves its container);
* the port on the host is the server's ``--port`` through the ``run``'s ``-p HOST:CONTAINER``
  (on ``--network host``, or with nothing published, the server's port itself);
* GPU holders are the container's processes: where podman moves them into their own cgroup
  (``libpod-ID.scope``), the unit's cgroup does not name them, so they are found through the
  container's main PID (:func:`container_name` gives the container to inspect).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.containers import RUNTIMES, split_run
from workbench.errors import ConfigError

__all__ = ["RunArgv", "container_name", "edit", "host_port", "parse"]


@dataclass(frozen=True)
class RunArgv:
    """``RUNTIME [global options] run [options] IMAGE [command]`` split in its parts."""

    head: list[str]  # the runtime, its global options and the verb
    options: list[str]
    image: str
    command: list[str]  # the server's argv (empty: the image's own CMD)

    @property
    def runtime(self) -> str:
        return self.head[0].rsplit("/", 1)[-1]

    def values(self, *flags: str) -> list[str]:
        """Every value given to one of ``flags`` (``--name X``, ``--name=X``, ``-pX``)."""
        out, opts, j = [], self.options, 0
        while j < len(opts):
            tok = opts[j]
            key, eq, val = tok.partition("=")
            if key in flags and eq:
                out.append(val)
            elif tok in flags and j + 1 < len(opts):
                out.append(opts[j + 1])
                j += 1
            elif any(len(f) == 2 and tok.startswith(f) and len(tok) > 2 for f in flags):
                out.append(tok[2:])
            j += 1
        return out

    @property
    def name(self) -> str | None:
        names = self.values("--name")
        return names[-1] if names else None

    @property
    def host_network(self) -> bool:
        return any(v == "host" for v in self.values("--network", "--net"))

    def published(self) -> dict[int, int]:
        """container port -> host port, from ``-p [IP:]HOST:CONTAINER[/proto]`` (ranges left out)."""
        out: dict[int, int] = {}
        for spec in self.values("-p", "--publish"):
            parts = spec.split("/", 1)[0].rsplit(":", 2)
            if len(parts) >= 2 and parts[-1].isdigit() and parts[-2].isdigit():
                out[int(parts[-1])] = int(parts[-2])
        return out  # `-p 30000` alone: a host port the runtime picks at start (not known from the unit)

    def argv(self) -> list[str]:
        return [*self.head, *self.options, self.image, *self.command]


def parse(argv: Sequence[str]) -> RunArgv | None:
    """The parts of a ``podman|docker run`` command line; None when ``argv`` is not one."""
    if not argv or argv[0].rsplit("/", 1)[-1] not in RUNTIMES:
        return None
    words = list(argv)
    # the verb: `run`, with only global options (and their values) before it
    verb = words.index("run") if "run" in words else None
    if verb is None or (verb > 1 and not words[1].startswith("-")):
        return None
    head, options, rest = split_run(words)
    return RunArgv(head, options, rest[0], rest[1:])


def container_name(argv: Sequence[str]) -> str | None:
    """The ``--name`` of the container a ``run`` command line creates (None: not one, or unnamed)."""
    run = parse(argv)
    return run.name if run is not None else None


def host_port(run: RunArgv, flag_port: int) -> int:
    """The host port that reaches the server listening on ``flag_port`` inside the container."""
    if run.host_network:
        return flag_port
    published = run.published()
    if not published:
        return flag_port  # nothing published: only reachable on the container's network
    if flag_port not in published:
        raise ConfigError(f"{shlex.join(run.head)}: the server listens on {flag_port} in the container, but the run "
                          f"publishes only {sorted(published)}; it cannot be reached from the host")
    return published[flag_port]


def _replace_option(options: list[str], flag: str, value: str) -> list[str]:
    out, j = [], 0
    while j < len(options):
        tok = options[j]
        if tok == flag:
            j += 2
            continue
        if tok.startswith(flag + "="):
            j += 1
            continue
        out.append(tok)
        j += 1
    return [*out, flag, value]


def edit(run: RunArgv, command: list[str], env: Sequence[tuple[str, str | None]], name: str) -> list[str]:
    """The variant's ``run``: the base's options, its own container ``name``, env edits as options,
    the same image, the edited server ``command``."""
    if not run.command:
        raise ConfigError(f"{shlex.join(run.head)} {run.image}: the server's command comes from the image's CMD; "
                          "give it in the unit (after the image) so its flags can be edited")
    options = _replace_option(run.options, "--name", name)
    for key, value in env:
        if value is None:
            if run.runtime != "podman":
                raise ConfigError(f"{run.runtime} cannot unset an environment variable of an image ({key})")
            options += ["--unsetenv", key]
        else:
            options += ["-e", f"{key}={value}"]
    return [*run.head, *options, run.image, *command]


def cleanup_argv(run: RunArgv, name: str) -> list[str]:
    """Remove the variant's container if it is still there (a runtime killed hard leaves it)."""
    return [run.head[0], "rm", "-f", "--", name]
