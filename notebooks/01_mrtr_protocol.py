# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 1. Multi Round-Trip Requests, on the wire
#
# An MCP tool sometimes needs something from the user halfway through a call: a login, a
# choice, a confirmation. This notebook shows why that is hard once a server runs as
# several replicas behind a load balancer, and how **Multi Round-Trip Requests** (MRTR,
# SEP-2322, protocol 2026-07-28) solve it. Every message below is real: it is sent to the
# lab's server and printed as it came back.
#
# **What you will learn**
#
# 1. The problem, live: with the 2025-11-25 protocol, replica A holds the call and waits,
#    while the load balancer may deliver the user's answer to replica B.
# 2. What MRTR puts on the wire: `resultType: "input_required"`, `inputRequests`,
#    `inputResponses` and `requestState`, and why any replica can finish the call.
# 3. The seed's Azure DevOps example: two rounds of questions, with the first answer
#    carried in `requestState`.
# 4. What a sealed `requestState` protects against: tampering, replay by another user, on
#    another request, after expiry, or with a retired key. Each attack is tried, live.
# 5. That the official `mcp` Python client runs the same rounds by itself.
#
# The MRTR servers in this notebook run inside the notebook's own process: no ports, no
# network. The legacy demonstration and the official client need real HTTP, so they
# start small server processes on free ports of 127.0.0.1 and stop them when done.

# %% tags=["parameters"]
import os

# The tests set QUICK=1 to run a shorter version of the notebook.
QUICK = os.environ.get("QUICK") == "1"
# What the simulated user answers.
LOCATION = "Lisbon"
GITHUB_LOGIN = "octocat"
WORK_ITEM_ID = 4522
RESOLUTION = "Duplicate"
DUPLICATE_OF_ID = 4301
# For the cost of sealing: how many answers a state carries, and timing repeats.
ANSWERS_CARRIED = [0, 1, 2, 4, 8, 16, 32, 64]
SEAL_REPEATS = 200 if QUICK else 2000
# How long a sealed state stays valid on the replica used for the expiry attack.
SHORT_STATE_TTL_S = 1.0

# %%
import base64
import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import result_tables
import traffic
from answers import hidden_answer
from mcp import Client, types
from prometheus_client.parser import text_string_to_metric_families

from labsim import StoreParams
from server.app import create_app
from server.client import Handlers, LegacyClient, McpError, MrtrClient, accept
from server.config import ServerConfig, StateKey
from server.harness.process import ServerProcess
from server.mrtr.state import Origin, StateSealer, arguments_digest
from server.transport.auth import mint_token

# %% [markdown]
# Every replica of a deployment shares two secrets: the AES-256 keys that seal
# `requestState`, and the secret that signs users' bearer tokens. This notebook makes
# fresh ones, so nothing here relies on the lab's public development values.

# %%
STATE_KEY = StateKey("k1", os.urandom(32))
JWT_SECRET = base64.b64encode(os.urandom(32)).decode()
SHARED_ENV = {
    "MRTR_STATE_KEYS": f"{STATE_KEY.key_id}:{base64.b64encode(STATE_KEY.key_bytes).decode()}",
    "MRTR_JWT_SECRET": JWT_SECRET,
}
user = Handlers(
    elicit=traffic.form_filler(
        name=GITHUB_LOGIN, resolution=RESOLUTION, duplicateOfId=DUPLICATE_OF_ID
    )
)

# %% [markdown]
# ## 1. The problem: the question is asked on A, the answer lands on B
#
# Under protocol 2025-11-25 a tool that needs input answers the `tools/call` POST with a
# Server-Sent Events stream, sends an `elicitation/create` request on it, and waits. The
# user's answer is a *separate* POST. A plain load balancer picks a replica for it
# independently, so it can land on a replica that knows nothing about the waiting call:
#
# ```mermaid
# sequenceDiagram
#     participant U as Client
#     participant LB as Load balancer
#     participant A as Replica A
#     participant B as Replica B
#     U->>LB: POST tools/call get_weather
#     LB->>A: forwarded
#     A-->>U: SSE stream opens: elicitation/create "GitHub username?"
#     Note over A: holds the call (a coroutine, its memory, the stream)<br/>while the user thinks
#     U->>LB: POST the answer (a JSON-RPC response)
#     LB->>B: forwarded to another replica
#     B-->>U: 404: B has never heard of this session
#     Note over A: still waiting for an answer that will never come
# ```
#
# Let's make that happen. Two real replicas, each keeping its legacy sessions in its own
# memory; the client opens its session on A and posts its answer to B, as a round-robin
# balancer would half of the time.

