"""requestState across a deployment: a state sealed by one replica must open on every
other (the retry of a call may land anywhere), through the balancer as often as a user
retries, bound to its caller where the deployment authenticates, and alive for as long
as a user thinks; and how long a state lives (its TTL), as far as the ages it is retried
at tell.

The simplest test is the one each check makes: start a call on A whose tool asks, send
the retry with A's requestState to B, and read what B says. When B refuses, the cause is
named where it can be told from outside: the replicas' server names (the state's default
audience) differ, the key identifier the sealed form shows differs (the official Python
SDK's `v1.` states, the lab's `KEYID.` states), the refusal says the state expired, or
the replicas' clocks (their `Date` headers) disagree.
"""

from __future__ import annotations

import base64
import binascii
import time
from email.utils import parsedate_to_datetime
from itertools import permutations

from loadtest.doctor.deployment import Deployment, Round
from loadtest.doctor.finding import Finding, failed, not_checked, passed
from server.protocol.versions import MODERN_VERSION

#: Clocks further apart than this make a state look expired or not yet valid elsewhere.
CLOCK_SKEW_S = 5.0

FIXES = {
    "another server name": "give every replica the same server name (the state's audience; "
    "the official Python SDK takes it from MCPServer's name, or RequestStateSecurity("
    "audience=...)), the same on every replica",
    "another key": "give every replica the same requestState keys (official Python SDK: "
    "RequestStateSecurity(keys=[...]) from a shared secret, never the default per-process "
    "key; the lab's server: the same --state-keys/MRTR_STATE_KEYS), the sealing key first",
    "expired": "make the state live longer than your users think (the TTL: "
    "RequestStateSecurity(ttl=...) in the official Python SDK)",
    "clock": "synchronise the replicas' clocks (NTP); a state's expiry is read on "
    "another replica's clock",
    "unknown": "give every replica the same requestState keys and the same server name "
    "(audience), and synchronise their clocks; then read the refusing replica's log",
}


def key_fingerprint(state: str | None) -> str | None:
    """The key identifier a sealed state shows in the clear, where its form shows one."""
    if not state:
        return None
    if state.startswith("v1."):
        try:
            return base64.urlsafe_b64decode(state[3:11] + "==")[:4].hex()
        except (binascii.Error, ValueError):
            return None
    head, dot, _ = state.partition(".")
    return head if dot and len(head) <= 32 else None


def _clock(round_: Round) -> float | None:
    date = round_.headers.get("date")
    try:
        return parsedate_to_datetime(date).timestamp() if date else None
    except (TypeError, ValueError):
        return None


def cause(deployment: Deployment, opener: str, first: Round, refused: Round) -> str:
    """Why `opener` refused the state of `first` (sealed elsewhere), where it can be told:
    one of the keys of `FIXES`. Another server name or key is told by what each replica
    shows; an expired state by its own sealer refusing it too; a clock by the replicas'
    `Date` headers, further apart than `CLOCK_SKEW_S` with the state still good where it
    was sealed."""
    sealer = first.url
    names = deployment.targets[sealer].server_name, deployment.targets[opener].server_name
    if names[0] != names[1]:
        return "another server name"
    message = refused.said().lower()
    if "unknown key" in message:
        return "another key"
    theirs = deployment.start_sealed(opener)
    mine = key_fingerprint(first.request_state)
    if theirs is not None and mine and key_fingerprint(theirs.request_state) not in (None, mine):
        return "another key"
    # The replica that sealed the state, asked now: if it refuses its own state too, the
    # state did not live until the retry, whatever the other replica holds.
    again = deployment.retry(first.url, first)
    if not again.transport_error and not again.completed:
        return "expired"
    sealed_at, opened_at = _clock(first), _clock(refused)
    if (
        sealed_at is not None
        and opened_at is not None
        and abs(opened_at - sealed_at) > CLOCK_SKEW_S
    ):
        return "clock"
    if "expired" in message and "invalid or expired" not in message:
        return "expired"
    return "unknown"


def _hop(deployment: Deployment, sealer: str, opener: str) -> tuple[Round, Round] | None:
    """A call taken on `sealer` to a round that carries a requestState, then retried on
    `opener`: both rounds (None when no call carried a state)."""
    first = deployment.start_sealed(sealer)
    if first is None:
        return None
    return first, deployment.retry(opener, first)


