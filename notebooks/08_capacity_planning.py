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
# # 8. Capacity planning: how many replicas, and what bill, for my load?
#
# The earlier notebooks compared the architectures on a fixed fleet. An architect starts
# from the other end: *this many calls per second, users who think this long, this
# latency target, replicas of this size: how many do I need, and what will it cost?*
# `python -m labsim plan` answers that for each architecture, and this notebook takes
# the answer apart.
#
# **What you will learn**
#
# 1. How `plan` right-sizes a fleet: a first guess from CPU, memory (base + held calls x
#    bytes per held call), connections and Little's law, confirmed by simulation, with
#    the run one replica smaller that fails.
# 2. Where each constraint starts to bind as users think longer and as a held call
#    weighs more, and why MRTR's fleet does not grow with think time.
# 3. What an autoscaler does to each architecture: sticky sessions leave new replicas
#    idle after a scale-out, and a legacy scale-in cuts the calls it still holds.
# 4. Think time against the requestState lifetime (TTL): who is asked again.

# %% tags=["parameters"]
import os

# The tests set QUICK=1 to run a shorter version of the notebook.
QUICK = os.environ.get("QUICK") == "1"
SEED = 8
# The architect's workload, SLO and replica shape (the acceptance's first regime).
RATE_PER_S = 10.0
THINK_MEDIAN_S = 90.0
SLO_P95_MS = 400.0
MEMORY_GB_PER_REPLICA = 0.5
CONNECTION_LIMIT = 256
REPLICATIONS = 1 if QUICK else 3
MEASURE_S = 60.0 if QUICK else 300.0
THINK_SWEEP_S = [1, 10, 30, 90, 300] if QUICK else [1, 3, 10, 30, 60, 90, 180, 300, 600]
HELD_KIB_SWEEP = [4, 41, 256, 1024, 4096]
TTL_THINK_MEDIANS_S = [60, 300, 900] if QUICK else [30, 60, 120, 300, 600, 900, 1800]

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import tables
from answers import hidden_answer
from IPython.display import display
from scipy import stats

import labsim
from labsim import ARCHITECTURES, study
from labsim.study.capacity import first_guess, plan, plan_table
from labsim.study.plan_request import PlanRequest

# %% [markdown]
# ## 1. The plan, per architecture
#
# The request below is the architect's question. `plan` makes a first guess per
# architecture, then simulates fleets around it (`REPLICATIONS` seeded runs each) until
# it has the smallest one that meets the SLO and every limit, and the one just below it
# that does not. The same answer comes from the command line:
#
# ```sh
# python -m labsim plan --rate 10 --think-median-s 90 --slo-p95-ms 400 \
#     --memory-gb-per-replica 0.5 --connection-limit 256 --json plan.json
# ```

# %%
request = PlanRequest(
    rate_per_s=RATE_PER_S,
    think_median_s=THINK_MEDIAN_S,
    slo_p95_ms=SLO_P95_MS,
    memory_gb_per_replica=MEMORY_GB_PER_REPLICA,
    connection_limit=CONNECTION_LIMIT,
    replications=REPLICATIONS,
    measure_s=MEASURE_S,
    seed=SEED,
)
answer = plan(request, processes=2)
print(plan_table(answer))

# %% [markdown]
# Read the *binding constraint* row first. MRTR holds nothing while users think, so its
# fleet is sized by CPU or latency. The legacy architectures hold one SSE stream, and
# the memory of a suspended call, per user who is thinking: at 90 s of think time that is
# hundreds of streams, and a replica that accepts 256 connections fills up long before
# its CPU does. The bill follows the replicas, plus the store for `sse-store`:

# %%
costs = pd.DataFrame(
    {tables.label(a): r["cost_breakdown"] for a, r in answer["architectures"].items()}
).T[["replicas_usd", "store_usd", "egress_usd"]]
ax = costs.plot.bar(stacked=True, figsize=(7, 3.5), rot=0)
ax.set_ylabel("USD per month")
ax.set_title(f"{RATE_PER_S:g} calls/s, users think {THINK_MEDIAN_S:g} s (median)")
plt.show()