# %%
replicas = [ServerProcess(replica_id=name, env=SHARED_ENV) for name in ("A", "B")]
with ThreadPoolExecutor(2) as pool:
    list(pool.map(ServerProcess.start, replicas))
try:
    replica_a, replica_b = replicas
    legacy = LegacyClient(replica_a.url, answer_url=replica_b.url, handlers=user)
    with legacy:
        try:
            legacy.call_tool("get_weather", {"location": LOCATION})
        except McpError as error:
            refusal = error
finally:
    for replica in replicas:
        replica.stop()

print(f"The answer was refused: HTTP {refusal.http_status}, JSON-RPC {refusal.code}")
print(refusal.message)

# %% [markdown]
# Here is every message of that failed call, in order. Notice the `elicitation/create`
# arriving on the stream (`via sse`) from A, and the answer going out as a POST, to B.

# %%
legacy_wire = pd.DataFrame(
    {
        "direction": m.direction,
        "carried by": m.via,
        "JSON-RPC id": m.message.get("id", ""),
        "method": m.message.get("method", ""),
        "kind": "request" if "method" in m.message else "response",
        "time (ms)": round(m.at_s * 1e3, 1),
    }
    for m in legacy.session.wire
)
legacy_wire

# %% [markdown]
# The legacy answer to this is to make the answer find its way back: a **sticky** load
# balancer that pins the client to A with a cookie, or a **shared store** (Redis) through
# which B hands the answer to A. Notebook 2 compares those with MRTR. MRTR takes a
# different road: *nobody waits*.
#
# ## 2. MRTR: end the request, and let the client carry the state
#
# Under MRTR the server does not hold the call. It answers the `tools/call` at once with
# `resultType: "input_required"` and the questions in `inputRequests`. The client asks the
# user and sends a **new, independent** request: same method and arguments, a new
# JSON-RPC id, the answers in `inputResponses`, and, if the server sent one, the exact
# `requestState` back. Any replica can serve it.
#
# Two in-process replicas, A and B, sharing their keys:


# %%
def replica_app(replica_id: str, **settings) -> object:
    """An in-process replica with this notebook's keys and token secret."""
    options = {"state_keys": (STATE_KEY,), "jwt_secret": JWT_SECRET, **settings}
    config = ServerConfig(replica_id=replica_id, **options)
    return create_app(config)


app_a, app_b = replica_app("A"), replica_app("B")
client_a = MrtrClient.for_app(app_a, handlers=user)
client_b = MrtrClient.for_app(app_b, handlers=user)

# %% [markdown]
# Round 1 goes to A. `send` posts one round and returns whether the call is complete.

# %%
weather = client_a.exchange(
    "tools/call", {"name": "get_weather", "arguments": {"location": LOCATION}}
)
print("complete after round 1:", client_a.send(weather))
print("\n--- request ---")
traffic.show(weather.rounds[0].request)
print("\n--- response ---")
traffic.show(weather.rounds[0].response)

# %% [markdown]
# What to notice: the response is an ordinary JSON-RPC *result*, and the HTTP request is
# over. The question is inside it, under a key (`github_login`) the client will use for
# the answer. There is no `requestState` yet: the server had learnt nothing worth
# carrying, and the retry repeats the arguments anyway.
#
# Round 2 goes to B, a replica that never saw round 1:

