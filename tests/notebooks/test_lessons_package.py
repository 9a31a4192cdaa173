"""The notebooks' package, `lessons`, is installed with the project (the `notebooks` extra
and every extra built on it), so the book, the tests and `make report` import it from any
folder, as a notebook does: nothing puts the notebooks' folder on the path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSONS_DIR = ROOT / "notebooks" / "lessons"
LIGHT_PYTHON = ROOT / ".tools" / "light-venv" / "bin" / "python"
#: Modules of the package that load quickly (the notebooks' runs import every one): enough
#: to show where the package is found.
IMPORTED = "import lessons, lessons.claims, lessons.recordings"


def test_no_folder_on_the_path_holds_the_package() -> None:
    folders = {Path(entry or ".").resolve() for entry in sys.path}
    assert LESSONS_DIR.parent not in folders and LESSONS_DIR not in folders


@pytest.mark.parametrize("python", [Path(sys.executable), LIGHT_PYTHON], ids=["dev", "light"])
@pytest.mark.slow
def test_the_package_imports_from_another_folder_on_each_install(
    python: Path, tmp_path: Path
) -> None:
    if not python.exists():
        pytest.skip(f"{python} is missing: `make setup` makes the light install")
    shown = subprocess.run(
        [str(python), "-c", f"{IMPORTED}\nprint(lessons.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert Path(shown.stdout.strip()) == LESSONS_DIR / "__init__.py"
