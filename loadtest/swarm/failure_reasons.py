"""Why the swarm's requests failed, in words: the round kind, the fault they met, the reason.

Locust counts failures per round kind (`loadtest.swarm.locust_stats`) and names an error
("JSON-RPC -32600", "HTTP 503"); an architect wants the mechanism: "1.5% of answer posts
failed (32 of 2,112) during the rolling upgrade: answers for calls held on a replica
stopped at the drain timeout; its held stream is gone, so no call waits for them". A
reason follows from the architecture, the round kind's family and the fault:

    family        round kinds
    answer        answer post                 (legacy: an answer POSTed on its own)
    held call     sse call                    (legacy: the call, held on its stream)
    session       session                     (legacy: initialize and initialized)
    round         round 1, answer retry, state retry   (MRTR: every round a request)
    task          task poll, task result, task answer

A few errors say their reason whatever the fault (a per-principal cap, HAProxy's own
timeout); anything else is said to be unexplained rather than guessed.
"""

from __future__ import annotations

from loadtest.swarm.locust_stats import (
    ANSWER_POST,
    ANSWER_RETRY,
    ROUND_1,
    SESSION,
    SSE_CALL,
    STATE_RETRY,
    TASK_ANSWER,
    TASK_POLL,
    TASK_RESULT,
)

_FAMILIES = {
    ANSWER_POST: "answer",
    SSE_CALL: "held call",
    SESSION: "session",
    ROUND_1: "round",
    ANSWER_RETRY: "round",
    STATE_RETRY: "round",
    TASK_POLL: "task",
    TASK_RESULT: "task",
    TASK_ANSWER: "task",
}
#: Scenario names and fault names that are the same fault.
_SAME_FAULT = {"store-outage": "redis-outage", "restart": "crash"}

_STOPPED = "stopped at the drain timeout"
_REASONS: dict[tuple[str, str], str] = {
    ("rolling-upgrade", "answer"): (
        "the user answered after the replica holding the call was " + _STOPPED + ", "
        "which cut its held stream: no replica has the call any more, so the answer is "
        "refused; the client starts the call again and the user is asked again"
    ),
    ("rolling-upgrade", "held call"): (
        "legacy calls on a replica " + _STOPPED + ", or sent to it as it stopped: the "
        "stream is cut and the call starts again from its first question"
    ),
    ("rolling-upgrade", "session"): (
        "sessions opened on a replica just before it was stopped, which the replica "
        "started in its place does not know: the user opens a new session"
    ),
    ("rolling-upgrade", "round"): (
        "rounds that reached a replica as it stopped; each is sent again to another "
        "replica, and nobody is asked again"
    ),
    ("rolling-upgrade", "task"): (
        "task requests that reached a replica as it stopped; the task lives in the shared "
        "store, so the client asks again elsewhere"
    ),
    ("crash", "answer"): (
        "answers for calls held on the crashed replica: their streams died with it, so no "
        "call waits for them; the client starts the call again and the user is asked again"
    ),
    ("crash", "held call"): (
        "legacy calls cut by the crash, or sent to the dead replica before HAProxy's "
        "health check marked it down; the call starts again from its first question"
    ),
    ("crash", "session"): (
        "sessions of the crashed replica, which died with it: the user opens a new session"
    ),
    ("crash", "round"): (
        "rounds sent to the dead replica before HAProxy's health check marked it down; each "
        "is sent again to a live replica, and nobody is asked again"
    ),
    ("crash", "task"): (
        "task requests that met the dead replica; the task lives in the shared store and "
        "another replica takes it over once its lease lapses"
    ),
    ("redis-outage", "answer"): (
        "answers that could not travel through Redis to the replica holding the call "
        "(the store was down)"
    ),
    ("redis-outage", "held call"): (
        "legacy calls that needed the store while it was down (sse-store keeps its "
        "sessions and routes answers through Redis)"
    ),
    ("redis-outage", "session"): (
        "sessions opened while the store was down (sse-store keeps its sessions in Redis)"
    ),
    ("redis-outage", "round"): "rounds of task tools that needed the task store while it was down",
    ("redis-outage", "task"): (
        "task calls begun while the task store was down, refused at once (HTTP 503); "
        "tasks already acknowledged are polled through the outage"
    ),
    ("idle-timeout", "held call"): (
        "held streams HAProxy cut when they stayed idle longer than its idle timeout while "
        "the user thought; the call starts again from its first question"
    ),
    ("idle-timeout", "answer"): (
        "answers for calls whose held stream the idle timeout had cut: no call waits for them"
    ),
    ("overload", "round"): (
        "rounds refused by a replica over its in-flight threshold and not shed; sent again"
    ),
}
_ERRORS = {
    "HTTP 429": "a per-principal cap of the replica refused it (the 429's message names the cap)",
    "HTTP 408": "HAProxy or the replica cut a request whose body did not arrive in time",
    "HTTP 504": "HAProxy gave up waiting for the replica's answer (its server timeout)",
}
UNEXPLAINED = "not a failure this fault explains: see Locust's Failures tab and the replicas' logs"


def family(kind: str) -> str:
    """The family of a round kind (`answer`, `held call`, `round`, `task`, or the kind)."""
    return _FAMILIES.get(kind, kind)


def reason(kind: str, fault: str | None, error: str = "") -> str:
    """Why requests of round kind `kind` failed with `error` during `fault` (None: none)."""
    for code, why in _ERRORS.items():
        if code in error:
            return why
    if fault is None:
        return "with no fault under way: " + UNEXPLAINED
    fault = _SAME_FAULT.get(fault, fault)
    return _REASONS.get((fault, family(kind)), UNEXPLAINED)


def explain(
    kind: str,
    failures: int,
    requests: int,
    *,
    fault: str | None,
    during: str = "",
    error: str = "",
) -> str:
    """One sentence: how many requests of a kind failed, during what, and why.

    `during` names the fault's span in words ("the rolling upgrade, 14:03:07-14:03:21");
    `error` is Locust's error text, when known.
    """
    share = 100 * failures / requests if requests else 100.0
    what = f"{share:.1f}% of {kind} requests failed ({failures:,} of {requests:,})"
    if error:
        what += f" with {error}"
    if during:
        what += f" during {during}"
    return f"{what}: {reason(kind, fault, error)}"