def across_replicas(deployment: Deployment) -> Finding:
    """`state-across-replicas`: each ordered pair of replicas, A's state retried on B."""
    name = "state-across-replicas"
    if not deployment.speaks(MODERN_VERSION):
        return not_checked(name, "the deployment does not speak 2026-07-28")
    if deployment.tool is None:
        return not_checked(name, "no tool of the deployment asks a question")
    replicas = [url for url in deployment.replicas if url in deployment.targets]
    if len(replicas) < 2:
        return not_checked(name, "fewer than two replica URLs given")
    held, broken = [], []
    for sealer, opener in permutations(replicas, 2):
        hop = _hop(deployment, sealer, opener)
        if hop is None:
            return not_checked(name, f"no call of {deployment.tool.name} carried a requestState")
        first, retried = hop
        if retried.completed:
            held.append((sealer, opener))
        else:
            why = cause(deployment, opener, first, retried)
            broken.append(
                (
                    sealer,
                    opener,
                    _refusal(retried),
                    why,
                )
            )
    tool = deployment.tool.name
    if not broken:
        return passed(
            name,
            f"{len(held)} ordered pairs of replicas: a {tool} call started on one completed "
            "when retried on the other",
        )
    sealer, opener, said, why = broken[0]
    pairs = "; ".join(f"{a} -> {b} ({c})" for a, b, _, c in broken)
    return failed(
        name,
        f"{len(broken)} of {len(broken) + len(held)} ordered pairs refused a state sealed by "
        f"the other replica: a {tool} call started on {sealer}, retried on {opener}: {said}; "
        f"cause: {why}{_names(deployment, sealer, opener) if why == 'another server name' else ''}"
        f"; pairs: {pairs}",
        FIXES[why],
    )


def _names(deployment: Deployment, a: str, b: str) -> str:
    return (
        f" ({a} is {deployment.targets[a].server_name!r}, "
        f"{b} is {deployment.targets[b].server_name!r})"
    )


def through_balancer(deployment: Deployment) -> Finding:
    """`state-through-balancer`: calls started and retried through the balancer, each round
    on a fresh connection, so that the balancer may send the retry anywhere."""
    name = "state-through-balancer"
    if deployment.balancer is None:
        return not_checked(name, "no balancer given (--balancer URL)")
    if not deployment.speaks(MODERN_VERSION) or deployment.tool is None:
        return not_checked(name, "no 2026-07-28 call that asks to retry")
    rounds = deployment.settings.balancer_rounds
    lost: list[str] = []
    for _ in range(rounds):
        hop = _hop(deployment, deployment.balancer, deployment.balancer)
        if hop is None:
            return not_checked(name, f"no call of {deployment.tool.name} carried a requestState")
        retried = hop[1]
        if not retried.completed:
            lost.append(retried.said() if not retried.asked else "the retry was asked again")
    if not lost:
        return passed(
            name, f"{rounds} calls started and retried through {deployment.balancer} completed"
        )
    return failed(
        name,
        f"{len(lost)} of {rounds} calls retried through {deployment.balancer} did not "
        f"complete: {lost[0]}",
        FIXES["unknown"] + " (check each pair of replicas: pass every replica's URL)",
    )


def bound_to_caller(deployment: Deployment) -> Finding:
    """`state-bound-to-caller`: another principal's retry of a state is refused."""
    name = "state-bound-to-caller"
    tokens = [t for t in deployment.auth.tokens if t]
    if len(set(tokens)) < 2:
        return not_checked(
            name, "give two principals' tokens (--token twice) to see another's retry refused"
        )
    url = deployment.entry or deployment.replicas[0]
    if not deployment.speaks(MODERN_VERSION) or deployment.tool is None:
        return not_checked(name, "no 2026-07-28 call that asks to retry")
    first = deployment.start_sealed(url, tokens[0])
    if first is None:
        return not_checked(name, f"no call of {deployment.tool.name} carried a requestState")
    stolen = deployment.retry(url, first, tokens[1])
    if stolen.completed:
        return failed(
            name,
            f"a state sealed for the first token's caller completed a call for the second's "
            f"at {url}",
            "bind requestState to the authenticated principal (the official Python SDK does "
            "by default: keep RequestStateSecurity's bind_principal; the lab's server always "
            "does)",
        )
    return passed(name, f"another principal's retry was refused at {url}: {stolen.said()}")


