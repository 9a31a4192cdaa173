"""The import rules of docs/architecture.md, read from the document and checked on the source.

Every import of the project is a design arrow: at module level, inside a function, or under
`if TYPE_CHECKING:`. An arrow the rules do not allow fails, and so does a loop of arrows
between modules. Importing the reference client must not load Starlette or uvicorn.
Modules stay under 400 lines.
"""

from __future__ import annotations

import ast
import graphlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("server", "labsim", "loadtest")
RULES_DOCUMENT = ROOT / "docs" / "architecture.md"
MAX_LINES = 400

#: A room's row: the rooms it may import, or None for a composer that may import anything.
Rules = dict[str, frozenset[str] | None]


def read_rules(document: str) -> Rules:
    """The rooms and what each may import, from the tables under "## Import rules"."""
    section = document.split("## Import rules", 1)[1].split("\n## ", 1)[0]
    rules: Rules = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        rooms = re.findall(r"`([\w.]+)`", cells[0])
        may: frozenset[str] | None
        if cells[1].startswith("anything"):
            may = None
        elif cells[1].startswith("nothing"):
            may = frozenset()
        else:
            may = frozenset(re.findall(r"`([\w.]+)`", cells[1]))
        for room in rooms:
            assert room not in rules, f"room {room} has two rows"
            rules[room] = may
    return rules


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    return {
        module_name(path, root): path
        for package in PROJECT
        for path in sorted((root / package).rglob("*.py"))
    }


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `path` imports anywhere in its text (absolute names).

    `from labsim import scenarios` is an arrow to the module `labsim.scenarios`, not to the
    package's `__init__`; `from labsim import simulate` is an arrow to `labsim`.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names}
            found.update(submodules & modules.keys())
            if submodules - modules.keys():
                found.add(node.module)
    return {name for name in found if name in modules}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = project_modules(root)
    return {name: imports_of(path, modules) - {name} for name, path in modules.items()}


def within(module: str, name: str) -> bool:
    return module == name or module.startswith(name + ".")


def room_of(module: str, rules: Rules) -> str | None:
    """The room a module lives in: the longest room name that prefixes it."""
    rooms = [room for room in rules if within(module, room)]
    return max(rooms, key=len) if rooms else None


def allowed(importer: str, imported: str, rules: Rules) -> bool:
    source, target = room_of(importer, rules), room_of(imported, rules)
    if source is None:
        return False
    may = rules[source]
    if may is None or source == target:
        return True
    # A package's __init__ composes its own modules.
    if within(imported, importer):
        return True
    return any(within(imported, name) for name in may)


def broken_rules(root: Path = ROOT) -> list[str]:
    rules = read_rules((root / "docs" / "architecture.md").read_text())
    return [
        f"{importer} -> {imported}"
        for importer, targets in sorted(import_graph(root).items())
        for imported in sorted(targets)
        if not allowed(importer, imported, rules)
    ]


def import_cycle(root: Path = ROOT) -> list[str] | None:
    """A loop of imports between modules, or None. A package's `__init__` importing its
    own modules is how packages work, not a loop."""
    graph = {
        name: {m for m in targets if not within(m, name)}
        for name, targets in import_graph(root).items()
    }
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(error.args[1])
    return None


def test_every_import_follows_the_rules() -> None:
    assert broken_rules() == []


def test_every_module_lives_in_a_room_of_the_rules() -> None:
    rules = read_rules(RULES_DOCUMENT.read_text())
    homeless = [m for m in project_modules() if room_of(m, rules) is None]
    assert homeless == []


def test_the_rules_name_only_rooms_that_exist() -> None:
    rules = read_rules(RULES_DOCUMENT.read_text())
    modules = project_modules()
    named = set(rules) | {n for may in rules.values() if may for n in may}
    assert sorted(n for n in named if not any(within(m, n) for m in modules)) == []


def test_no_two_modules_import_each_other() -> None:
    assert import_cycle() is None


def _copy_of_the_source(tmp_path: Path) -> Path:
    for package in PROJECT:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (tmp_path / "docs").mkdir()
    shutil.copy(RULES_DOCUMENT, tmp_path / "docs" / "architecture.md")
    return tmp_path


#: Imports that run against the rules, one per package: a module adds it inside a function.
UPWARD_IMPORTS = {
    "server/protocol/jsonrpc.py": ("server.protocol.jsonrpc -> server.app", "server.app"),
    "loadtest/harness/cluster.py": (
        "loadtest.harness.cluster -> loadtest.users.task_flow",
        "loadtest.users.task_flow",
    ),
    "labsim/model/cluster.py": (
        "labsim.model.cluster -> labsim.study.scenarios",
        "labsim.study.scenarios",
    ),
}


@pytest.mark.parametrize("path", sorted(UPWARD_IMPORTS))
def test_a_new_upward_import_is_caught(tmp_path: Path, path: str) -> None:
    root = _copy_of_the_source(tmp_path)
    edge, target = UPWARD_IMPORTS[path]
    with (root / path).open("a") as source:
        source.write(f"\n\ndef _upward() -> None:\n    import {target}  # noqa: F401\n")
    assert edge in broken_rules(root)


def test_a_new_loop_is_caught(tmp_path: Path) -> None:
    root = _copy_of_the_source(tmp_path)
    # Close a loop on a real arrow a -> b of the protocol room: b imports a back.
    modules = project_modules(root)
    a, b = next(
        (a, b)
        for a, targets in sorted(import_graph(root).items())
        for b in sorted(targets)
        if a.startswith("server.protocol.") and b.startswith("server.protocol.")
    )
    with modules[b].open("a") as source:
        source.write(f"\n\nif False:\n    import {a}  # noqa: F401\n")
    assert import_cycle(root) is not None


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
