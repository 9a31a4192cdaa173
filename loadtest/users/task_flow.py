"""A tool call run as a task, as one user lives it, in either wire form of the task methods.

The reference client's `TaskFlow` decides every message (it does no I/O); this module
sends them through the load test's `Post`, lets the user think before each answer, and
keeps the call's record. What the summary counts comes from what the client saw:

- acknowledged: the client holds a task id (`tools/call` answered with a task);
- completed / failed: the task's final result, or its error (a creation the store
  refused is a failed call that never became a task);
- lost: an acknowledged task that is gone (lost with the store's data, or "Task not
  found"), or that is not done within `timeout_s`;
- taken_over: the task was resumed after its run stopped (its replica died, or the store
  refused its checkpoint): its status message said so, or its result names more runs
  than one.

While the client follows an acknowledged task, a round no replica answers (a crash) is
sent again, and a store error (HTTP 503, the store restarting) is waited out at the poll
interval, both within the same `timeout_s`: a caller sees an error, never a hang.
"""

from __future__ import annotations

import random
import time
from typing import Any

from loadtest.users.flows import USER_CAPABILITIES, Caller, CallRecord, check_result
from loadtest.users.http_interface import Post
from loadtest.users.simulated_user import Sleep, ThinkTime
from server.client import EXTENSION, SEED, McpError, TaskFlow, task_capabilities

#: The wire forms a load-test user can speak: the seed's methods and the released extension.
WIRES = (SEED, EXTENSION)
#: The messages that carry the user's answers to a task.
ANSWER_METHODS = ("tasks/input_response", "tasks/update")
#: What a status message says when another replica resumed the task.
TAKEOVER_MARK = "Resumed on "


def run_task_flow(
    post: Post,
    tool: str,
    arguments: dict[str, Any],
    *,
    arch: str,
    wire: str,
    think: ThinkTime,
    rng: random.Random,
    max_retries: int = 8,
    sleep: Sleep = time.sleep,
    timeout_s: float = 60.0,
) -> CallRecord:
    """One tool call as a task: create it (MRTR rounds first, if the tool asks), then poll,
    answer and fetch until it is done."""
    record = CallRecord(tool=tool, arch=arch, started=time.time())
    record.task = {
        "wire": wire,
        "id": None,
        "status": None,
        "taken_over": False,
        "store_errors": 0,
    }
    caller = Caller(post, record, think, rng, max_retries, sleep)
    flow = TaskFlow(wire, task_capabilities(USER_CAPABILITIES, wire))
    creation = flow.create(tool, arguments, ttl_ms=None, max_rounds=16)
    try:
        if not caller.run(creation):
            record.outcome, record.error = "lost", f"no replica answered {tool}"
        else:
            flow.created()
            record.task["id"] = flow.task_id
            _follow(caller, flow, timeout_s)
            flow.raise_for_error()
    except McpError as error:
        record.outcome, record.error = "failed", f"{error.code}: {error.message}"
    record.rounds = len(creation.rounds) + len(flow.messages)
    record.task["status"] = flow.status
    caller.finish()
    if record.outcome == "completed":
        check_result(record, flow.result or {}, arguments)
        if len(record.detail.get("replicas", [])) > 1:  # one entry per run: it was resumed
            record.task["taken_over"] = True
    return record


def _follow(caller: Caller, flow: TaskFlow, timeout_s: float) -> None:
    """Poll, answer and fetch until the task is done, lost, or `timeout_s` has passed."""
    record = caller.record
    deadline = time.monotonic() + timeout_s
    # Whether an answer went out without a reply (its replica died mid-request): it may
    # have been saved, and then the task is no longer waiting when the answer comes again.
    answer_unconfirmed = False
    while (step := flow.next_step) != "done":
        if time.monotonic() > deadline:
            record.outcome, record.error = "lost", f"task not done after {timeout_s:g} s"
            return
        if step == "answer":
            flow.answer(caller.answers(flow.input_requests or {}))
            continue
        if step == "wait":
            caller.sleep(flow.poll_interval_s)
        exchange = flow.next_exchange()
        headers, body = exchange.next_request()
        retries = record.retries
        reply = caller.deliver(headers, body)
        if exchange.method in ANSWER_METHODS:
            answer_unconfirmed |= reply is None or record.retries > retries
        if reply is None:
            continue  # no replica answered, even after retries: keep trying to the deadline
        try:
            exchange.record(body, reply.status, reply.body, 0.0)
        except McpError as error:
            if answer_unconfirmed and "not waiting for input" in error.message:
                flow.input_responses = flow.input_requests = None  # the first copy landed
                answer_unconfirmed = False
                continue
            # The server says so when the store restarted empty; older servers say "not found".
            gone_with_the_store = (
                isinstance(error.data, dict) and error.data.get("reason") == "store_lost_data"
            )
            if error.http_status == 503 and not gone_with_the_store:  # the store is away
                record.task["store_errors"] += 1
                caller.sleep(flow.poll_interval_s)
                continue
            if gone_with_the_store or "not found" in error.message.lower():
                record.outcome, record.error = "lost", f"{error.code}: {error.message}"
                return
            raise
        flow.take(exchange)
        answer_unconfirmed = answer_unconfirmed and exchange.method not in ANSWER_METHODS
        if str(flow.task.get("statusMessage") or "").startswith(TAKEOVER_MARK):
            record.task["taken_over"] = True
