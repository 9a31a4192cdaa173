"""What a long command says on stderr while it works.

`validate`, `compare` and `plan` run the simulation for seconds to minutes. Each says at
once what it is about to do and how many runs that takes, then shows a bar of the runs
done against their total (tqdm's), whether stderr is a terminal or a log file. Both go to
stderr, so the tables on stdout read the same with or without them.
"""

from __future__ import annotations

import sys


def announce(command: str, doing: str) -> None:
    """Say on stderr, at once, what `labsim COMMAND` is about to do."""
    print(f"labsim {command}: {doing}", file=sys.stderr, flush=True)
