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
# free port of 127.0.0.1 and stops it when done. Without `redis-server` (a laptop with
# only the notebooks' Python packages) that part says so and shows a run recorded on a
# machine that had it, marked RECORDED, with its date, commit and command.
#
# A line starting with ✓ is a sentence of this notebook checked against the results just
# computed: if the server or the model changes so that it no longer holds, the notebook
# stops there and says what changed.

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
import contextlib
import functools
import logging
import re
import time

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display
from starlette.testclient import TestClient

import labsim
from labsim import study
from labsim.study import plots
from labsim.study.persistent_sweep import advantage, share_sweep
from lessons import live_figures, result_tables, traffic
from lessons.answers import hidden_answer
from lessons.claims import claim
from lessons.lab_deployment import LabDeployment
from lessons.recordings import live_or_recorded
from loadtest.harness.redis_server import RedisServer
from server.client import EXTENSION, SEED, Handlers, MrtrClient
from server.config import ServerConfig

# The replica that takes a task over says so in its log; the notebook shows it another way.
logging.getLogger("server").setLevel(logging.ERROR)

# %% [markdown]
# Every replica shares the keys that seal `requestState` and the secret that signs
# bearer tokens; `LabDeployment` makes fresh ones and starts the server's own app with
# them. A replica here is an ASGI app served in this process, polling fast;
# `running(app)` starts it (with its background work: task runs need a living event
# loop) and yields a client, and leaving the block stops the replica.

# %%
lab = LabDeployment()
replica_app = functools.partial(lab.app, task_poll_interval_ms=POLL_INTERVAL_MS)
user = Handlers(elicit=traffic.form_filler(input=ECHO_INPUT, confirm=True))


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
defaults = ServerConfig(state_keys=lab.state_keys, jwt_secret=lab.jwt_secret)
claim(
    defaults.state_ttl_s == 600 and defaults.task_default_ttl_ms == 3_600_000,
    "a sealed state expires after 10 minutes, a task after an hour, by default",
    state_ttl_s=defaults.state_ttl_s,
    task_default_ttl_ms=defaults.task_default_ttl_ms,
)
with running(replica_app("A")) as client:
    plain = client.run(client.exchange("tools/call", {"name": "echo", "arguments": {}}))