# %%
weather.answer({"github_login": accept(name=GITHUB_LOGIN)})
print("complete after round 2:", client_b.send(weather))
print("\n--- request ---")
traffic.show(weather.rounds[1].request)
print("\n--- response ---")
traffic.show(weather.rounds[1].response)

# %% [markdown]
# B finished the call from the request alone. The `_meta` every 2026-07-28 request
# carries (protocol version, client info, capabilities) is left out of the printouts;
# this is what it looks like:

# %%
print(json.dumps(weather.rounds[1].request["params"]["_meta"], indent=2))

# %% [markdown]
# ## 3. The seed's example: resolving a bug in Azure DevOps
#
# The seed walks through `update_work_item`: setting a bug to *Resolved* triggers a rule
# that needs a **resolution**; answering *Duplicate* triggers a second rule that needs the
# **original work item**. Two questions, asked one after the other, because the second
# depends on the first answer. The first answer must survive until the end, and no
# replica keeps it: it travels in `requestState`.
#
# `client.run` drives all the rounds; we send them to A, B and A in turn by hand instead,
# to show that it does not matter.

# %%
arguments = {"workItemId": WORK_ITEM_ID, "fields": {"System.State": "Resolved"}}
bug = client_a.exchange("tools/call", {"name": "update_work_item", "arguments": arguments})
served_by = []
for client, name in [(client_a, "A"), (client_b, "B"), (client_a, "A")]:
    served_by.append(name)
    if client.send(bug):
        break
    bug.answer(
        {
            key: user.for_method(request["method"])(request["params"])
            for key, request in bug.input_requests.items()
        }
    )
print(bug.text)
traffic.rounds_table(bug, served_by)

# %% [markdown]
# Three rounds, as in the seed: round 1 asks for `resolution`; round 2 brings the answer
# and gets the second question *plus* a `requestState`; round 3 brings the second answer
# and the state back, and completes. The state returned in round 2 is exactly the one sent
# in round 3. Here is round 2's response:

# %%
traffic.show(bug.rounds[1].response)

# %% [markdown]
# The cost of carrying state is bytes on the wire. The figure shows each round's request
# and response, with the part that is `requestState`.

# %%
table = traffic.rounds_table(bug, served_by)
fig, ax = plt.subplots(figsize=(7, 3.5))
x = np.arange(len(table))
state_in = table["requestState sent (bytes)"]
state_out = table["requestState returned (bytes)"]
ax.bar(x - 0.2, table["request (bytes)"] - state_in, 0.4, label="request, without state")
ax.bar(
    x - 0.2, state_in, 0.4, bottom=table["request (bytes)"] - state_in, label="requestState sent"
)
ax.bar(x + 0.2, table["response (bytes)"] - state_out, 0.4, label="response, without state")
ax.bar(
    x + 0.2,
    state_out,
    0.4,
    bottom=table["response (bytes)"] - state_out,
    label="requestState returned",
)
ax.set_xticks(x, [f"round {r}\n(replica {s})" for r, s in zip(table.index, served_by, strict=True)])
ax.set_ylabel("message size (bytes, compact JSON)")
ax.set_title("update_work_item: what each round puts on the wire")
ax.legend(fontsize="small", loc="upper left")
ax.grid(True, axis="y", alpha=0.3)
plt.show()

# %% [markdown]
# ## 4. What the sealed state protects against
#
# The client carries the state, so the client can change it. The seed's own illustration
# uses plain base64 JSON; anyone can read and rewrite that:

# %%
plain_state = base64.b64encode(json.dumps({"resolution": RESOLUTION}).encode()).decode()
print("a plain state:      ", plain_state)
print("decoded by anyone:  ", base64.b64decode(plain_state).decode())
forged = base64.b64encode(json.dumps({"resolution": "Fixed"}).encode()).decode()
print("rewritten by anyone:", forged)

# %% [markdown]
# The lab's server seals it instead (`server/mrtr/state.py`): AES-256-GCM, so the client can
# neither read nor change it, and inside, next to the answers, the *principal* it was
# minted for, an *expiry*, and the *request* it belongs to (method, tool name, a digest of
# the arguments). The first characters name the key that sealed it. Decoding the sealed
# state from round 2 gives noise:

# %%
sealed = bug.rounds[1].response["result"]["requestState"]
key_id, _, body = sealed.partition(".")
raw = base64.b64decode(body + "=" * (-len(body) % 4))
print("key id:", key_id, "| bytes:", len(raw))
print("first bytes:", raw[:24].hex(" "))
print("does the answer appear in it?", RESOLUTION.encode() in raw)

# %% [markdown]
# Now the attacks, each sent through the real endpoint. Alice and Bob are two users with
# their own bearer tokens; Alice gets a state in round 2 of her call, then:
#
# - **tampered**: one character of the state is changed;
# - **replayed by Bob**: Bob sends Alice's state with his own token;
# - **replayed on another request**: Alice sends it on a call about another work item;
# - **expired**: Alice waits longer than the state's lifetime;
# - **retired key**: the state reaches a replica that no longer has the key that sealed it.

# %%
alice_token = mint_token("alice", JWT_SECRET)
bob_token = mint_token("bob", JWT_SECRET)


def state_for_alice(app) -> str:
    """Alice's state after round 2 of update_work_item on `app`."""
    with MrtrClient.for_app(app, handlers=user, token=alice_token) as alice:
        exchange = alice.exchange(
            "tools/call", {"name": "update_work_item", "arguments": arguments}
        )
        alice.send(exchange)
        exchange.answer({"resolution": accept(resolution=RESOLUTION)})
        alice.send(exchange)
        return exchange.request_state


def retry(app, state: str, token: str, retry_arguments: dict) -> dict:
    """Send round 3 with `state`; what the server says."""
    with MrtrClient.for_app(app, handlers=user, token=token) as client:
        exchange = client.exchange(
            "tools/call", {"name": "update_work_item", "arguments": retry_arguments}
        )
        exchange.request_state = state
        exchange.input_responses = {"duplicate_of": accept(duplicateOfId=DUPLICATE_OF_ID)}
        try:
            client.send(exchange)
        except McpError as error:
            reason = (error.data or {}).get("reason", "")
            return {"outcome": "rejected", "JSON-RPC error": error.code, "reason or result": reason}
        return {"outcome": "accepted", "JSON-RPC error": "-", "reason or result": exchange.text}


good = state_for_alice(app_a)
flipped = good[:-6] + ("A" if good[-6] != "A" else "B") + good[-5:]
other_item = {**arguments, "workItemId": WORK_ITEM_ID + 1}
short_lived = replica_app("short-lived", state_ttl_s=SHORT_STATE_TTL_S)
stale = state_for_alice(short_lived)
rotated = replica_app("rotated", state_keys=(StateKey("k2", os.urandom(32)),))

attacks = {
    "honest retry (on B)": (app_b, good, alice_token, arguments),
    "tampered": (app_b, flipped, alice_token, arguments),
    "replayed by Bob": (app_b, good, bob_token, arguments),
    "replayed on another work item": (app_b, good, alice_token, other_item),
    "retired key": (rotated, good, alice_token, arguments),
}
outcomes = {name: retry(*case) for name, case in attacks.items()}
time.sleep(SHORT_STATE_TTL_S + 1.1)  # the expiry is checked to the second
outcomes["expired"] = retry(short_lived, stale, alice_token, arguments)
attack_table = pd.DataFrame.from_dict(outcomes, orient="index")
attack_table.index.name = "what Alice's state went through"
attack_table

# %% [markdown]
# Every attack is a clean JSON-RPC error `-32602` (invalid params) with a reason; none is
# a crash, and none returns a result. The server counts them in `/metrics`
# (`mrtr_request_state_failures_total{reason=...}`), which is what an operator would watch.
#
# Sealing costs CPU and bytes. Both grow with what the state carries; here measured on
# this machine with the server's own `StateSealer`.

# %%
sealer = StateSealer([STATE_KEY], ttl_s=600)
origin = Origin("alice", "tools/call", "update_work_item", arguments_digest(arguments))
for _ in range(SEAL_REPEATS):  # warm up caches and the allocator before timing
    sealer.open(sealer.seal(origin, round=1, answers={}, tool_state={}), origin)