# %% [markdown]
# ## 2. Where each constraint starts to bind
#
# The first guess is cheap (no simulation), so it can be swept. For each architecture and
# each think time, the replicas each limit needs on its own: the largest is the fleet.
# Held calls grow with think time (Little's law: held = arrival rate x questions x time
# held per question), so the legacy fleets grow with it; MRTR's stays where its CPU puts
# it.

# %%
base = labsim.SimParams()


def needs_by_think(think_s: float, architecture: str) -> dict[str, int]:
    shaped = PlanRequest(RATE_PER_S, think_s, SLO_P95_MS, MEMORY_GB_PER_REPLICA, CONNECTION_LIMIT)
    return first_guess(shaped, base, architecture)


fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, architecture in zip(axes, ("sticky", "mrtr"), strict=True):
    needs = pd.DataFrame([needs_by_think(t, architecture) for t in THINK_SWEEP_S])
    needs.index = THINK_SWEEP_S
    needs[["cpu", "memory", "connections"]].plot(ax=ax, marker="o", logx=True)
    ax.set_title(tables.label(architecture))
    ax.set_xlabel("median think time (s)")
axes[0].set_ylabel("replicas needed by this limit alone")
plt.show()

# %% [markdown]
# Now hold the think time and vary what a held call weighs. The lab's server measures
# about 25 KiB of resident memory per held `get_weather` call (`labsim/measured.json`);
# a tool that keeps a large object graph alive while it waits (a parsed document, a
# database session) weighs far more. Past a few hundred KiB per call, memory overtakes
# connections as the limit that binds a 0.5 GB replica:

# %%
rows = []
for kib in HELD_KIB_SWEEP:
    heavy = base.with_overrides(held_call_bytes=kib * 1024)
    rows.append({"KiB per held call": kib, **first_guess(request, heavy, "sticky")})
held = pd.DataFrame(rows).set_index("KiB per held call")
ax = held[["cpu", "memory", "connections"]].plot(marker="o", logx=True, figsize=(6, 3.5))
ax.set_ylabel("replicas needed (sticky)")
plt.show()
held.add_prefix("replicas needed for ")

# %% [markdown]
# ## 3. Autoscaling: a fleet that follows the load
#
# A fixed fleet is sized for the peak. The `autoscale` scenario runs a target-tracking
# autoscaler (CPU target 50%, as ECS and the Kubernetes HPA do it) while the load triples
# for a quarter of an hour. Users come in sessions of several calls; behind a sticky
# balancer a session keeps its cookie, so a replica added at the scale-out only gets
# *new* sessions. The timelines: replicas billed, each replica's share of the CPU work,
# and the memory held.

# %%
scaled = study.scenarios.build("autoscale")
runs = {a: labsim.simulate(scaled, a, seed=SEED) for a in ("sticky", "mrtr")}
fig, axes = plt.subplots(3, 2, figsize=(11, 8), sharex=True)
for column, (architecture, run) in enumerate(runs.items()):
    axes[0, column].step(run.timeline["time_s"], run.timeline["replicas_billed"], where="post")
    axes[0, column].set_title(tables.label(architecture))
    axes[0, column].set_ylabel("replicas billed")
    share = run.replicas.pivot_table(index="time_s", columns="replica", values="cpu_share")
    share.plot(ax=axes[1, column], legend=False)
    axes[1, column].set_ylabel("share of CPU work")
    axes[2, column].plot(run.timeline["time_s"], run.timeline["held_bytes"] / 1e6)
    axes[2, column].set_ylabel("held memory (MB)")
    axes[2, column].set_xlabel("time (s)")
    for ax in axes[:, column]:
        for t in run.events.query("kind in ['scale-out', 'scale-in']")["time_s"]:
            ax.axvline(t, color="grey", linestyle=":")
plt.show()

# %% [markdown]
# After the scale-out, MRTR's replicas share the work evenly at once: every round is a
# new request the balancer deals out. Sticky's new replicas start near zero and catch up
# only as old sessions end, so the old replicas stay hot for minutes: an autoscaler
# reading the *average* CPU sees the target met while two replicas run far above it. At
# the scale-in MRTR's replicas stop at once; the legacy ones still hold thinking users
# and cut them at the drain timeout:

