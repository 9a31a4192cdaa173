"""Each edition zipped to hand out: one folder named for the edition, the whole site in it
with its front page at the top, Sphinx's bookkeeping left out."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from book.editions import Edition
from book.handouts import handout_name, write_handout


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
