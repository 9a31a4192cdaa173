"""nbgrader's runner of a submission, its kernel channels polled as the lessons' runner
polls them (`lessons.execution`): a cell's reply that one long poll misses is read within
a second, not when the cell's timeout runs out.

Without it, grading notebook 03 beside another notebook's run waited the whole cell
timeout on its exercise's cell, the kernel idle and the reply unread (one grading in
three, side by side with a light install's Run All).
"""

from __future__ import annotations

from typing import Any

from nbgrader.preprocessors import Execute

from lessons.execution import poll_in_slices


class SlicedPollExecute(Execute):
    """nbgrader's `Execute`, its kernel client's channels polled in slices."""

    async def async_start_new_kernel_client(self) -> Any:
        return poll_in_slices(await super().async_start_new_kernel_client())
