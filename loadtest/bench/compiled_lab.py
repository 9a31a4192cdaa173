"""The lab's server with its request path compiled to C by mypyc: a server of the bench.

Does the interpreter's work explain why the lab serves state-carrying rounds at 0.55-0.65x
a bare endpoint? mypyc compiles type-annotated modules to C extensions with the same
behaviour; the lab's hot modules are fully annotated and pass mypy, so they compile as
they are. `lab-mypyc` is the same server built that way into a temporary folder (a copy
of the `server` package with the extensions beside its sources) and served like `lab`, so
the bench can set the two side by side. `server/app.py` stays interpreted: mypyc cannot
compile its async generators.

It needs mypyc (part of mypy, a dev dependency), a C compiler and Python's headers; the
bench skips it, saying so, where one is missing. Building takes about a minute.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

#: The request path's modules compiled to C: every one a sealing request runs through.
COMPILED_MODULES = (
    "server/protocol/jsonrpc.py",
    "server/protocol/headers.py",
    "server/protocol/inputs.py",
    "server/mrtr/runner.py",
    "server/mrtr/state.py",
    "server/core/dispatch.py",
    "server/core/context.py",
    "server/core/methods.py",
    "server/core/call.py",
    "server/core/metrics.py",
    "server/core/catalog.py",
    "server/tasks/attempt.py",
    "server/transport/guard.py",
    "server/transport/streamable.py",
    "server/tools/demo.py",
    "server/legacy/dialect.py",
)
SOURCE = Path(__file__).resolve().parents[2] / "server"
BUILD_TIMEOUT_S = 900


def missing() -> str | None:
    """Why the compiled lab cannot be built on this machine, or None."""
    if importlib.util.find_spec("mypyc") is None:
        return "mypyc is not installed (it comes with mypy: make setup)"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler}) to build the lab with mypyc"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "Python's C headers (Python.h) are missing"
    return None


def build(dest: Path, modules: tuple[str, ...] = COMPILED_MODULES) -> Path:
    """Copy the `server` package into `dest` and compile `modules` there; returns `dest`.

    With `dest` first on PYTHONPATH, `import server` finds the extensions before the
    sources beside them. Raises RuntimeError with mypyc's last lines if the build fails.
    """
    shutil.copytree(SOURCE, dest / "server", ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "mypyc", *modules],
        cwd=dest,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"mypyc could not build the lab:\n{tail}")
    return dest


@functools.cache
def compiled_server_path() -> Path:
    """A folder holding the compiled lab, built once per process and removed at its exit."""
    dest = Path(tempfile.mkdtemp(prefix="mrtr-lab-mypyc-"))
    atexit.register(shutil.rmtree, dest, True)
    print("building the lab's request path with mypyc (about a minute) ...", file=sys.stderr)
    return build(dest)


def environment_for(built: Path) -> dict[str, str]:
    """The environment that makes Python import the `server` built in `built`."""
    # PYTHONSAFEPATH: `-m` would otherwise put the working directory (the sources) first.
    return {"PYTHONPATH": str(built), "PYTHONSAFEPATH": "1"}


def environment() -> dict[str, str]:
    """The environment that makes `python -m server` import the compiled lab."""
    return environment_for(compiled_server_path())
