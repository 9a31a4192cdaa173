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
# # 7. Persistent tools: when a call becomes a task
#
# MRTR keeps nothing on the server between rounds: the call's state travels with the
# client in `requestState`. That is right for a tool that asks a question and answers in
# milliseconds. It is wrong for a tool whose work takes minutes and must survive the
# client going away: provisioning a machine, a long export, a deployment. The seed's
# answer is the **persistent tool**: the call becomes a **task** with an id, kept in a
# store every replica can reach, and the client polls it, answers its questions and
# fetches its result. This notebook shows both, on the wire and in the simulation.
#
# **What you will learn**
#
# 1. Ephemeral against persistent: what each keeps, where, and for how long.
# 2. The seed's echo task, message by message: `tools/call` returning a task, `tasks/get`
#    showing `input_required`, `tasks/result` carrying the `inputRequests`,
#    `tasks/input_response` answering; and the same flow in the released
#    `io.modelcontextprotocol/tasks` extension (`tasks/get`, `tasks/update`).
# 3. `provision_vm`: a confirmation asked the MRTR way (nothing stored), then
#    `ctx.become_task()` and long work with progress in the task.
# 4. A replica dying mid-task and another taking the task over from its checkpoint.
# 5. In the simulation: what a persistent share costs, what fails and what waits in a
#    crash or a store outage, how MRTR's advantage shrinks as the share grows, and when
#    to choose which.
#
# The replicas in this notebook run inside its own process (no ports); the takeover
# needs a store two replicas share, so that part starts a throwaway `redis-server` on a
# free port of 127.0.0.1 and stops it when done.

# %% tags=["parameters"]
import os

# The tests set QUICK=1 to run a shorter version of the notebook.
QUICK = os.environ.get("QUICK") == "1"
# What the simulated user answers.
ECHO_INPUT = "Hello World!"
VM_NAME = "build-agent-7"
# The live replicas: how often clients poll, how long provision_vm works, how long a
# replica's claim on a task lasts without renewal (the server's default is 10 s).
POLL_INTERVAL_MS = 50
PROVISION_S = 2.0
LEASE_S = 1.0
# The simulation: replications, simulated time, the persistent shares swept.
REPLICATIONS = 1 if QUICK else 3
SIM_SEED = 7
ARRIVAL_RATE_PER_S = 4.0 if QUICK else 8.0
HORIZON_S = 300.0 if QUICK else 900.0
WARMUP_S = 60.0 if QUICK else 300.0
FAULT_AT_S = 150.0 if QUICK else 450.0
SHARES = [0.0, 0.2, 1.0] if QUICK else [0.0, 0.05, 0.1, 0.2, 0.5, 0.75, 1.0]

# %%
import base64
import contextlib
import logging
import re
import time

import matplotlib.pyplot as plt
import pandas as pd
import result_tables
import traffic
from answers import hidden_answer
from starlette.testclient import TestClient

import labsim
from labsim import study
from labsim.study import plots
from labsim.study.persistent_sweep import advantage, share_sweep
from loadtest.harness.redis_server import RedisServer
from server.app import create_app
from server.client import EXTENSION, SEED, Handlers, MrtrClient
from server.config import ServerConfig, StateKey

# The replica that takes a task over says so in its log; the notebook shows it another way.
logging.getLogger("server").setLevel(logging.ERROR)

# %% [markdown]
# Every replica shares the keys that seal `requestState` and the secret that signs
# bearer tokens; this notebook makes fresh ones. A replica here is an ASGI app served in
# this process; `running(app)` starts it (with its background work: task runs need a
# living event loop) and yields a client, and leaving the block stops the replica.

# %%
STATE_KEY = StateKey("k1", os.urandom(32))
JWT_SECRET = base64.b64encode(os.urandom(32)).decode()
user = Handlers(elicit=traffic.form_filler(input=ECHO_INPUT, confirm=True))


def replica_app(replica_id: str, **settings) -> object:
    """An in-process replica with this notebook's keys, polling fast."""
    config = ServerConfig(
        replica_id=replica_id,
        state_keys=(STATE_KEY,),
        jwt_secret=JWT_SECRET,
        task_poll_interval_ms=POLL_INTERVAL_MS,
        **settings,
    )
    return create_app(config)


@contextlib.contextmanager
def running(app: object):
    """Serve `app` in this process until the block ends; yields a client for it."""
    with TestClient(app, base_url="http://127.0.0.1") as http:
        yield MrtrClient("http://127.0.0.1/mcp", http=http, handlers=user)