echo_rounds = traffic.rounds_table(plain)
claim(
    list(echo_rounds["result type"]) == ["input_required", "complete"],
    "called plainly, echo is one input_required round, then the result",
    rounds=list(echo_rounds["result type"]),
)
echo_rounds

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
seed_methods = [exchange.method for exchange in flow.messages]
claim(
    flow.text == f"Echo: {ECHO_INPUT}"
    and {"tasks/get", "tasks/result", "tasks/input_response"} <= set(seed_methods),
    "the seed's flow: tasks/get, tasks/result for the question, tasks/input_response, and "
    "a last tasks/result with the tool's result",
    methods=seed_methods,
)

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
extension_methods = [exchange.method for exchange in flow.messages]
claim(
    flow.text == f"Echo: {ECHO_INPUT}"
    and set(extension_methods) == {"tasks/get", "tasks/update"}
    and extension_methods.count("tasks/update") == 1,
    "the extension's flow needs only tasks/get and one tasks/update",
    methods=extension_methods,
)

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
statuses = list(dict.fromkeys(seen))
print("status messages, in order:", *statuses, sep="\n  ")
print("result:", flow.text)
claim(
    list(creation["result type"]) == ["input_required", "task"]
    and creation.loc[1, "requestState sent (bytes)"] == 0
    and creation.loc[2, "requestState sent (bytes)"] > 0,
    "the confirmation is asked the MRTR way (its state in requestState), then the call "
    "becomes a task",
    creation=creation[["result type", "requestState sent (bytes)"]].to_dict("records"),
)
steps = [int(m.group(1)) for status in statuses if (m := re.search(r"\((\d)/4\)", status or ""))]
claim(steps == [1, 2, 3, 4], "its four steps are reported in order", steps=steps)

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
def take_a_task_over() -> dict:
    """A provision_vm task started on A, A stopped in its second step, B polled until done:
    every poll's time, replica and task, when A stopped, and the result."""
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
    polls = [
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
    return {
        "polls": polls,
        "stopped_s": stopped_s,
        "result": flow.text,
        "ran on": flow.result["structuredContent"]["replicas"],
    }


takeover = live_or_recorded(
    "07_persistent_tools",
    "takeover",
    needed={"redis-server": RedisServer.available()},
    parameters={
        "PROVISION_S": PROVISION_S,
        "LEASE_S": LEASE_S,
        "POLL_INTERVAL_MS": POLL_INTERVAL_MS,
    },
    run=take_a_task_over,
)
polls = pd.DataFrame(takeover.data["polls"])
stopped_s = takeover.data["stopped_s"]
print(f"A stopped {stopped_s:.2f} s after the task was created")
print("result:", takeover.data["result"], "| ran on:", takeover.data["ran on"])
claim(
    takeover.data["ran on"] == ["A", "B"] and polls["message"].str.startswith("Resumed on B").any(),
    "B took the task over from A, and the task says so",
    ran_on=takeover.data["ran on"],
)
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
fig = live_figures.takeover(
    polls, stopped_s, f"provision_vm across a replica's death ({takeover.note})"
)
plt.show()
lease_s = takeover.parameters["LEASE_S"]
resumed_s = polls.loc[polls["message"].str.startswith("Resumed"), "time_s"].iloc[0]
stepped = polls[polls["step"].notna()]
last_on_a = stepped.loc[stepped["time_s"] <= stopped_s, "step"].iloc[-1]
first_on_b = stepped.loc[stepped["time_s"] > resumed_s, "step"].iloc[0]
claim(
    resumed_s - stopped_s <= lease_s + 0.5,
    "between A's stop and the takeover the task stands still for up to one lease",
    stood_still_s=round(resumed_s - stopped_s, 2),
    lease_s=lease_s,
)
claim(
    first_on_b == last_on_a,
    "B does again the step A was in when it stopped",
    last_step_on_a=last_on_a,
    first_step_on_b=first_on_b,
)

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
means = comparison.pivot_table(index=["scenario", "architecture"], columns="metric", values="mean")

# %% [markdown]
# Without tasks, MRTR and the sticky balancer pay no store at all, and the SSE
# architecture pays its minimum (ElastiCache Serverless bills at least 1 GB-hour every
# hour). With a fifth of the calls as tasks, every architecture pays that minimum, plus
# the polls: a task polled every 250 ms for a minute is some 240 requests, each a store
# read. At this small deployment the store's minimum charge dominates the difference:
# with tasks, the three bills are within a percent of each other.

# %%
share = means["store_share_of_bill"]
tasks = study.scenarios.build("persistent").tasks
claim(
    share["steady", "mrtr"] == share["steady", "sticky"] == 0 and share["steady", "sse-store"] > 0,
    "without tasks only the SSE architecture pays a store",
    store_share=share["steady"].to_dict(),
)
claim(
    (share["persistent"] > 0).all(),
    "with a fifth of the calls as tasks every architecture pays one",
    store_share=share["persistent"].to_dict(),
)
claim(
    tasks.work_s / tasks.poll_interval_s == 240,
    "a task polled every 250 ms for a minute is some 240 requests",
    polls=tasks.work_s / tasks.poll_interval_s,
)
bills = means.loc["persistent", "cost_per_million_calls_usd"]
claim(
    bills.max() - bills.min() < 0.01 * bills.min(),
    "with tasks, the three bills are within a percent of each other",
    bills=bills.to_dict(),
)

# %% [markdown]
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
#   notice the outage at all (the only calls that fail under MRTR are the task calls
#   refused); the SSE architecture's fail.

# %%
crash, outage = means.loc["persistent-crash"], means.loc["persistent-store-outage"]
claim(
    (crash["tasks_taken_over"] > 0).all()
    and (crash["tasks_lost"] == 0).all()
    and (
        crash["task_wasted_work_s"] <= crash["tasks_taken_over"] * tasks.work_s / tasks.steps
    ).all(),
    "in a crash, tasks are taken over, each loses at most a step of work, none is lost",
    crash=crash[["tasks_taken_over", "task_wasted_work_s", "tasks_lost"]].to_dict("index"),
)
claim(
    (outage["tasks_rejected"] > 0).all()
    and (outage["task_store_errors"] > 0).all()
    and (outage["tasks_lost"] == 0).all(),
    "in a store outage, some tasks are refused and requests fail while it lasts, and "
    "nothing acknowledged is lost",
    outage=outage[["tasks_rejected", "task_store_errors", "tasks_lost"]].to_dict("index"),
)
claim(
    outage.loc["mrtr", "failed"] == outage.loc["mrtr", "tasks_rejected"]
    and outage.loc["sse-store", "failed"] > outage.loc["mrtr", "failed"],
    "MRTR's ephemeral calls do not notice the outage; the SSE architecture's fail",
    failed=outage["failed"].to_dict(),
    tasks_refused=outage["tasks_rejected"].to_dict(),
)

# %% [markdown]
# A store that keeps nothing (Redis without persistence, restarted) is another story:

# %%
volatile = study.compare(
    "persistent-store-outage", REPLICATIONS, seed=SIM_SEED, architectures=["mrtr"],
    at_s=FAULT_AT_S, store_keeps_tasks=False, **window,
)  # fmt: skip
lost = volatile.set_index("metric").loc["tasks_lost", "mean"]
claim(lost > 0, "a store that keeps nothing loses tasks in an outage", tasks_lost=lost)
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
# call brings the store's minimum charge back. Against the sticky balancer, which pays no
# store without tasks either, there was no saving to lose (MRTR's sealed state costs a
# little egress). What stays is what MRTR does for the ephemeral calls: no memory held
# while users think, no calls cut in a crash or a rollout, no failures in a store outage.
# Those shrink in proportion as the share grows, and at 100% the three architectures are
# one: every call is a task.

# %%
by_share = advantage(sweep)
held_saved = advantage(sweep, "mean_held_bytes")
first = min(s for s in SHARES if s > 0)
claim(
    by_share.loc[0.0, "sse-store"] > 1 and abs(by_share.loc[first, "sse-store"]) < 0.05,
    "against the SSE architecture the saving goes in one step, with the first persistent calls",
    saved=by_share["sse-store"].to_dict(),
)
claim(
    (by_share["sticky"].abs() < 0.05).all(),
    "against the sticky balancer there is no saving on the bill to lose",
    saved=by_share["sticky"].to_dict(),
)
claim(
    held_saved["sticky"].is_monotonic_decreasing and held_saved.loc[1.0].abs().max() == 0,
    "the memory MRTR saves shrinks as the share grows, and is gone at 100%",
    held_saved=held_saved["sticky"].to_dict(),
)

# %% [markdown]
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
# Each exercise has its answer under it, behind a **Show answer** button: what the
# solution finds and why, beside what its code prints. Try first. The solution's code is
# folded in the cell above the button; click the cell's collapsed-input bar (⋯) to read it.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** A task lives `ttl_s` from its creation, whatever its status. Simulate
# the `persistent` scenario for MRTR with TTLs of 60 s, 120 s and one hour. How many
# tasks expire before their client is done? What sets the smallest safe TTL?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    With a TTL of a minute or two, tasks **expire** before their client is done; with an
    hour, none does. A task must outlive its work (60 s here) **plus its users' think
    time**, and think times have a long tail (lognormal: the 95th percentile is about two
    minutes per question). Choose the TTL from that tail, not from the work.
    """
):
    expired = {}
    for ttl_s in (60.0, 120.0, 3600.0):
        params = study.scenarios.build("persistent", ttl_s=ttl_s, **window)
        summary = labsim.simulate(params, "mrtr", seed=SIM_SEED).summary
        expired[ttl_s] = summary["tasks_expired"]
        print(
            f"ttl {ttl_s:>6g} s: "
            f"{summary['tasks_expired']} of {summary['tasks_started']} tasks expired"
        )
    claim(
        expired[60.0] > 0 and expired[3600.0] == 0,
        "a TTL of a minute expires tasks whose users still think; an hour expires none",
        expired=expired,
    )

# %% [markdown] tags=["exercise"]
# **Exercise 2.** The lease decides how soon a dead replica's task moves on, and how
# easily a slow replica's task is taken from it. Simulate `persistent-crash` for MRTR
# with leases of 2 s, 10 s and 60 s, and compare the takeovers and the work done twice.
# Then repeat the live takeover of section 4 with `LEASE_S = 3.0`: how long does the
# task stand still?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    The work done twice is **at most a step per takeover**, whatever the lease: the
    checkpoint is taken at each step. A longer lease only makes the task **wait longer**
    before another replica resumes it: the server time of the tasks taken over grows with
    the lease (live, the task stands still for about `LEASE_S` after the stop).

    A shorter lease is no free lunch: it risks taking a task from a replica that is only
    paused (a long garbage collection, a saturated event loop). Then the work runs twice
    at once, and only the compare-and-set on the task keeps the outcome single.
    """
):
    waited = {}
    for lease_s in (2.0, 10.0, 60.0):
        params = study.scenarios.build(
            "persistent-crash", lease_s=lease_s, at_s=FAULT_AT_S, **window
        )
        result = labsim.simulate(params, "mrtr", seed=SIM_SEED)
        taken = result.tasks.loc[result.tasks["taken_over"] > 0, "call"]
        waited[lease_s] = result.calls.set_index("call").loc[taken, "server_latency_s"].mean()
        takeovers = result.summary["tasks_taken_over"]
        twice_s = result.summary["task_wasted_work_s"]
        print(
            f"lease {lease_s:>4g} s: {takeovers} takeovers, {twice_s:.0f} s of work done twice, "
            f"server time of the tasks taken over {waited[lease_s]:.0f} s"
        )
        claim(
            twice_s <= takeovers * tasks.work_s / tasks.steps,
            f"lease {lease_s:g} s: at most a step of work done twice per takeover",
            work_twice_s=twice_s,
            takeovers=takeovers,
        )
    claim(
        waited[2.0] < waited[10.0] < waited[60.0],
        "the longer the lease, the longer a task taken over waits",
        waited_s=waited,
    )

