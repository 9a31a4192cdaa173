"""docs/your-server.md shows the server its commands ran against in full: the file the
tests start, not a copy that may drift from it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "your-server.md"
SERVER = ROOT / "tests" / "loadtest" / "sdk_server.py"


def shown_server(page: str) -> str:
    """The Python block under the page's section on the server."""
    section = page.split("## The server these commands ran against", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the section shows no Python block"
    return found.group(1)


def test_the_page_shows_the_server_the_tests_start_in_full() -> None:
    assert shown_server(PAGE.read_text()) == SERVER.read_text()


def test_a_server_shown_with_a_line_changed_is_caught() -> None:
    page = PAGE.read_text().replace("HIGH_AMOUNT = 1000", "HIGH_AMOUNT = 10")
    assert shown_server(page) != SERVER.read_text()
