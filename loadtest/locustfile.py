"""Locust users for the three architectures, each running whole tool calls back to back.

    locust -f loadtest/locustfile.py --host http://127.0.0.1:PORT MrtrUser

Every call fires a `FLOW` event (its end-to-end latency without think time, its rounds
as the response length, an exception unless it completed) and appends one JSON line to
the file named by `LOADTEST_CALLS_FILE`, which `python -m loadtest scenario` summarises.
Settings come from `LOADTEST_CONFIG` (JSON of `LoadTestConfig` fields). The same file runs
in Locust's distributed mode (`--master` / `--worker`): each worker appends to the log.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

import gevent
from locust import FastHttpUser, constant, events, task

from loadtest.config import LoadTestConfig
from loadtest.flows import CallRecord, HttpReply, ThinkTime, run_mrtr_flow, tool_arguments

CONFIG = LoadTestConfig(**json.loads(os.environ.get("LOADTEST_CONFIG", "{}")))
CALLS_FILE = os.environ.get("LOADTEST_CALLS_FILE")
STARTED_FILE = os.environ.get("LOADTEST_STARTED_FILE")


@events.test_start.add_listener
def announce_start(**kwargs: Any) -> None:
    """Tell the scenario runner when users start, so faults are timed from the real start."""
    if STARTED_FILE:
        with open(STARTED_FILE, "w") as marker:
            marker.write(repr(time.time()))


class FlowUser(FastHttpUser):
    """A user who calls demo tools one after another and answers every question."""

    abstract = True
    wait_time = constant(0)
    arch = "mrtr"

    def on_start(self) -> None:
        self.rng = random.Random()
        self.think = ThinkTime(CONFIG.think_time_median_s, CONFIG.think_time_sigma, self.rng)
        self.path = "/mcp"

    def pick_tool(self) -> str:
        if CONFIG.scenario == "overload":
            return "crunch"
        tools, weights = zip(*CONFIG.tool_mix.items(), strict=True)
        return self.rng.choices(tools, weights)[0]

    def post(self, headers: dict[str, str], body: dict[str, Any]) -> HttpReply:
        """One POST on Locust's fast client; JSON-RPC errors count as Locust failures."""
        name = f"{body['method']} {body['params'].get('name', '')}".strip()
        with self.client.post(
            self.path, data=json.dumps(body), headers=headers, name=name, catch_response=True
        ) as response:
            try:
                parsed = response.json() if response.text else None
            except ValueError:
                parsed = None
            if parsed is not None and "error" in parsed:
                response.failure(f"JSON-RPC {parsed['error'].get('code')}")
            elif response.status_code >= 400 or response.status_code == 0:
                response.failure(f"HTTP {response.status_code}")
            served_by = response.headers.get("x-served-by") if response.headers else None
            return HttpReply(response.status_code or 0, served_by, parsed)

    def report(self, record: CallRecord) -> None:
        events.request.fire(
            request_type="FLOW",
            name=record.tool,
            response_time=record.latency_ms,
            response_length=record.rounds,
            exception=None if record.outcome == "completed" else RuntimeError(record.outcome),
            context={"arch": record.arch},
        )
        if CALLS_FILE:
            with open(CALLS_FILE, "a") as log:
                log.write(record.to_json() + "\n")


class MrtrUser(FlowUser):
    """MRTR (2026-07-28): every round a fresh request; a cut round is simply sent again."""

    arch = "mrtr"

    @task
    def call_a_tool(self) -> None:
        tool = self.pick_tool()
        record = run_mrtr_flow(
            self.post,
            tool,
            tool_arguments(tool, self.rng, CONFIG.crunch_units),
            think=self.think,
            rng=self.rng,
            max_retries=CONFIG.max_retries,
            sleep=gevent.sleep,
        )
        self.report(record)