def probe_ages_s(think_s: float, probe_s: float) -> list[float]:
    """The ages a state is retried at, youngest first: fractions of the think time (to
    bound a lifetime shorter than it), the think time, then doubling to `probe_s`."""
    ages = [think_s / 8, think_s / 4, think_s / 2, think_s]
    while ages[-1] * 2 < probe_s:
        ages.append(ages[-1] * 2)
    if probe_s > ages[-1]:
        ages.append(probe_s)
    return ages


def lifetime(deployment: Deployment) -> Finding:
    """`state-lifetime`: a state retried after the think time still opens; and how long a
    state lives (its TTL), bounded from the ages at which states still opened and the
    youngest at which one no longer did."""
    name = "state-lifetime"
    think_s = deployment.settings.think_time_s
    url = deployment.entry or (deployment.replicas[0] if deployment.replicas else None)
    if url is None or not deployment.speaks(MODERN_VERSION) or deployment.tool is None:
        return not_checked(name, "no 2026-07-28 call that asks to retry")
    ages = probe_ages_s(think_s, deployment.settings.ttl_probe_s)
    # The oldest age's state sealed first and the youngest's last, so that each is retried
    # soon after its age however long the sealing takes.
    sealed = [deployment.start_sealed(url) for _ in reversed(ages)][::-1]
    if any(first is None for first in sealed):
        return not_checked(name, f"no call of {deployment.tool.name} carried a requestState")
    opened: dict[float, float] = {}
    refused: dict[float, tuple[float, Round]] = {}
    for age_s, first in sorted(zip(ages, sealed, strict=True), key=lambda p: _due(*p)):
        assert first is not None
        if refused and age_s > min(refused):
            continue  # older than a state already refused: it would not open either
        time.sleep(max(0.0, _due(age_s, first) - time.monotonic()))
        # A state opened was at least as old as from its answer to the retry's sending; one
        # refused at most as old as from its round's sending to the refusal's answer.
        youngest_s = time.monotonic() - first.at_s
        retried = deployment.retry(url, first)
        if retried.completed:
            opened[age_s] = youngest_s
        else:
            refused[age_s] = (retried.at_s - first.sent_s, retried)
    lives_s = max(opened.values(), default=0.0)
    dies = min(refused.values(), key=lambda r: r[0]) if refused else None
    figures = {
        "ttl_at_least_s": round(lives_s, 3),
        "ttl_at_most_s": None if dies is None else round(dies[0], 3),
    }
    ttl = _ttl_words(lives_s, dies and dies[0], shorter=think_s not in opened)
    if think_s in opened:
        return passed(
            name,
            f"a state retried {think_s:g} s (the think time) after it was sealed opened at "
            f"{url}; {ttl}",
            figures,
        )
    assert dies is not None
    return failed(
        name,
        f"a state sealed at {url} was refused when retried at most {dies[0]:.3g} s after "
        f"(the think time is {think_s:g} s): {_refusal(dies[1])}; {ttl}",
        FIXES["expired"],
        figures,
    )


def _due(age_s: float, first: Round | None) -> float:
    """When the state `first` carries is `age_s` old (`time.monotonic()`)."""
    assert first is not None
    return first.at_s + age_s


def _refusal(retried: Round) -> str:
    """What a replica said to a retry it did not complete."""
    if retried.asked:
        return "the retry was asked again (the state was not opened: the call started over)"
    return retried.said()


def _ttl_words(lives_s: float, dies_s: float | None, *, shorter: bool) -> str:
    """How long a state lives, as far as the ages tried tell (`shorter`: than the think
    time, a state of that age having been refused)."""
    if dies_s is None:
        return f"its lifetime (TTL): at least {lives_s:.3g} s (the oldest age tried)"
    than = ", shorter than the think time" if shorter else ""
    if lives_s == 0:
        return f"its lifetime (TTL): at most {dies_s:.3g} s{than}"
    return f"its lifetime (TTL): between {lives_s:.3g} and {dies_s:.3g} s{than}"
