"""Each edition zipped to hand out: one folder named for the edition, the whole site in it
with its front page at the top, Sphinx's bookkeeping left out; the teacher's guide names
the zips and fetches the npm packages the Makefile pins."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from book.editions import Edition
from book.handouts import handout_name, write_handout

ROOT = Path(__file__).resolve().parents[2]


def built_site(folder: Path) -> Path:
    for relative in ("index.html", "notebooks/02_x.html", "_static/controls.js", ".buildinfo"):
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<p>{relative}</p>")
    return folder


@pytest.mark.parametrize("which", list(Edition), ids=[e.value for e in Edition])
def test_a_zip_unpacks_to_one_folder_holding_the_whole_edition(
    tmp_path: Path, which: Edition
) -> None:
    site = built_site(tmp_path / which.value)
    handout = write_handout(site, which, tmp_path)
    assert handout == tmp_path / f"{handout_name(which)}.zip"
    with zipfile.ZipFile(handout) as opened:
        names = sorted(opened.namelist())
        front = opened.read(f"{handout_name(which)}/index.html").decode()
    top = handout_name(which)
    assert names == [
        f"{top}/_static/controls.js",
        f"{top}/index.html",
        f"{top}/notebooks/02_x.html",
    ]
    assert front == "<p>index.html</p>"
    assert which.value in top


def test_a_folder_that_holds_no_built_edition_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no built edition"):
        write_handout(tmp_path, Edition.STUDENT, tmp_path)
    assert list(tmp_path.glob("*.zip")) == []


def test_the_teachers_guide_names_the_zips_and_the_makefiles_npm_versions() -> None:
    guide = (ROOT / "docs" / "classroom.md").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for which in Edition:
        assert f"build/book/{handout_name(which)}.zip" in guide
    for package, variable in (
        ("mermaid/-/mermaid", "MERMAID_VERSION"),
        ("@jupyter-widgets/html-manager/-/html-manager", "WIDGETS_HTML_MANAGER_VERSION"),
    ):
        pinned = re.search(rf"^{variable} := (\S+)$", makefile, re.M)
        fetched = re.search(rf"registry\.npmjs\.org/{re.escape(package)}-(\S+)\.tgz", guide)
        assert pinned and fetched and fetched[1] == pinned[1], (variable, fetched)
