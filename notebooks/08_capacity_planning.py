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
#
# A line starting with ✓ is a sentence of this notebook checked against the results just
# computed: if the model changes so that it no longer holds, the notebook stops there and
# says what changed.

# %% tags=["parameters"]
import os

# The tests set QUICK=1 to run a shorter version of the notebook.
QUICK = os.environ.get("QUICK") == "1"
SEED = 8
# The architect's workload, SLO and replica shape (the acceptance's first regime).
RATE_PER_S = 10.0
THINK_MEDIAN_S = 90.0
SLO_P95_MS = 400.0
VCPUS_PER_REPLICA = 1.0
MEMORY_GB_PER_REPLICA = 2.0  # the least AWS Fargate sells with 1 vCPU
CONNECTION_LIMIT = 256
REPLICATIONS = 1 if QUICK else 3
MEASURE_S = 60.0 if QUICK else 300.0
THINK_SWEEP_S = [1, 10, 30, 90, 300] if QUICK else [1, 3, 10, 30, 60, 90, 180, 300, 600]
HELD_KIB_SWEEP = [4, 41, 256, 1024, 4096, 16384]
TTL_THINK_MEDIANS_S = [60, 300, 900] if QUICK else [30, 60, 120, 300, 600, 900, 1800]

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import result_tables
from answers import hidden_answer
from claims import claim
from IPython.display import display
from matplotlib.ticker import MaxNLocator
from scipy import stats

import labsim
from labsim import ARCHITECTURES, study
from labsim.study import plots
from labsim.study.capacity import first_guess, plan, simulated
from labsim.study.plan_report import table
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
# python -m labsim plan --rate 10 --think-median-s 90 --slo-p95-ms 400 --vcpus 1 \
#     --memory-gb-per-replica 2 --connection-limit 256 --json plan.json
# ```

# %%
request = PlanRequest(
    rate_per_s=RATE_PER_S,
    think_median_s=THINK_MEDIAN_S,
    slo_p95_ms=SLO_P95_MS,
    vcpus_per_replica=VCPUS_PER_REPLICA,
    memory_gb_per_replica=MEMORY_GB_PER_REPLICA,
    connection_limit=CONNECTION_LIMIT,
    replications=REPLICATIONS,
    measure_s=MEASURE_S,
    seed=SEED,
)
answer = plan(request, processes=2)
print(table(answer))

# %% [markdown]
# Read the *binding constraint* row first. MRTR holds nothing while users think, so its
# fleet is sized by CPU or latency. The legacy architectures hold one SSE stream, and
# the memory of a suspended call, per user who is thinking: at 90 s of think time that is
# hundreds of streams, and a replica that accepts 256 connections fills up long before
# its CPU does. The bill follows the replicas, plus the store for `sse-store`:

