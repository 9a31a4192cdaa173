"""The tools a swarm on a target calls: the target's own, discovered once before anything
starts, with their weights, the eras its users speak, their tokens and the workload file.

`plan_target_mix` discovers the target (`loadtest.target.discover`) and refuses in one line
what cannot run: a URL that is not an MCP server, an era it does not speak, a tool in
`--tools` it does not list (naming those it does), a workload file that does not fit a
tool's schema (naming the tool and the field). With no `--tools`, every tool it lists is
called, equally. The mix travels to the swarm's workers as JSON in `TARGET_ENV`, so each
worker's users call the same tools without discovering the target again.

A `TargetCaller` is one simulated user's side of it: the era it speaks, each tool's
arguments (drawn from its `inputSchema`, or the workload file's) and the answers it gives
(`loadtest.target.answers_for`: every form valid under its own schema).
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loadtest.target import (
    Auth,
    Target,
    TargetAnswers,
    TargetError,
    TargetTool,
    ToolArguments,
    Workload,
    answers_for,
    check_workload,
    discover,
    read_workload,
)
from loadtest.target.schema_data import pool_for
from loadtest.users.flows import CallRecord, run_mrtr_flow
from loadtest.users.http_interface import LegacyHttp, Post
from loadtest.users.legacy_flow import SessionHolder, run_legacy_flow
from server.protocol.versions import LEGACY_VERSION, MODERN_VERSION

#: The environment variable the mix travels in, from the command line to the workers.
TARGET_ENV = "LOADTEST_TARGET"
#: The lab's name of each era in a call's record (`CallRecord.arch`).
ERA_ARCH = {MODERN_VERSION: "mrtr", LEGACY_VERSION: "legacy"}


@dataclass(frozen=True)
class TargetMix:
    """A target's tools as a swarm calls them: weights, schemas, eras, tokens, workload."""

    url: str
    weights: dict[str, float]
    tools: dict[str, TargetTool]
    eras: tuple[str, ...]
    tokens: tuple[str | None, ...] = (None,)
    workload_path: str | None = None
    server_name: str = ""

    def to_json(self) -> str:
        """The mix as the workers read it from `TARGET_ENV`."""
        return json.dumps(
            {
                "url": self.url,
                "weights": self.weights,
                "tools": {
                    name: {"description": tool.description, "input_schema": tool.input_schema}
                    for name, tool in self.tools.items()
                },
                "eras": list(self.eras),
                "tokens": list(self.tokens),
                "workload_path": self.workload_path,
                "server_name": self.server_name,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> TargetMix:
        """The mix `to_json` wrote."""
        document = json.loads(text)
        return cls(
            url=document["url"],
            weights={k: float(v) for k, v in document["weights"].items()},
            tools={
                name: TargetTool(name, spec["description"], spec["input_schema"])
                for name, spec in document["tools"].items()
            },
            eras=tuple(document["eras"]),
            tokens=tuple(document["tokens"]) or (None,),
            workload_path=document.get("workload_path"),
            server_name=document.get("server_name", ""),
        )

    def export(self) -> None:
        """Put the mix where this process's users and its workers (which inherit the
        environment) read it."""
        os.environ[TARGET_ENV] = self.to_json()

    def warm_up(self) -> None:
        """Draw each tool's arguments once, so that the draws' pools (and the generator
        behind them, seconds to load) are ready before the users start, not in their calls."""
        rng = random.Random(0)
        workload = self.workload()
        for name, tool in self.tools.items():
            try:
                ToolArguments(tool, answers_for(name, workload).table, rng).next()
            except TargetError:
                raise
            except Exception as error:  # the generator could not draw from this schema
                raise TargetError(
                    f"{name}'s inputSchema gives no arguments to draw: "
                    f"{type(error).__name__}: {str(error).splitlines()[0]}"
                ) from None
        # A shaped field, as forms ask: loads the generator even when no argument needs it.
        pool_for({"type": "string", "format": "date"})

    def workload(self) -> Workload | None:
        """The workload file's tables (read again in each worker), or None."""
        return read_workload(self.workload_path) if self.workload_path else None


def exported_mix() -> TargetMix | None:
    """The mix this process was given (`TARGET_ENV`), or None for a swarm of the lab's."""
    text = os.environ.get(TARGET_ENV)
    return TargetMix.from_json(text) if text else None


def plan_target_mix(
    url: str,
    weights: Mapping[str, float] | None,
    *,
    era: str = "both",
    token: str | None = None,
    tokens_file: str | None = None,
    workload_path: str | None = None,
    find: Callable[[str, Auth], Target] = discover,
) -> TargetMix:
    """Discover the target at `url` and check the mix against it; a `TargetError` in one
    line for anything that cannot run."""
    auth = Auth.from_options([token] if token else None, tokens_file)
    target = find(url, auth)
    eras = target.eras_for(era)
    if not target.tools:
        raise TargetError(f"{url} lists no tool to call")
    chosen = dict(weights) if weights else dict.fromkeys(sorted(target.tools), 1.0)
    unknown = [name for name in chosen if name not in target.tools]
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise TargetError(
            f"--tools names {names}, which {url} does not list; it lists: "
            f"{', '.join(sorted(target.tools))}"
        )
    values = list(chosen.values())
    if not all(math.isfinite(w) and w >= 0 for w in values) or sum(values) <= 0:
        raise TargetError("--tools needs finite weights, none negative, at least one above 0")
    if workload_path:
        check_workload(read_workload(workload_path), target)
    return TargetMix(
        url=url,
        weights=chosen,
        tools={name: target.tools[name] for name in chosen},
        eras=eras,
        tokens=auth.tokens,
        workload_path=workload_path,
        server_name=target.server_name,
    )


@dataclass
class TargetCaller:
    """One simulated user of a target: its era, and each tool's arguments and answers."""

    mix: TargetMix
    era: str
    rng: random.Random
    workload: Workload | None = None
    arguments: dict[str, ToolArguments] = field(default_factory=dict)
    answers: dict[str, TargetAnswers] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, tool in self.mix.tools.items():
            answerer = answers_for(name, self.workload)
            self.arguments[name] = ToolArguments(tool, answerer.table, self.rng)
            self.answers[name] = answerer

    @property
    def arch(self) -> str:
        """The lab's name of the user's era in its calls' records."""
        return ERA_ARCH[self.era]

    def pick_tool(self) -> str:
        """The next call's tool, by the mix's weights."""
        names, weights = zip(*self.mix.weights.items(), strict=True)
        return self.rng.choices(names, weights)[0]

    def call(
        self, post: Post, http: LegacyHttp, holder: SessionHolder, tool: str, **options: Any
    ) -> CallRecord:
        """One whole call of `tool` in the user's era: MRTR rounds retried with the answers
        (`inputResponses`, `requestState`), or a 2025-11-25 call held on its SSE stream with
        each answer POSTed on the user's session (and the balancer's cookie, kept by the
        user's one client)."""
        arguments = self.arguments[tool].next()
        answer = self.answers[tool]
        if self.era == MODERN_VERSION:
            return run_mrtr_flow(post, tool, arguments, answer=answer, **options)
        return run_legacy_flow(
            http, holder, tool, arguments, arch="legacy", answer=answer, **options
        )


def era_of_user(mix: TargetMix, index: int) -> str:
    """The era user `index` speaks: the users split evenly between the mix's eras."""
    return mix.eras[index % len(mix.eras)]