def answers_for(input_requests: dict) -> dict:
    """What the user answers to each question, by its key."""
    return {
        key: user.for_method(request["method"])(request.get("params") or {})
        for key, request in input_requests.items()
    }


def step(client: MrtrClient, flow, show: bool = True):
    """Send the flow's next message, take in the response, and print both."""
    exchange = flow.next_exchange()
    client.send(exchange)
    flow.take(exchange)
    if show:
        print(f"--> {exchange.method}")
        traffic.show(exchange.rounds[-1].request)
        print("<--")
        traffic.show(exchange.rounds[-1].response)
    return exchange


# %% [markdown]
# ## 1. Ephemeral and persistent
#
# An **ephemeral** tool (MRTR) answers each request with its result or with
# `input_required` and a sealed `requestState`. While the user thinks, the call's state is
# in the client; any replica can serve the next round with nothing shared but keys; a
# crash costs the request in progress, which the client retries; a store outage costs
# nothing, as there is no store; the state expires with the sealed token (10 minutes).
#
# A **persistent** tool (a task) answers `tools/call` with a task: an id, a status, a
# `pollInterval` and a `ttl`. While the user thinks, the task is in the task store; any
# replica that reaches the store can serve the next request; a crash costs the work since
# the last checkpoint, and another replica takes over; a store outage refuses new tasks
# and fails requests while it lasts, and loses nothing acknowledged if the store keeps
# its data; the task lives for its `ttl` (an hour by default).
#
# The same tool can be either. Called plainly, `echo` is an ordinary MRTR tool: one
# `input_required` round, then the result.

# %%
with running(replica_app("A")) as client:
    plain = client.run(client.exchange("tools/call", {"name": "echo", "arguments": {}}))
traffic.rounds_table(plain)

# %% [markdown]
# ## 2. The seed's echo task, message by message
#
# A client that declares the seed's `tasks` capability and adds `task: {ttl}` to
# `tools/call` gets a task back at once. The tool runs in the background; it asks for
# `echo_input`, so the task parks in `input_required` with its question in the store and
# no coroutine waiting anywhere. The client sees that in `tasks/get`, fetches the
# question with `tasks/result`, answers with `tasks/input_response`, and polls again
# until the task is `completed`; a last `tasks/result` carries the tool's result. Every
# message below is real (long ids shortened; `_meta` omitted, it repeats the client's
# capabilities on every request).

# %%
replica_a = replica_app("A")
with running(replica_a) as client:
    flow = client.task_flow(SEED)
    client.run(flow.create("echo", {}, ttl_ms=60_000, max_rounds=8))
    flow.created()
    print("--> tools/call")
    traffic.show(flow.creation.rounds[-1].request)
    print("<--")
    traffic.show(flow.creation.rounds[-1].response)
    while flow.next_step != "done":
        if flow.next_step == "answer":
            flow.answer(answers_for(flow.input_requests))
            print(f"\n(the user answers {ECHO_INPUT!r})\n")
            continue
        if flow.next_step == "wait":
            time.sleep(flow.poll_interval_s)
        step(client, flow)
print("\nresult:", flow.text)

# %% [markdown]
# The released extension (`io.modelcontextprotocol/tasks`, declared under
# `extensions`) is the same flow with fewer methods: the server decides to make a task
# (`resultType: "task"`, `ttlMs`, `pollIntervalMs`), `tasks/get` carries the questions
# and, at the end, the result, and `tasks/update` answers. The same store serves both.

# %%
with running(replica_a) as client:
    flow = client.task_flow(EXTENSION)
    client.run(flow.create("echo", {}, ttl_ms=None, max_rounds=8))
    flow.created()
    traffic.show(flow.creation.rounds[-1].response)
    while flow.next_step != "done":
        if flow.next_step == "answer":
            flow.answer(answers_for(flow.input_requests))
            continue
        if flow.next_step == "wait":
            time.sleep(flow.poll_interval_s)
        step(client, flow)
print("\nresult:", flow.text)

# %% [markdown]
# ## 3. `provision_vm`: ephemeral, then persistent
#
# Provisioning a machine costs money, so `provision_vm` first asks for confirmation, the
# MRTR way: an `input_required` round whose state is in `requestState`, nothing stored. A
# user who says no leaves no trace on the server. Only after the yes does the handler
# call `await ctx.become_task()`: from there the call is a task, its four steps reported
# in the task's `statusMessage`, each report saving the handler's `ctx.state` as a
# checkpoint. There is no way back from a task to an ephemeral call.

