"""Reading built pages: every load from another host is found, links a reader follows are
not loads, and a page's text is what a reader sees."""

from __future__ import annotations

from pathlib import Path

from book.pages import RemoteLoad, remote_loads, visible_text

PAGE = """<!doctype html><html><head>
<title>Only in the tab</title>
<link rel="stylesheet" href="_static/theme.css">
<link rel="stylesheet" href="//cdn.example.org/font.css">
<link rel="canonical" href="https://example.org/book/">
<script src="_static/embed.js"></script>
<script src="https://cdn.example.org/require.min.js"></script>
<style>@import "https://fonts.example.org/css?family=Roboto"; p { color: red }</style>
</head><body>
<p>The lesson: <a href="https://example.org/spec">the spec</a></p>
<img src="data:image/png;base64,AAAA" srcset="https://img.example.org/a.png 2x">
<div style="background: url('https://img.example.org/bg.png')">Folded answer</div>
<script>var hidden = "not text a reader sees";</script>
</body></html>"""


def test_every_load_from_another_host_is_found_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01.html").write_text(PAGE)
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "theme.css").write_text(
        "a { background: url(../img/local.svg) } "
        "@font-face { src: url(https://fonts.example.org/x.woff2) }"
    )
    found = remote_loads(tmp_path)
    assert len(found) == len(set(found)) and set(found) == {
        RemoteLoad("notebooks/01.html", "link", "//cdn.example.org/font.css"),
        RemoteLoad("notebooks/01.html", "script", "https://cdn.example.org/require.min.js"),
        RemoteLoad("_static/theme.css", "css", "https://fonts.example.org/x.woff2"),
        RemoteLoad("notebooks/01.html", "style", "https://fonts.example.org/css?family=Roboto"),
        RemoteLoad("notebooks/01.html", "div style", "https://img.example.org/bg.png"),
        RemoteLoad("notebooks/01.html", "img", "https://img.example.org/a.png"),
    }


def test_a_site_that_loads_only_its_own_files_is_clean(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(
        '<link rel="stylesheet" href="_static/a.css"><script src="_static/a.js"></script>'
        '<a href="https://example.org">a link to follow</a>'
    )
    assert remote_loads(tmp_path) == []


def test_a_pages_text_leaves_out_its_head_scripts_and_styles() -> None:
    text = visible_text(PAGE)
    assert "The lesson:" in text and "the spec" in text and "Folded answer" in text
    for unseen in ("Only in the tab", "not text a reader sees", "color: red"):
        assert unseen not in text
