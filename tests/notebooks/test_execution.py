"""`make report`'s runner: notebooks executed headless and written as HTML, failures counted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from queue import Empty

import nbformat
import pytest

from lessons import execution


def _notebook(path: Path, *sources: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, path)
    return path


@pytest.mark.notebooks
def test_a_report_writes_each_notebook_that_ran_and_counts_the_one_that_failed(
    tmp_path: Path,
) -> None:
    good = _notebook(tmp_path / "good.ipynb", "print('hello from the kernel')")
    bad = _notebook(tmp_path / "bad.ipynb", "raise ValueError('broken on purpose')")
    out = tmp_path / "html"
    assert execution.report([good, bad], out, cell_timeout_s=120) == 1
    assert "hello from the kernel" in (out / "good.html").read_text()
    assert not (out / "bad.html").exists()


def test_the_command_refuses_what_is_not_a_notebook(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a notebook")
    for argv in ([str(text)], [str(tmp_path / "missing.ipynb")]):
        with pytest.raises(SystemExit) as exited:
            execution.main(["--out", str(tmp_path), *argv])
        assert exited.value.code == 2


def test_a_wait_on_a_channel_looks_again_every_slice_until_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(execution, "POLL_SLICE_S", 0.01)
    asked: list[float] = []
    replies = iter([Empty, Empty, {"msg_type": "execute_reply"}])

    async def get_msg(timeout: float | None = None) -> dict:
        asked.append(timeout if timeout is not None else -1.0)
        reply = next(replies)
        if reply is Empty:
            raise Empty
        return reply

    sliced = execution._in_slices(get_msg)
    # A reply that a long poll would have waited for arrives on the third look.
    assert asyncio.run(sliced(timeout=60)) == {"msg_type": "execute_reply"}
    assert asked == [0.01, 0.01, 0.01]

    async def never(timeout: float | None = None) -> dict:
        raise Empty

    with pytest.raises(Empty):
        asyncio.run(execution._in_slices(never)(timeout=0.05))
