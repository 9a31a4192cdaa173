"""How a command's options are laid out: the run's settings apart from the command's own.

A command that runs the lab's cluster takes some of its settings from the command line:
those flags are generated from the fields of `LoadTestConfig` (`server.flags`), each with
the field's help and default, in the group `RUN_SETTINGS`. Everything else a command takes
(where its report goes, how many Locust workers it starts, how long the bench times a
round) sets no field of the configuration and is declared by the command itself, in the
group `COMMAND_OPTIONS`, with its help and its default shown.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

#: The group of flags that each set one field of the run's configuration.
RUN_SETTINGS = "settings of the run"
#: The group of a command's own options, which set no field of the configuration.
COMMAND_OPTIONS = "options of this command"


def run_settings(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The group a command's flags from `LoadTestConfig` go in."""
    return parser.add_argument_group(
        RUN_SETTINGS, "each sets one field of a run's configuration (loadtest/config.py)"
    )


def command_options(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The group a command's own options go in."""
    return parser.add_argument_group(COMMAND_OPTIONS)


def add_json_option(options: argparse._ArgumentGroup, help: str) -> None:
    """`--json`: where the command writes its JSON document (nowhere by default)."""
    options.add_argument("--json", default=None, help=help)


def write_json(document: Any, path: str | None) -> None:
    """Write a command's JSON document where `--json` said, if it said."""
    if path:
        Path(path).write_text(json.dumps(document, indent=2))
        print(f"wrote {path}", file=sys.stderr)
