"""Replicas of a server written with the official Python SDK, as notebook 06 starts them,
and calls whose rounds a round-robin balancer spreads over them.

The server is the project's example of what a new user of the SDK writes
(`tests/loadtest/sdk_server.py`, shown in full in docs/your-server.md): an `MCPServer` whose
`transfer` of a high amount asks for a code, then, carrying the code in its
`requestState`, for a date. Each replica is a process of its own on a free port of
127.0.0.1, told by its environment how it seals that state: `SDK_STATE_KEY=own` gives it a
key of its own (what the SDK does when it is given none), one secret on every replica the
same key; `SDK_SERVER_NAME` is its name, the audience a state is sealed for.

A round-robin balancer sends each round of a call to the next replica, so a call's rounds
alternate between two: `round_robin_call` sends them so, with the user's answers, and
says round by round which replica answered and how.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from server.client import Exchange, McpError, reply_message
from server.harness.process import free_port

#: The SDK user's server the replicas run.
SDK_SERVER = Path(__file__).resolve().parents[2] / "tests" / "loadtest" / "sdk_server.py"
#: A transfer from this amount asks for a code, then a date (`HIGH_AMOUNT` of the server).
AMOUNT = 5000
#: What the user answers to each field the transfer's forms ask.
ANSWERS = {"code": "246810", "on": "2026-12-07"}
#: The longest a replica may take to listen, and one round to be answered.
START_TIMEOUT_S = 30.0
ROUND_TIMEOUT_S = 10.0


@contextmanager
def sdk_replicas(environments: list[Mapping[str, str]]) -> Iterator[list[str]]:
    """One replica of the SDK server per environment, their MCP URLs while the block runs;
    every replica is stopped when it ends, also after an error."""
    with ExitStack() as stack:
        started = []
        for environment in environments:
            port = free_port()
            process = subprocess.Popen(
                [sys.executable, str(SDK_SERVER), str(port)],
                env={**os.environ, **environment},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            stack.callback(_stop, process)
            started.append((f"http://127.0.0.1:{port}/mcp", process))
        for url, process in started:
            _wait_until_listening(url, process)
        yield [url for url, _ in started]


def round_robin_call(urls: list[str], first: int) -> dict[str, Any]:
    """A transfer of `AMOUNT` whose rounds go to the replicas in turn, the first to
    `urls[first]`, each answering the round before's questions: `completed`, the result's
    text or the error that ended it, and each round as `{round, replica, state sealed by,
    outcome}` (a replica named by its place in `urls`: A, B, ...)."""
    names = {url: chr(ord("A") + k) for k, url in enumerate(urls)}
    exchange = Exchange("tools/call", {"name": "transfer", "arguments": {"amount": AMOUNT}}, {})
    rounds: list[dict[str, Any]] = []
    sealed_by: str | None = None
    for number in range(len(urls) + 2):
        url = urls[(first + number) % len(urls)]
        headers, body = exchange.next_request()
        started = time.perf_counter()
        response = httpx.post(url, json=body, headers=headers, timeout=ROUND_TIMEOUT_S)
        message = reply_message(response.headers.get("content-type", ""), response.content)
        row = {"round": number + 1, "replica": names[url], "state sealed by": sealed_by or "-"}
        rounds.append(row)
        try:
            done = exchange.record(
                body, response.status_code, message, time.perf_counter() - started
            )
        except McpError as error:
            row["outcome"] = f"refused: {error.code} {error.message}"
            return {"completed": False, "said": row["outcome"], "rounds": rounds}
        if done:
            row["outcome"] = "completed"
            return {"completed": True, "said": exchange.text, "rounds": rounds}
        row["outcome"] = "asks " + ", ".join(sorted(_fields(exchange.input_requests)))
        sealed_by = names[url] if exchange.request_state else None
        exchange.answer(
            {
                key: {"action": "accept", "content": {f: ANSWERS[f] for f in _fields({key: q})}}
                for key, q in exchange.input_requests.items()
            }
        )
    return {"completed": False, "said": "no result after every round", "rounds": rounds}


def _fields(input_requests: Mapping[str, Any]) -> list[str]:
    """The fields the forms of `input_requests` ask for."""
    return [
        field
        for request in input_requests.values()
        for field in request["params"]["requestedSchema"]["properties"]
    ]


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_until_listening(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the SDK server for {url} exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not listen within {START_TIMEOUT_S:g} s")