# %%
summary = tables.columns(
    {
        tables.label(a): {
            "replica-hours": r.summary["replica_hours"],
            "bill (USD)": r.summary["cost_total_usd"],
            "calls cut at scale-in": int(
                r.events.query("kind == 'cut'")["detail"].str.split().str[0].astype(int).sum()
            ),
            "answers asked again": r.summary["re_prompts"],
            "p95 server latency (ms)": r.summary["p95_latency_s"] * 1e3,
        }
        for a, r in runs.items()
    },
    digits=3,
)
summary

# %% [markdown]
# ## 4. Think time against the requestState lifetime
#
# MRTR's sealed `requestState` expires (600 s by default, the server's `--state-ttl-s`).
# A user who answers a later round after that is not stranded: the server answers
# `input_required` again, from the first question. Who is affected is a question of the
# think-time distribution: the share of answers later than the TTL is the lognormal's
# tail beyond it. The simulation (a two-round tool, users who may take all day) agrees:

# %%
ttl_s = base.state.state_ttl_s
rows = []
for median_s in TTL_THINK_MEDIANS_S:
    slow = base.with_overrides(
        tools=("update_work_item",),
        tool_mix=(1.0,),
        think_median_s=float(median_s),
        never_answer_fraction=0.0,
        answer_timeout_s=86_400.0,
        arrival_rate_per_s=1.0,
        horizon_s=2400.0 if QUICK else 7200.0,
        warmup_s=600.0,
    )
    calls = labsim.simulate(slow, "mrtr", seed=SEED).measured_calls()
    expiries = calls["expired_states"].sum()
    carrying = calls["answers"].sum() - len(calls) - expiries
    rows.append(
        {
            "median think (s)": median_s,
            "simulated share asked again": expiries / carrying,
            "P(think > TTL)": stats.lognorm(s=base.workload.think_sigma, scale=median_s).sf(ttl_s),
        }
    )
ttl = pd.DataFrame(rows).set_index("median think (s)")
ax = ttl.plot(marker="o", logx=True, figsize=(6, 3.5))
ax.set_ylabel(f"answers after the {ttl_s:g} s TTL")
plt.show()
ttl.round(3)

# %% [markdown]
# ## Exercises
#
# Solutions are in the collapsed cells under each exercise: click the three dots to open
# one, after you have tried.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** Give the replicas room: 4 GB and 4,096 connections, and users who
# answer in about a second. Which constraint binds now, and how far apart are the three
# fleets? (Use `first_guess` for a quick answer, `plan` to confirm.)

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    roomy = PlanRequest(RATE_PER_S, 1.0, SLO_P95_MS, 4.0, 4096, replications=1, measure_s=60.0)
    guesses = {
        tables.label(a): {
            f"replicas for {limit}": n for limit, n in first_guess(roomy, base, a).items()
        }
        for a in ARCHITECTURES
    }
    display(tables.columns(guesses))
    # Every architecture is now sized by its CPU: the held calls are few (Little's law with
    # 1 s of thinking), so the three fleets land within a replica of each other.

# %% [markdown] tags=["exercise"]
# **Exercise 2.** At what median think time does a sticky fleet of 0.5 GB, 256-connection
# replicas need twice the replicas MRTR needs, for `RATE_PER_S` calls per second?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    for think_s in np.geomspace(1, 600, 25):
        sticky = max(needs_by_think(think_s, "sticky").values())
        mrtr = max(needs_by_think(think_s, "mrtr").values())
        if sticky >= 2 * mrtr:
            print(f"from about {think_s:.0f} s: sticky {sticky} replicas, MRTR {mrtr}")
            break

# %% [markdown] tags=["exercise"]
# **Exercise 3.** Scale on requests in flight per replica instead of CPU
# (`metric="in-flight"`). Held SSE streams count as requests in flight: what does that do
# to the sticky fleet's size and bill compared with MRTR's?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    from labsim.model.autoscale import Autoscaler

    by_in_flight = scaled.with_overrides(autoscaler=Autoscaler(metric="in-flight", target=20.0))
    for architecture in ("sticky", "mrtr"):
        result = labsim.simulate(by_in_flight, architecture, seed=SEED).summary
        print(f"{architecture}: {result['replica_hours']:.2f} replica-hours")
    # The held streams are in flight for the whole think time, so the sticky fleet scales out
    # for users who are thinking, not for work: many more replica-hours for the same CPU.