# %%
with running(replica_app("A")) as client:
    flow = client.task_flow(EXTENSION)
    client.run(
        flow.create(
            "provision_vm", {"name": VM_NAME, "seconds": PROVISION_S}, ttl_ms=None, max_rounds=8
        )
    )
    flow.created()
    creation = traffic.rounds_table(flow.creation)
    seen = []
    while flow.next_step != "done":
        time.sleep(flow.poll_interval_s)
        step(client, flow, show=False)
        seen.append(flow.task.get("statusMessage"))
creation[["answers sent", "requestState sent (bytes)", "result type", "questions asked"]]

# %%
print("status messages, in order:", *dict.fromkeys(seen), sep="\n  ")
print("result:", flow.text)

# %% [markdown]
# ## 4. A replica dies mid-task; another takes it over
#
# Two replicas, A and B, share a task store (Redis). The client creates a
# `provision_vm` task on A, which runs it. Once the task is into its second step, A
# stops: its event loop ends and its runs with it, writing nothing more to the store, as
# a killed process would. The client then polls B. The task still says `working`, but
# A's lease (`LEASE_S` here, 10 s by default) is no longer renewed; the first read after
# it lapses claims the task for B, which runs the handler again from the checkpoint and
# skips the steps A had finished.

# %%
if not RedisServer.available():
    print("redis-server is not installed: `make setup` installs it. Skipping the takeover.")
    polls = pd.DataFrame(columns=["time_s", "polled", "status", "step", "message"])
else:
    polls_seen = []
    with RedisServer() as redis:
        # This throwaway Redis keeps no append-only file: fine for a demo, so say so.
        shared = {"task_store": redis.url, "task_lease_s": LEASE_S, "task_store_volatile": True}
        app_a, app_b = replica_app("A", **shared), replica_app("B", **shared)
        with running(app_b) as on_b:
            with running(app_a) as on_a:
                flow = on_a.task_flow(EXTENSION)
                arguments = {"name": VM_NAME, "seconds": PROVISION_S}
                on_a.run(flow.create("provision_vm", arguments, ttl_ms=None, max_rounds=8))
                flow.created()
                started = time.monotonic()
                while "(2/4)" not in (flow.task.get("statusMessage") or ""):
                    time.sleep(flow.poll_interval_s)
                    step(on_a, flow, show=False)
                    polls_seen.append((time.monotonic() - started, "A", dict(flow.task)))
            stopped_s = time.monotonic() - started
            while flow.next_step != "done":
                time.sleep(flow.poll_interval_s)
                step(on_b, flow, show=False)
                polls_seen.append((time.monotonic() - started, "B", dict(flow.task)))
    polls = pd.DataFrame(
        [
            {
                "time_s": t,
                "polled": replica,
                "status": task["status"],
                "step": int(m.group(1)) if (m := re.search(r"\((\d)/4\)", message)) else None,
                "message": message,
            }
            for t, replica, task in polls_seen
            if (message := task.get("statusMessage") or "")
        ]
    )
    print(f"A stopped {stopped_s:.2f} s after the task was created")
    print("result:", flow.text, "| ran on:", flow.result["structuredContent"]["replicas"])
polls.drop_duplicates("message").astype({"step": "Int64"}).round({"time_s": 2}).rename(
    columns={"time_s": "time since created (s)", "polled": "replica polled"}
).set_index("time since created (s)")

# %% [markdown]
# The figure puts the polls on a time line: the step the task reports, and which
# replica answered the poll. Between A's stop and the takeover the task stands still for
# up to one lease: that is the price of not knowing whether a silent replica is dead or
# slow. The step A was in when it stopped is done again on B: the checkpoint is taken at
# the start of each step.

# %%
if len(polls):
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for replica, colour in (("A", "tab:blue"), ("B", "tab:green")):
        mine = polls[polls["polled"] == replica]
        ax.plot(
            mine["time_s"],
            mine["step"],
            "o",
            ms=3,
            color=colour,
            label=f"poll answered by {replica}",
        )
    ax.axvline(stopped_s, color="black", linestyle=":", label="A stops")
    resumed = polls[polls["message"].str.startswith("Resumed")]
    if len(resumed):
        ax.axvline(
            resumed["time_s"].iloc[0], color="tab:green", linestyle="--", label="B takes over"
        )
    ax.set_xlabel("time since the task was created (s)")
    ax.set_ylabel("step reported (of 4)")
    ax.set_title("provision_vm across a replica's death")
    ax.legend(loc="lower right", fontsize="small")
    ax.grid(True, alpha=0.3)
    plt.show()