rows = []
for count in ANSWERS_CARRIED:
    answers = {f"question_{k}": accept(name=f"{GITHUB_LOGIN}-{k}") for k in range(count)}
    started = time.perf_counter()
    for _ in range(SEAL_REPEATS):
        token = sealer.seal(origin, round=1, answers=answers, tool_state={})
    sealed_at = time.perf_counter()
    for _ in range(SEAL_REPEATS):
        sealer.open(token, origin)
    opened_at = time.perf_counter()
    rows.append(
        {
            "answers carried": count,
            "seal (µs)": (sealed_at - started) / SEAL_REPEATS * 1e6,
            "open and check (µs)": (opened_at - sealed_at) / SEAL_REPEATS * 1e6,
            "requestState (bytes)": len(token),
        }
    )
seal_cost = pd.DataFrame(rows).set_index("answers carried")
seal_cost.round(1)

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
left.plot(seal_cost.index, seal_cost["seal (µs)"], marker="o", label="seal")
left.plot(seal_cost.index, seal_cost["open and check (µs)"], marker="s", label="open and check")
left.set_xlabel("answers carried in the state")
left.set_ylabel("CPU time per state (µs)")
left.set_title("Sealing is microseconds")
left.legend()
left.grid(True, alpha=0.3)
right.plot(
    seal_cost.index, seal_cost["requestState (bytes)"] / 1024, marker="o", label="requestState"
)
right.set_xlabel("answers carried in the state")
right.set_ylabel("size on the wire (KiB)")
right.set_title("and a few bytes per answer")
right.legend()
right.grid(True, alpha=0.3)
fig.tight_layout()
plt.show()

# %% [markdown]
# For scale: the simulation in the next notebooks assumes a round trip to an in-region
# Redis store of the size printed below, which the legacy store architecture pays for every
# answer, on top of the store itself. Sealing needs no store at all.

# %%
print(f"assumed Redis round trip: {StoreParams().round_trip_s * 1e6:.0f} µs")
print(f"measured seal + open of a state with 2 answers: {seal_cost.loc[2].iloc[:2].sum():.0f} µs")

# %% [markdown]
#
# ## 5. The official `mcp` client does the same rounds by itself
#
# The official Python SDK (2.x) implements MRTR: it sees `input_required`, calls your
# elicitation callback for each question, and retries with the answers and the state.
# It needs a real HTTP endpoint, so this starts one replica process. The server's
# `/metrics`, read before and after, show what happened underneath.


