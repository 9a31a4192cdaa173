"""The lessons' runner: notebooks executed headless, top to bottom in a fresh kernel, for
`make report`, the book and the tests.

nbclient waits for a cell's reply with one poll of the kernel's shell channel, as long as
the cell's timeout. After a cell with widgets that poll now and then misses the reply's
arrival and returns only when the timeout runs out, the reply waiting all along; the run
then carries on, that much late (about one run in three of notebook 05 with ipykernel
7.4, nbclient 0.11 and pyzmq 27: two minutes under the tests' bound on a cell, twenty under
the report's). `SlicedPollClient` polls again every `POLL_SLICE_S` instead, so such a
reply is read within a second; a cell's timeout still holds as a whole.

    python -m lessons.execution --out build notebooks/[0-9][0-9]_*.ipynb

executes each notebook and writes it as HTML into `--out` (what `make report` runs).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from queue import Empty
from typing import Any

import nbformat
from jupyter_client import KernelClient
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

#: How long the client waits on a kernel channel before it looks again.
POLL_SLICE_S = 1.0
#: The report's bound on one cell: the full-size runs take minutes, never this long.
REPORT_CELL_TIMEOUT_S = 1200

GetMsg = Callable[..., Awaitable[dict[str, Any]]]


class SlicedPollClient(NotebookClient):
    """nbclient, its kernel channels polled in slices of `POLL_SLICE_S`."""

    async def async_start_new_kernel_client(self) -> KernelClient:
        client = await super().async_start_new_kernel_client()
        for channel in (client.shell_channel, client.iopub_channel):
            channel.get_msg = _in_slices(channel.get_msg)
        return client


def _in_slices(get_msg: GetMsg) -> GetMsg:
    """`get_msg(timeout)` as polls of at most `POLL_SLICE_S`, until the timeout (if any)."""

    async def get_msg_in_slices(timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SLICE_S if deadline is None else deadline - time.monotonic()
            try:
                return await get_msg(timeout=max(0.0, min(POLL_SLICE_S, left)))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    return get_msg_in_slices


def report(notebooks: list[Path], out_dir: Path, cell_timeout_s: int) -> int:
    """Execute each notebook in its own folder and write it as HTML into `out_dir`.

    Returns how many failed; a failed notebook's HTML is not written.
    """
    from nbconvert import HTMLExporter

    out_dir.mkdir(parents=True, exist_ok=True)
    failed = 0
    for path in notebooks:
        started = time.monotonic()
        print(f"{path.name}: running ...", flush=True)
        notebook = nbformat.read(path, as_version=4)
        client = SlicedPollClient(
            notebook, timeout=cell_timeout_s, resources={"metadata": {"path": str(path.parent)}}
        )
        try:
            client.execute()
        except CellExecutionError as error:
            failed += 1
            print(f"{path.name}: a cell failed\n{error}", file=sys.stderr, flush=True)
            continue
        html, _ = HTMLExporter().from_notebook_node(notebook)
        target = out_dir / f"{path.stem}.html"
        target.write_text(html, encoding="utf-8")
        print(f"{path.name}: {time.monotonic() - started:.0f} s, written to {target}", flush=True)
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lessons.execution",
        description="Execute notebooks top to bottom and write each as HTML.",
    )
    parser.add_argument("notebooks", nargs="+", type=Path, help=".ipynb files")
    parser.add_argument("--out", type=Path, default=Path("build"), help="folder for the HTML")
    parser.add_argument(
        "--cell-timeout-s",
        type=int,
        default=REPORT_CELL_TIMEOUT_S,
        help=f"bound on one cell, seconds (default {REPORT_CELL_TIMEOUT_S})",
    )
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.notebooks if p.suffix != ".ipynb" or not p.is_file()]
    if missing:
        parser.error(f"not a notebook file: {', '.join(missing)}")
    if args.cell_timeout_s <= 0:
        parser.error("--cell-timeout-s must be positive")
    failed = report(args.notebooks, args.out, args.cell_timeout_s)
    if failed:
        print(f"{failed} of {len(args.notebooks)} notebooks failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