# %% [markdown]
# ## 5. The simulation: a persistent share in a deployment
#
# `labsim` models tasks the same way (`labsim/model/architectures/persistent.py`, described in
# `docs/model.md`): a share of the calls become tasks with 60 s of work in 4
# checkpointed steps, a 10 s lease renewed every third of it, a client polling every
# 250 ms, and the task in the shared store, **under every architecture**. So MRTR, which
# needs no store for its ephemeral calls, pays for one as soon as a single call is a
# task. The scenarios `persistent`, `persistent-crash` and `persistent-store-outage` put
# a fifth of the calls in tasks (`python -m labsim compare --scenario persistent`).

# %%
window = {"horizon_s": HORIZON_S, "warmup_s": WARMUP_S, "arrival_rate_per_s": ARRIVAL_RATE_PER_S}
calm = study.compare(["steady", "persistent"], REPLICATIONS, seed=SIM_SEED, **window)
faults = study.compare(
    ["persistent-crash", "persistent-store-outage"],
    REPLICATIONS,
    seed=SIM_SEED,
    at_s=FAULT_AT_S,
    **window,
)
comparison = pd.concat([calm, faults], ignore_index=True)
cost = ["cost_per_million_calls_usd", "store_share_of_bill", "store_ops", "mean_held_bytes"]
result_tables.readable(
    comparison[comparison["scenario"].isin(["steady", "persistent"])], cost, by="scenario"
)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, name in zip(axes, ["steady", "persistent"], strict=True):
    plots.cost_bars(comparison, name, ax=ax)
fig.tight_layout()
plt.show()

# %% [markdown]
# Without tasks, MRTR and the sticky balancer pay no store at all, and the SSE
# architecture pays its minimum (ElastiCache Serverless bills at least 1 GB-hour every
# hour). With a fifth of the calls as tasks, every architecture pays that minimum, plus
# the polls: a task polled every 250 ms for a minute is some 240 requests, each a store
# read. At this small deployment the store's minimum charge dominates the difference.
#
# What goes wrong with tasks, per architecture (the same for all three, since every one
# keeps its tasks in the same store; the other calls are another matter):

# %%
failures = [
    "tasks_started",
    "tasks_completed",
    "tasks_taken_over",
    "task_wasted_work_s",
    "tasks_rejected",
    "task_store_errors",
    "tasks_lost",
    "failed",
]
result_tables.readable(comparison[comparison["scenario"] != "steady"], failures, by="scenario")

# %% [markdown]
# - **Crash**: the tasks running on the dead replica are taken over once their lease
#   lapses; each loses at most one step of work; none is lost. Under the legacy
#   architectures the *other* calls held on that replica are cut, as in notebook 5.
# - **Store outage**: tasks cannot be created (the client gets a clear error within the
#   store timeout and retries; some give up: `tasks refused`), polls and answers fail
#   until the store is back, runs whose checkpoint cannot be written stop and are taken
#   over afterwards. Nothing acknowledged is lost, because the store keeps its data (Redis
#   with its append-only file, or a replicated store). MRTR's ephemeral calls do not
#   notice the outage at all; the SSE architecture's fail.
#
# A store that keeps nothing (Redis without persistence, restarted) is another story:

# %%
volatile = study.compare(
    "persistent-store-outage", REPLICATIONS, seed=SIM_SEED, architectures=["mrtr"],
    at_s=FAULT_AT_S, store_keeps_tasks=False, **window,
)  # fmt: skip
result_tables.readable(
    volatile, ["tasks_started", "tasks_completed", "tasks_lost", "tasks_abandoned"]
)

# %% [markdown]
# ## 6. The share sweep: where MRTR's advantage goes
#
# From no persistent calls to all of them. Three things to watch: the bill, the store's
# part of it, and the memory the legacy architectures hold while users think (tasks hold
# none: a task waiting for its user is a record in the store).

# %%
sweep = share_sweep(SHARES, REPLICATIONS, seed=SIM_SEED, **window)
plots.share_sweep(sweep)
plt.show()

# %%
saved = advantage(sweep).rename(columns=result_tables.label)
saved.columns.name = "MRTR saves, USD per million calls, against"
saved.index = pd.Index((saved.index * 100).round().astype(int), name="persistent calls (%)")
saved.round(2) + 0.0  # + 0.0 turns a rounded -0.00 into 0.00