# %% [markdown] tags=["exercise"]
# **Exercise 3.** Polling is the cost of a task that nobody sees. Sweep the client's
# poll interval (`poll_interval_s`: 0.25, 1 and 5 s) in the `persistent` scenario for
# MRTR. What happens to the store operations, the bill, and the time a user waits for a
# finished task?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    **Store operations fall** with the interval, towards the floor the runs' own writes
    set (a lease renewal every third of the lease, a checkpoint per step). The **user
    waits longer**: on average half an interval more per status change, so a completed
    task's server time grows with the interval.

    **The bill moves far less than the operations**: a few percent while the operations
    fall by more than half. At this size the store's minimum charge, not its operations,
    dominates it.
    """
):
    by_interval = {}
    for interval_s in (0.25, 1.0, 5.0):
        params = study.scenarios.build("persistent", poll_interval_s=interval_s, **window)
        result = labsim.simulate(params, "mrtr", seed=SIM_SEED)
        done = result.tasks[result.tasks["outcome"] == "completed"]
        latency = result.calls.set_index("call").loc[done["call"], "server_latency_s"].mean()
        by_interval[interval_s] = {
            "store operations": result.summary["task_store_ops"],
            "USD per million calls": result.summary["cost_per_million_calls_usd"],
            "completed task's server time (s)": latency,
        }
    polling = pd.DataFrame(by_interval).T.rename_axis("poll interval (s)")
    display(polling.round(2))
    claim(
        polling["store operations"].is_monotonic_decreasing
        and polling["completed task's server time (s)"].is_monotonic_increasing,
        "polling less often means fewer store operations and a longer wait",
        polling=polling.to_dict("index"),
    )
    bill, operations = polling["USD per million calls"], polling["store operations"]
    claim(
        bill.min() > 0.9 * bill.max() and operations.min() < 0.5 * operations.max(),
        "the bill moves by less than a tenth while the store operations fall by more than half",
        bill=bill.to_dict(),
        operations=operations.to_dict(),
    )
