"""The import rules of docs/architecture.md, checked on the source.

Every module-level import of the project (imports under `if TYPE_CHECKING:` do not run
and are left out) is an edge between packages; an edge the rules do not allow fails, and
so does a cycle between modules. Importing the reference client must not load Starlette
or uvicorn. Modules stay under 400 lines.
"""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("server", "labsim", "loadtest")
MAX_LINES = 400

#: What each part of the server may import from the project, besides itself.
SERVER_RULES: dict[str, set[str]] = {
    "server.protocol": set(),
    "server.config": set(),
    "server.client": {"server.protocol"},
    "server.harness": {"server.protocol"},
    "server.core": {"server.protocol"},
    "server.transport": {"server.protocol"},
    "server.mrtr": {"server.protocol", "server.core", "server.config"},
    "server.tasks": {"server.protocol", "server.core"},
    "server.legacy": {"server.protocol", "server.core", "server.config", "server.transport"},
    "server.tools": {"server.protocol", "server.core"},
}
#: The modules that compose the parts: they may import any of them.
COMPOSERS = {"server.app", "server.__main__"}
#: What the load test may use of the server: the clients, the protocol, the process
#: harness, and the tools its users call (their names and what a right answer is).
LOADTEST_MAY_IMPORT = {"server.client", "server.protocol", "server.harness", "server.tools"}
#: The benchmarks measure the server itself: in process, or (the floor) its sealing alone.
LOADTEST_BENCHMARKS = {"loadtest.microbench", "loadtest.peers.floor"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in PROJECT
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _runs_at_import(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether an import statement runs when its module is imported."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return False
    return True


def imports_of(path: Path, *, at_import_only: bool) -> set[str]:
    """The project modules `path` imports (absolute names)."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if at_import_only and not _runs_at_import(node, parents):
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from server.protocol import jsonrpc` imports a module, not a name.
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    modules = project_modules()
    return {name for name in found if name in modules}


def part_of(module: str) -> str:
    """The part a server module belongs to: `server.core`, `server.app`..."""
    return ".".join(module.split(".")[:2])


def allowed(importer: str, imported: str) -> bool:
    if importer.startswith("labsim"):
        return not imported.startswith(("server", "loadtest"))
    if importer.startswith("loadtest"):
        if not imported.startswith("server"):
            return True
        if importer in LOADTEST_BENCHMARKS:
            return True
        return any(imported == m or imported.startswith(m + ".") for m in LOADTEST_MAY_IMPORT)
    source, target = part_of(importer), part_of(imported)
    if source == target or source in COMPOSERS or imported == "server":
        return True
    return target in SERVER_RULES.get(source, set())


def test_every_import_follows_the_rules() -> None:
    broken = [
        f"{importer} -> {imported}"
        for importer, path in project_modules().items()
        for imported in sorted(imports_of(path, at_import_only=False))
        if not allowed(importer, imported)
    ]
    assert broken == []


def test_the_rules_name_every_part_of_the_server() -> None:
    parts = {part_of(m) for m in project_modules() if m.startswith("server.")}
    assert parts <= set(SERVER_RULES) | COMPOSERS


def test_no_import_cycle_between_modules() -> None:
    graph = {
        name: imports_of(path, at_import_only=True) - {name}
        for name, path in project_modules().items()
    }
    # A package's __init__ importing its own modules is how packages work, not a cycle.
    for name in graph:
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError on a cycle


def test_a_rule_breach_is_caught() -> None:
    assert not allowed("server.client.mrtr", "server.transport.streamable")
    assert not allowed("server.tasks.methods", "server.mrtr.runner")
    assert not allowed("labsim.params", "server.config")
    assert not allowed("loadtest.flows", "server.core.context")
    assert allowed("server.app", "server.legacy.era")


@pytest.mark.parametrize("package", PROJECT)
def test_no_module_is_over_the_line_limit(package: str) -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / package).rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_importing_the_client_loads_no_web_framework() -> None:
    code = (
        "import sys, server.client\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn'))\n"
        "print(','.join(loaded))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == ""
