"""The book's editions as hand-outs: one zip file per edition, beside the built folders.

A zip holds one folder, `mrtr-lab-book-<edition>/`, with the edition's site as Sphinx built
it (its `index.html` at the top): a student unzips it anywhere and opens that page, with no
network and nothing installed. Sphinx's own bookkeeping (`.buildinfo`) stays out.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from book.editions import Edition

#: Files of a built site that only Sphinx reads.
SPHINX_BOOKKEEPING = {".buildinfo"}


def handout_name(which: Edition) -> str:
    """The folder an edition's zip unpacks to, and the zip's name without `.zip`."""
    return f"mrtr-lab-book-{which.value}"


def write_handout(site: Path, which: Edition, out_dir: Path) -> Path:
    """Zip one built edition (the folder `site`) into `out_dir`; the zip's path."""
    if not (site / "index.html").is_file():
        raise FileNotFoundError(f"{site} holds no built edition (no index.html)")
    target = out_dir / f"{handout_name(which)}.zip"
    partial = target.with_suffix(".zip.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as handout:
        for path in sorted(site.rglob("*")):
            if path.is_file() and path.name not in SPHINX_BOOKKEEPING:
                relative = path.relative_to(site).as_posix()
                handout.write(path, f"{handout_name(which)}/{relative}")
    partial.replace(target)
    return target
