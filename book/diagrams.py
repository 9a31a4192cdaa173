"""Mermaid diagrams drawn once, at build time, as SVG written into the page.

The notebooks draw their sequence diagrams in ```mermaid blocks, which JupyterLab renders
in the reader's browser. The book is read without a network, so no page may load mermaid
from a CDN: the build renders every block with the npm `mermaid` package (installed by
`make setup` into the git-ignored .tools folder) in the headless Chromium the browser tests
use, and the page carries the finished drawing.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

#: Where `make setup` unpacks the npm packages the book needs (their built files only).
BOOK_TOOLS_DIR = Path(__file__).resolve().parents[1] / ".tools" / "book"
MERMAID_JS = BOOK_TOOLS_DIR / "mermaid" / "dist" / "mermaid.min.js"
#: A fenced mermaid block in Markdown: its opening fence, its text and its closing fence.
MERMAID_BLOCK = re.compile(r"^```mermaid[ \t]*\n(?P<text>.*?)^```[ \t]*$", re.M | re.S)
#: Headless and with every host name unresolvable: rendering must not need a network.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
#: A bound on drawing one diagram.
RENDER_TIMEOUT_S = 30
#: Labels as SVG text rather than HTML inside foreignObject, so the drawing needs no HTML
#: layout of its own and reads the same wherever it is placed.
MERMAID_CONFIG = {
    "startOnLoad": False,
    "securityLevel": "strict",
    "htmlLabels": False,
    "flowchart": {"htmlLabels": False},
    "sequence": {"useMaxWidth": True},
}


class DiagramError(RuntimeError):
    """A diagram could not be drawn: mermaid is missing or refused the text."""


def has_diagram(markdown: str) -> bool:
    """Whether a Markdown text holds a mermaid block."""
    return MERMAID_BLOCK.search(markdown) is not None


def _executable(env: str, names: tuple[str, ...]) -> str:
    chosen = os.environ.get(env)
    for candidate in [chosen] if chosen else [shutil.which(name) for name in names]:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise DiagramError(
        f"{'/'.join(names)} is missing (or ${env} is wrong): `make setup` as root installs "
        "Chromium and its chromedriver to draw the diagrams"
    )


class MermaidRenderer:
    """One headless Chromium page with mermaid loaded, drawing one diagram after another."""

    def __init__(self, driver: WebDriver) -> None:
        self._driver = driver
        self._count = 0

    def svg(self, text: str) -> str:
        """The SVG drawing of one mermaid diagram's text."""
        self._count += 1
        result = self._driver.execute_async_script(
            """
            const [id, text, done] = arguments;
            mermaid.render(id, text).then(
                (drawn) => done({svg: drawn.svg}),
                (error) => done({error: String(error && error.message || error)}),
            );
            """,
            f"mermaid-diagram-{self._count}",
            text,
        )
        if "error" in result:
            raise DiagramError(f"mermaid refused the diagram: {result['error']}\n{text}")
        return str(result["svg"])

    def markdown(self, markdown: str) -> str:
        """The Markdown text with each mermaid block replaced by its drawing (raw HTML)."""

        def drawn(block: re.Match[str]) -> str:
            svg = self.svg(block["text"])
            return f'```{{raw}} html\n<figure class="mermaid-diagram">{svg}</figure>\n```'

        return MERMAID_BLOCK.sub(drawn, markdown)


@contextmanager
def mermaid_renderer() -> Iterator[MermaidRenderer]:
    """A renderer in a fresh headless Chromium, quit on leaving whatever happened."""
    if not MERMAID_JS.is_file():
        raise DiagramError(f"{MERMAID_JS} is missing: `make setup` installs it with npm")
    options = Options()
    options.binary_location = _executable("MRTR_CHROMIUM", ("chromium", "chromium-browser"))
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    with tempfile.TemporaryDirectory(prefix="book-diagrams-") as scratch:
        options.add_argument(f"--user-data-dir={Path(scratch) / 'profile'}")
        page = Path(scratch) / "mermaid.html"
        page.write_text(
            f'<!doctype html><meta charset="utf-8"><body><script src="{MERMAID_JS.as_uri()}">'
            "</script></body>"
        )
        service = Service(_executable("MRTR_CHROMEDRIVER", ("chromedriver",)))
        driver = webdriver.Chrome(options=options, service=service)
        try:
            driver.set_script_timeout(RENDER_TIMEOUT_S)
            driver.get(page.as_uri())
            if not driver.execute_script("return typeof mermaid !== 'undefined'"):
                raise DiagramError(f"Chromium could not load {MERMAID_JS}")
            driver.execute_script("mermaid.initialize(arguments[0])", MERMAID_CONFIG)
            yield MermaidRenderer(driver)
        finally:
            driver.quit()