# %%
async def elicit(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    """The user: fills each form from the notebook's parameters."""
    return types.ElicitResult(
        action="accept", content=user.elicit(params.model_dump(by_alias=True))["content"]
    )


def mrtr_counters(replica: ServerProcess) -> dict[str, float]:
    """The replica's MRTR counters from /metrics."""
    text = httpx.get(f"{replica.base_url}/metrics", timeout=5).text
    counts = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in (
                "mrtr_input_required_results_total",
                "mrtr_request_states_sealed_total",
            ):
                counts[sample.name] = counts.get(sample.name, 0) + sample.value
    return counts


with ServerProcess(replica_id="official", env=SHARED_ENV) as replica:
    before = mrtr_counters(replica)
    async with Client(replica.url, elicitation_callback=elicit) as official:
        official_result = await official.call_tool("update_work_item", arguments)
        protocol = official.protocol_version
    after = mrtr_counters(replica)

print("protocol:", protocol)
print("result:  ", official_result.content[0].text, "| error:", official_result.is_error)
result_tables.column({name: after[name] - before.get(name, 0) for name in after}, "during the call")

# %% [markdown]
# The counters show the rounds underneath: an `input_required` result for each question,
# and a sealed state for the round that had an answer to carry. The same rounds the lab's
# own client made, done by an independent implementation.

# %%
client_a.close()
client_b.close()

# %% [markdown]
# ## Exercises
#
# Solutions are in the collapsed cells under each exercise: click the three dots to open
# one, after you have tried.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** `ask_capital` asks two things in *one* round: a GitHub login (an
# elicitation) and the capital of a country (a *sampling* request to the client's LLM).
# Call it step by step on replica A with `country="Peru"`. Which keys and which methods are
# in `inputRequests`? Answer both (`server.client.sampled(text)` builds a sampling
# answer), send round 2 to B, and print the result. What happens if your client does not
# declare the sampling capability (a `Handlers` without `sample`)?

# %% jupyter={"outputs_hidden": true, "source_hidden": true} tags=["solution"]
with hidden_answer():
    from server.client import sampled

    with (
        MrtrClient.for_app(
            replica_app("A"),
            handlers=Handlers(elicit=user.elicit, sample=lambda p: sampled("Lima")),
        ) as on_a,
        MrtrClient.for_app(replica_app("B"), handlers=user) as on_b,
    ):
        capital = on_a.exchange(
            "tools/call", {"name": "ask_capital", "arguments": {"country": "Peru"}}
        )
        on_a.send(capital)
        print({key: request["method"] for key, request in capital.input_requests.items()})
        capital.answer({"github_login": accept(name=GITHUB_LOGIN), "capital": sampled("Lima")})
        on_b.send(capital)
        print(capital.text)
        # B's client declares elicitation only: the server refuses to ask for sampling.
        try:
            on_b.call_tool("ask_capital", {"country": "Peru"})
        except McpError as error:
            print("without sampling:", error.code, error.message)

# %% [markdown] tags=["exercise"]
# **Exercise 2.** Take the `good` state from section 4 (sealed for Alice's call about
# work item 4522) and send it on a call to `get_weather` instead, with Alice's token.
# Which reason does the server give, and which of the bindings inside the state caught
# it? Then build the `Origin` the server would compute for that call and try
# `sealer.open` on it directly (use a `StateSealer` with `STATE_KEY`).

# %% jupyter={"outputs_hidden": true, "source_hidden": true} tags=["solution"]
with hidden_answer():
    from server.mrtr.state import StateError

    with MrtrClient.for_app(app_b, handlers=user, token=alice_token) as alice:
        attempt = alice.exchange(
            "tools/call", {"name": "get_weather", "arguments": {"location": LOCATION}}
        )
        attempt.request_state = good
        try:
            alice.send(attempt)
        except McpError as error:
            print("through the endpoint:", error.data)
    elsewhere = Origin(
        "alice", "tools/call", "get_weather", arguments_digest({"location": LOCATION})
    )
    try:
        StateSealer([STATE_KEY], ttl_s=600).open(good, elsewhere)
    except StateError as error:
        print("directly:", error.reason, "-", error)
    # The tool name (and the arguments digest) bound inside the state do not match.

# %% [markdown] tags=["exercise"]
# **Exercise 3.** The seed says the first round of `update_work_item` needs no
# `requestState`, because the retry repeats the arguments. Check it on the table of
# section 3, then find a tool whose *first* `input_required` already carries a state
# (hint: `crunch` with a replica that sheds work, `replica_app("C", shed_every_units=1000)`,
# and `units=5000`). Why does that one need a state from the start?

# %% jupyter={"outputs_hidden": true, "source_hidden": true} tags=["solution"]
with hidden_answer():
    print(
        "round 1 of update_work_item returned a state of",
        table.loc[1, "requestState returned (bytes)"],
        "bytes",
    )
    with MrtrClient.for_app(replica_app("C", shed_every_units=1000), handlers=user) as shedding:
        crunch = shedding.exchange("tools/call", {"name": "crunch", "arguments": {"units": 5000}})
        shedding.send(crunch)
        first = crunch.rounds[0].response["result"]
        print("crunch round 1:", sorted(first), "| questions:", first.get("inputRequests"))
    # crunch asks the user nothing: the state *is* the point. It carries the work done so far
    # (the hash chain's position and value), so the next replica resumes instead of starting over.