# %%
costs = pd.DataFrame(
    {result_tables.label(a): r["cost_breakdown"] for a, r in answer["architectures"].items()}
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
def needs_by_think(think_s: float, architecture: str) -> dict[str, int]:
    shaped = PlanRequest(
        RATE_PER_S, think_s, SLO_P95_MS, MEMORY_GB_PER_REPLICA, CONNECTION_LIMIT,
        vcpus_per_replica=VCPUS_PER_REPLICA,
    )  # fmt: skip
    return first_guess(shaped, simulated(shaped, architecture), architecture)


# A line per limit; where limits need the same replicas, each later line is narrower and
# broken, with a smaller marker, so every one stays visible.
LIMITS = {
    "cpu": {"marker": "o", "markersize": 8, "linewidth": 3.0, "alpha": 0.7},
    "memory": {"marker": "s", "markersize": 5, "linewidth": 1.8, "linestyle": "--"},
    "connections": {"marker": "^", "markersize": 4, "linewidth": 1.2, "linestyle": ":"},
}
fleets = {}
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, architecture in zip(axes, ("sticky", "mrtr"), strict=True):
    needs = pd.DataFrame([needs_by_think(t, architecture) for t in THINK_SWEEP_S])
    needs.index = THINK_SWEEP_S
    fleets[architecture] = needs
    for limit, style in LIMITS.items():
        ax.plot(needs.index, needs[limit], label=limit, **style)
    ax.set_xscale("log")
    ax.set_title(result_tables.label(architecture))
    ax.set_xlabel("median think time (s, log scale)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
axes[0].set_ylabel("replicas needed by this limit alone")
axes[0].legend(title="limit", fontsize="small", loc="upper left", bbox_to_anchor=(0, 1))
fig.tight_layout()
plt.show()

# %%
sticky_fleet = fleets["sticky"].max(axis=1)
mrtr_fleet = fleets["mrtr"].max(axis=1)
claim(
    sticky_fleet.is_monotonic_increasing and sticky_fleet.iloc[-1] > sticky_fleet.iloc[0],
    "the legacy fleet grows with think time",
    sticky=sticky_fleet.to_dict(),
)
claim(
    mrtr_fleet.nunique() == 1
    and (fleets["mrtr"]["memory"] <= fleets["mrtr"]["cpu"]).all()
    and (fleets["mrtr"]["connections"] <= fleets["mrtr"]["cpu"]).all(),
    "MRTR's fleet stays where its CPU puts it, whatever the think time",
    mrtr=fleets["mrtr"].to_dict("index"),
)

# %% [markdown]
# Now hold the think time and vary what a held call weighs. The lab's server measures
# about 25 KiB of resident memory per held `get_weather` call (`labsim/measured.json`);
# a tool that keeps a large object graph alive while it waits (a parsed document, a
# database session) weighs far more. Past several MiB per call, memory overtakes
# connections as the limit that binds a 2 GB replica:

# %%
rows = []
for kib in HELD_KIB_SWEEP:
    heavy = simulated(request, "sticky").with_overrides(held_call_bytes=kib * 1024)
    rows.append({"KiB per held call": kib, **first_guess(request, heavy, "sticky")})
held = pd.DataFrame(rows).set_index("KiB per held call")
fig, ax = plt.subplots(figsize=(7, 3.5))
for limit, style in LIMITS.items():
    ax.plot(held.index, held[limit], label=limit, **style)
ax.set_xscale("log", base=2)
ax.set_xlabel("memory a held call keeps (KiB, log scale)")
ax.set_ylabel("replicas needed (sticky)")
ax.yaxis.set_major_locator(MaxNLocator(integer=True))
ax.set_title(f"A {MEMORY_GB_PER_REPLICA:g} GB, {CONNECTION_LIMIT}-connection replica")
ax.legend(title="limit", fontsize="small", loc="upper left")
ax.grid(True, alpha=0.3)
plt.show()
light, heaviest = held.loc[held.index <= 1024], held.iloc[-1]
claim(
    (light["memory"] < light["connections"]).all() and heaviest["memory"] > heaviest["connections"],
    "up to a MiB per call connections bind; past several MiB, memory overtakes them",
    held=held[["memory", "connections"]].to_dict("index"),
)
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
fig = plots.autoscaling(runs)
plt.show()

# %% [markdown]
# After the scale-out, MRTR's replicas share the work evenly at once: every round is a
# new request the balancer deals out. Sticky's new replicas start near zero and catch up
# only as old sessions end, so the old replicas stay hot for minutes: an autoscaler
# reading the *average* CPU sees the target met while two replicas run far above it. At
# the scale-in MRTR's replicas stop at once; the legacy ones still hold thinking users
# and cut them at the drain timeout:

# %%
summary = result_tables.columns(
    {
        result_tables.label(a): {
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


def shares_after(run: labsim.RunResult, seconds: float) -> pd.Series:
    """Each replica's share of the CPU work `seconds` after the first scale-out."""
    out_s = run.events.query("kind == 'scale-out'")["time_s"].iloc[0]
    shares = run.replicas.pivot_table(index="time_s", columns="replica", values="cpu_share")
    return shares.loc[shares.index >= out_s + seconds].iloc[0].dropna()


even = {a: shares_after(r, 120) for a, r in runs.items()}
claim(
    even["mrtr"].max() < 1.5 * even["mrtr"].min()
    and even["sticky"].max() > 3 * even["sticky"].min(),
    "two minutes after the scale-out MRTR's replicas share the work evenly; sticky's new "
    "ones are still far behind",
    shares={a: share.round(3).to_dict() for a, share in even.items()},
)
later = shares_after(runs["sticky"], 300)
claim(
    later.max() > 2 * later.min(),
    "five minutes on, sticky's old replicas are still hot",
    shares=later.round(3).to_dict(),
)
claim(
    summary.loc["calls cut at scale-in", result_tables.label("mrtr")] == 0
    and summary.loc["calls cut at scale-in", result_tables.label("sticky")] > 0,
    "at the scale-in MRTR cuts nothing; the sticky fleet cuts the users it still holds",
    cut=summary.loc["calls cut at scale-in"].to_dict(),
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
base = labsim.SimParams()
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
    # The answers that came with a state to open: each one that found it expired, and the
    # second answer of each call that completed. (A call whose state expires more than
    # `client.max_call_restarts` times is given up, so counting every answer would not do.)
    checked = expiries + (calls["outcome"] == "completed").sum()
    rows.append(
        {
            "median think (s)": median_s,
            "simulated share asked again": expiries / checked,
            "P(think > TTL)": stats.lognorm(s=base.workload.think_sigma, scale=median_s).sf(ttl_s),
        }
    )
ttl = pd.DataFrame(rows).set_index("median think (s)")
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(ttl.index, ttl["P(think > TTL)"], label="P(think > TTL), the lognormal's tail", lw=3)
ax.plot(ttl.index, ttl["simulated share asked again"], "s--", ms=5, label="simulated")
ax.set_xscale("log")
ax.set_xlabel("median think time (s, log scale)")
ax.set_ylabel(f"share of answers after the {ttl_s:g} s TTL")
ax.set_title("Who is asked again: the think-time tail beyond the TTL")
ax.legend(fontsize="small", loc="upper left")
ax.grid(True, alpha=0.3)
plt.show()
gap = (ttl["simulated share asked again"] - ttl["P(think > TTL)"]).abs()
claim(
    gap.max() < 0.05 and ttl["simulated share asked again"].is_monotonic_increasing,
    "the simulation agrees with the lognormal's tail (within 0.05)",
    gap=gap.round(3).to_dict(),
)
ttl.round(3)

# %% [markdown]
# ## Exercises
#
# Each exercise has its answer under it, behind a **Show answer** button: what the
# solution finds and why, beside what its code prints. Try first. The solution's code is
# folded in the cell above the button; click the cell's collapsed-input bar (⋯) to read it.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** Give the replicas room: 4 GB and 4,096 connections, and users who
# answer in about a second. Which constraint binds now, and how far apart are the three
# fleets? (Use `first_guess` for a quick answer, `plan` to confirm.)

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    Every architecture is now sized by its **CPU**: with a second of thinking, Little's
    law leaves few calls held at once, so neither memory nor connections come near a
    roomy replica's limits. The three fleets land **within a replica of each other**:
    the difference between the architectures is what they hold while users think, and
    here users hardly think.
    """
):
    roomy = PlanRequest(RATE_PER_S, 1.0, SLO_P95_MS, 4.0, 4096, replications=1, measure_s=60.0)
    guesses = {a: first_guess(roomy, simulated(roomy, a), a) for a in ARCHITECTURES}
    display(
        result_tables.columns(
            {
                result_tables.label(a): {f"replicas for {limit}": n for limit, n in g.items()}
                for a, g in guesses.items()
            }
        )
    )
    fleets_roomy = {a: max(g.values()) for a, g in guesses.items()}
    claim(
        all(g["cpu"] == max(g.values()) for g in guesses.values())
        and max(fleets_roomy.values()) - min(fleets_roomy.values()) <= 1,
        "with room and quick users every fleet is sized by its CPU, within a replica of the others",
        guesses=guesses,
    )

# %% [markdown] tags=["exercise"]
# **Exercise 2.** At what median think time does a sticky fleet of 2 GB, 256-connection
# replicas need twice the replicas MRTR needs, for `RATE_PER_S` calls per second?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    MRTR's fleet does not depend on think time; the sticky fleet grows with it, as the
    streams held grow (Little's law) until connections bind. Walking up the think times,
    the first at which the sticky fleet is twice MRTR's is printed: past it, **every
    second a user thinks costs the sticky deployment replicas**, and MRTR nothing.
    """
):
    doubled_at = None
    for think_s in np.geomspace(1, 600, 25):
        sticky = max(needs_by_think(think_s, "sticky").values())
        mrtr = max(needs_by_think(think_s, "mrtr").values())
        if sticky >= 2 * mrtr:
            doubled_at = think_s
            print(f"from about {think_s:.0f} s: sticky {sticky} replicas, MRTR {mrtr}")
            break
    claim(
        doubled_at is not None and doubled_at < THINK_MEDIAN_S,
        f"the sticky fleet doubles MRTR's below the {THINK_MEDIAN_S:g} s of this notebook's users",
        doubled_at_s=doubled_at,
    )

# %% [markdown] tags=["exercise"]
# **Exercise 3.** Scale on requests in flight per replica instead of CPU
# (`metric="in-flight"`). Held SSE streams count as requests in flight: what does that do
# to the sticky fleet's size and bill compared with MRTR's?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    A held SSE stream is a request in flight for the whole of its user's think time. So
    an autoscaler that counts requests in flight scales the sticky fleet out **for users
    who are thinking, not for work**: many more replica-hours, and a larger bill, for the
    same CPU. MRTR's requests are in flight only while they are served, so its fleet
    follows the work.
    """
):
    from labsim.model.autoscale import Autoscaler

    by_in_flight = scaled.with_overrides(autoscaler=Autoscaler(metric="in-flight", target=20.0))
    hours = {}
    for architecture in ("sticky", "mrtr"):
        result = labsim.simulate(by_in_flight, architecture, seed=SEED).summary
        hours[architecture] = result["replica_hours"]
        print(f"{architecture}: {result['replica_hours']:.2f} replica-hours")
    claim(
        hours["sticky"] > 1.5 * hours["mrtr"],
        "scaling on requests in flight, the sticky fleet takes far more replica-hours",
        replica_hours=hours,
    )
