"""Reading the built book's pages: what a reader sees as text, and what a page would fetch
from elsewhere.

The book is read without a network, so a page may load nothing from another host: no
script, style sheet, font, image or frame with an `http:`, `https:` or `//` address. Links a
reader may follow (`<a href>`) are not loads and stay allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

#: The attributes through which a page loads something, per element.
LOADING_ATTRIBUTES = {
    "script": ("src",),
    "link": ("href",),
    "img": ("src", "srcset"),
    "iframe": ("src",),
    "source": ("src", "srcset"),
    "video": ("src", "poster"),
    "audio": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "use": ("href", "xlink:href"),
    "image": ("href", "xlink:href"),
}
#: Links that are not loads (a feed, a page's other language, a canonical address).
NOT_LOADED_RELS = {"alternate", "canonical", "author", "license", "help", "next", "prev"}
REMOTE = re.compile(r"^\s*(https?:)?//", re.I)
#: A CSS load: `url(...)` or `@import "..."`.
CSS_LOAD = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""", re.I)
#: Elements whose text a reader does not see.
UNSEEN = {"script", "style", "template", "head", "title"}


@dataclass(frozen=True)
class RemoteLoad:
    """A page's reference to something on another host that it would fetch."""

    page: str
    element: str
    address: str


class _PageReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.loads: list[tuple[str, str]] = []
        self.text: list[str] = []
        self._unseen = 0
        self._style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "link" and set(values.get("rel", "").lower().split()) <= NOT_LOADED_RELS:
            pass
        else:
            for attribute in LOADING_ATTRIBUTES.get(tag, ()):
                if attribute in values:
                    self.loads += [(tag, address) for address in values[attribute].split(",")]
        if "style" in values:
            self.loads += [(f"{tag} style", address) for address in css_loads(values["style"])]
        if tag in UNSEEN:
            self._unseen += 1
        self._style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag in UNSEEN and self._unseen:
            self._unseen -= 1
        self._style = False

    def handle_data(self, data: str) -> None:
        if self._style:
            self.loads += [("style", address) for address in css_loads(data)]
        if not self._unseen:
            self.text.append(data)


def css_loads(css: str) -> list[str]:
    """The addresses a style sheet loads."""
    return [url or imported for url, imported in CSS_LOAD.findall(css)]


def remote_loads(site: Path) -> list[RemoteLoad]:
    """Every load of a page or style sheet of the built site that would reach another host."""
    found = []
    for path in sorted(site.rglob("*.html")):
        reader = _PageReader()
        reader.feed(path.read_text(encoding="utf-8", errors="replace"))
        found += [
            RemoteLoad(str(path.relative_to(site)), element, address.strip().split(" ")[0])
            for element, address in reader.loads
            if REMOTE.match(address)
        ]
    for path in sorted(site.rglob("*.css")):
        found += [
            RemoteLoad(str(path.relative_to(site)), "css", address)
            for address in css_loads(path.read_text(encoding="utf-8", errors="replace"))
            if REMOTE.match(address)
        ]
    return found


def visible_text(html: str) -> str:
    """A page's text as a reader could see it (folded parts included), without scripts,
    styles or the head."""
    reader = _PageReader()
    reader.feed(html)
    return " ".join(reader.text)
