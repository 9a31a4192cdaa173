"""Diagrams drawn at build time: a mermaid block becomes an SVG drawing in the page, a block
mermaid refuses fails the build, and Markdown without one is left alone."""

from __future__ import annotations

import re

import pytest

from book.diagrams import MERMAID_JS, DiagramError, has_diagram, mermaid_renderer
from tests.browser.conftest import system_chromium

SEQUENCE = """Before.

```mermaid
sequenceDiagram
    participant C as Client
    participant R as Replica
    C->>R: tools/call
    R-->>C: input_required
```

After.
"""


@pytest.fixture(scope="module")
def ready() -> None:
    system_chromium()
    if not MERMAID_JS.is_file():
        pytest.skip(f"{MERMAID_JS} is missing: `make setup` installs it")


@pytest.mark.browser
def test_a_mermaid_block_becomes_its_drawing(ready: None) -> None:
    assert has_diagram(SEQUENCE)
    with mermaid_renderer() as renderer:
        drawn = renderer.markdown(SEQUENCE)
    assert not has_diagram(drawn)
    assert drawn.startswith('Before.\n\n```{raw} html\n<figure class="mermaid-diagram"><svg')
    assert drawn.endswith("</svg></figure>\n```\n\nAfter.\n")
    svg = re.search(r"<svg.*</svg>", drawn, re.S)
    assert svg is not None
    for label in ("Client", "Replica", "tools/call", "input_required"):
        assert f">{label}<" in svg[0]
    # Drawn here: the page loads no script to draw it.
    assert "<script" not in svg[0]


@pytest.mark.browser
def test_a_diagram_mermaid_refuses_fails_the_build(ready: None) -> None:
    with mermaid_renderer() as renderer, pytest.raises(DiagramError, match="refused"):
        renderer.svg("sequenceDiagram\n    this is not a message\n")


def test_markdown_without_a_diagram_is_left_alone() -> None:
    assert not has_diagram("```python\nprint('mermaid')\n```\n")