# %% [markdown]
# MRTR's saving on the bill is the store, and it goes in one step: the first persistent
# call brings the store's minimum charge back. What stays is what MRTR does for the
# ephemeral calls: no memory held while users think, no calls cut in a crash or a
# rollout, no failures in a store outage. Those shrink in proportion as the share grows,
# and at 100% the three architectures are one: every call is a task.
#
# ## 7. Which one, then?
#
# - **Ephemeral (MRTR)** for a tool that asks and answers within a request's time: the
#   state is small and fits in `requestState`, the work is seconds at most, and the
#   client is there to retry. Nothing to store, nothing to lose.
# - **Persistent (a task)** for work that outlives a request or a client: minutes of
#   work, a result someone fetches later, progress worth checkpointing. Pay for a store
#   that keeps its data, poll at a sensible interval, choose a TTL longer than the
#   slowest user, and a lease long enough not to take over a replica that is merely slow.
# - **Both, in one tool**, as `provision_vm` does: ask the MRTR way while nothing is
#   worth keeping, `become_task()` once something is.

# %% [markdown]
# ## Exercises
#
# Solutions are in the collapsed cells under each exercise: click the three dots to open
# one, after you have tried.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** A task lives `ttl_s` from its creation, whatever its status. Simulate
# the `persistent` scenario for MRTR with TTLs of 60 s, 120 s and one hour. How many
# tasks expire before their client is done? What sets the smallest safe TTL?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    for ttl_s in (60.0, 120.0, 3600.0):
        params = study.scenarios.build("persistent", ttl_s=ttl_s, **window)
        summary = labsim.simulate(params, "mrtr", seed=SIM_SEED).summary
        print(
            f"ttl {ttl_s:>6g} s: "
            f"{summary['tasks_expired']} of {summary['tasks_started']} tasks expired"
        )
    # The work (60 s) plus the users' think time, whose tail is long (lognormal, p95 about
    # two minutes per question): a TTL shorter than that expires tasks whose users are still
    # thinking. Choose it from the think-time tail, not the work.

# %% [markdown] tags=["exercise"]
# **Exercise 2.** The lease decides how soon a dead replica's task moves on, and how
# easily a slow replica's task is taken from it. Simulate `persistent-crash` for MRTR
# with leases of 2 s, 10 s and 60 s, and compare the takeovers and the work done twice.
# Then repeat the live takeover of section 4 with `LEASE_S = 3.0`: how long does the
# task stand still?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    for lease_s in (2.0, 10.0, 60.0):
        params = study.scenarios.build(
            "persistent-crash", lease_s=lease_s, at_s=FAULT_AT_S, **window
        )
        result = labsim.simulate(params, "mrtr", seed=SIM_SEED)
        taken = result.tasks.loc[result.tasks["taken_over"] > 0, "call"]
        waited_s = result.calls.set_index("call").loc[taken, "server_latency_s"].mean()
        print(
            f"lease {lease_s:>4g} s: {result.summary['tasks_taken_over']} takeovers, "
            f"{result.summary['task_wasted_work_s']:.0f} s of work done twice, "
            f"server time of the tasks taken over {waited_s:.0f} s"
        )
    # The work done twice is at most a step per takeover whatever the lease; a longer lease
    # only makes the task wait longer before someone resumes it (live: about LEASE_S after
    # the stop). A shorter one risks a takeover of a replica that is only paused (a long
    # garbage collection, a saturated event loop): then the work runs twice at once, and
    # only the compare-and-set on the task keeps the outcome single.

# %% [markdown] tags=["exercise"]
# **Exercise 3.** Polling is the cost of a task that nobody sees. Sweep the client's
# poll interval (`poll_interval_s`: 0.25, 1 and 5 s) in the `persistent` scenario for
# MRTR. What happens to the store operations, the bill, and the time a user waits for a
# finished task?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    for interval_s in (0.25, 1.0, 5.0):
        params = study.scenarios.build("persistent", poll_interval_s=interval_s, **window)
        result = labsim.simulate(params, "mrtr", seed=SIM_SEED)
        done = result.tasks[result.tasks["outcome"] == "completed"]
        latency = result.calls.set_index("call").loc[done["call"], "server_latency_s"].mean()
        print(
            f"poll every {interval_s:>4g} s: "
            f"{result.summary['task_store_ops']:>8,} store operations, "
            f"{result.summary['cost_per_million_calls_usd']:.2f} USD per million calls, "
            f"a completed task's server time {latency:.1f} s"
        )
    # Store operations fall with the interval, towards the floor the runs' own writes set (a
    # lease renewal every third of the lease, a checkpoint per step); the user waits on
    # average half an interval more per status change. The bill hardly moves at this size:
    # the store's minimum charge, not its operations, dominates it.
