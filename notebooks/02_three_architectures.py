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
# # 2. Three ways to wait for a user
#
# A deployment that runs an MCP server on several replicas has three ways to serve a tool
# call that asks the user something:
#
# - **SSE + shared store** (2025-11-25): the replica that got the call holds it open on an
#   SSE stream; the user's answer lands on any replica and crosses a shared store (Redis)
#   to reach it.
# - **Sticky load balancer** (2025-11-25): a cookie makes the load balancer send the answer
#   to the replica holding the call. No store, but the call is tied to one replica.
# - **MRTR** (2026-07-28): every round is an independent request; the call's state travels
#   with the client in `requestState`. Nothing is held.
#
# This notebook puts them side by side in the lab's simulation (`labsim`), on the same
# calls: the same arrival times, tools, CPU and think times for each.
#
# **What you will learn**
#
# 1. How each architecture carries a call across a question (sequence diagrams).
# 2. What each one holds while a user thinks: memory, open streams, store traffic. And
#    why that is arrival rate times think time (Little's law).
# 3. Latency and cost per million calls at one load, with confidence intervals.
# 4. How that changes as the load grows, and which limit each one meets first.
# 5. How to play with replicas, think time, store latency and prices yourself (sliders).
#
# A line starting with ✓ is a sentence of this notebook checked against the results just
# computed: if the model changes so that it no longer holds, the notebook stops there and
# says what changed.

# %% tags=["parameters"]
import os

# The tests set QUICK=1 to run a shorter version of the notebook.
QUICK = os.environ.get("QUICK") == "1"
REPLICAS = 4
ARRIVAL_RATE_PER_S = 8.0  # tool calls per second, Poisson
THINK_MEDIAN_S = 10.0  # median time a user takes to answer (lognormal)
REPLICATIONS = 2 if QUICK else 5  # independent seeded runs per architecture
LOAD_SWEEP_PER_S = [1, 4, 16, 64] if QUICK else [1, 2, 4, 8, 16, 32, 64]
SEED = 7

# %%
import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

import labsim
from labsim import ARCHITECTURES, study
from labsim.model.cost import replica_hour_usd
from labsim.model.tools import questions_per_call
from labsim.study import plots
from labsim.study.experiments import one_run_each
from labsim.study.plots import Panel
from lessons import result_tables
from lessons.answers import hidden_answer
from lessons.claims import claim

# %% [markdown]
# ## 1. The three architectures as sequence diagrams
#
# A tool that asks one question. Read each diagram for *what waits, and where*, between
# the question and the answer.
#
# **SSE + shared store.** Replica A holds the call; the answer reaches B; Redis carries it
# to A.
#
# ```mermaid
# sequenceDiagram
#     participant C as Client
#     participant LB as Load balancer
#     participant A as Replica A
#     participant B as Replica B
#     participant R as Redis
#     C->>LB: POST tools/call
#     LB->>A: round-robin
#     A->>R: SUBSCRIBE answers of this call
#     A-->>C: SSE stream: elicitation/create
#     Note over A: holds coroutine + memory + stream while the user thinks
#     C->>LB: POST the answer
#     LB->>B: round-robin
#     B->>R: PUBLISH the answer
#     R-->>A: the answer
#     A-->>C: SSE stream: the result, stream closes
# ```
#
# **Sticky load balancer.** The cookie brings the answer back to A; no store.
#
# ```mermaid
# sequenceDiagram
#     participant C as Client
#     participant LB as Load balancer (cookie)
#     participant A as Replica A
#     C->>LB: POST tools/call
#     LB->>A: round-robin, sets cookie SERVERID=A
#     A-->>C: SSE stream: elicitation/create
#     Note over A: holds coroutine + memory + stream while the user thinks
#     C->>LB: POST the answer (cookie A)
#     LB->>A: pinned to A, even while A drains
#     A-->>C: SSE stream: the result, stream closes
# ```
#
# **MRTR.** Each round ends; the state is sealed into the response; any replica continues.
#
# ```mermaid
# sequenceDiagram
#     participant C as Client
#     participant LB as Load balancer
#     participant A as Replica A
#     participant B as Replica B
#     C->>LB: POST tools/call
#     LB->>A: round-robin
#     A-->>C: input_required: inputRequests (+ requestState)
#     Note over A,B: nothing held anywhere while the user thinks
#     C->>LB: POST tools/call + inputResponses + requestState
#     LB->>B: round-robin
#     B-->>C: complete: the result
# ```
#
# The simulation models exactly these differences. The flags each model carries:

# %%
pd.DataFrame(
    {
        result_tables.label(name): {
            "pays for a shared store": kind.uses_store,
            "load balancer pins the call": kind.sticky,
            "can move half-done work": kind.can_offload,
        }
        for name, kind in ARCHITECTURES.items()
    }
)

# %% [markdown]
# ## 2. One run each, on the same calls
#
# The deployment: the parameters above, everything else at the lab's documented defaults
# (`labsim/model/demand.py` and `deployment.py` say where each comes from). The first
# minutes are a warm-up (grey in the plots) while held calls build up; statistics count the
# calls after it.

# %%
DEPLOYMENT = {
    "replicas": REPLICAS,
    "arrival_rate_per_s": ARRIVAL_RATE_PER_S,
    "think_time_median_s": THINK_MEDIAN_S,
}
params = study.scenarios.build("steady", **DEPLOYMENT)
# One run per architecture from the same seed: the same calls for each.
runs = {run.architecture: run for run in one_run_each("steady", SEED, **DEPLOYMENT)}
result_tables.column(
    {
        "simulated time (s)": params.horizon_s,
        "warm-up (s)": params.warmup_s,
        "calls measured": runs["mrtr"].summary["calls"],
        "round CPU, mean (ms)": params.workload.round_cpu.mean_s * 1e3,
        "memory a held call keeps (KiB)": params.cluster.held_call_bytes / 1024,
    },
    "the deployment",
)

# %% [markdown]
# What each holds while its users think, over time:

# %%
fig = plots.timeline(list(runs.values()), series=("in_flight_calls", "open_streams", "held_bytes"))
plt.show()
in_flight = {name: run.timeline["in_flight_calls"].mean() for name, run in runs.items()}
claim(
    max(in_flight.values()) - min(in_flight.values()) < 0.02 * max(in_flight.values()),
    "calls in flight are the same for all three (within 2%)",
    mean_in_flight=in_flight,
)
mrtr_holds = runs["mrtr"].timeline[["open_streams", "held_bytes"]].max()
claim(
    (mrtr_holds == 0).all(),
    "for MRTR the two lower panels stay at zero",
    mrtr_peak=mrtr_holds.to_dict(),
)

# %% [markdown]
# Calls in flight are the same for all three: the same users think for the same time.
# What differs is where a thinking user's call *lives*. For the two legacy architectures
# each one is an open SSE stream and a held coroutine on some replica; for MRTR it is a
# few hundred bytes in the client, so the two lower panels stay at zero.
#
# How many streams are open is not a mystery: by **Little's law**, the average number of
# calls held equals the rate at which calls arrive times the average time each is held.

# %%
sticky = runs["sticky"]
window_s = params.horizon_s - params.warmup_s
measured = sticky.measured_calls()
arrival_rate = len(measured) / window_s
mean_held_s = measured["think_s"].mean()
result_tables.column(
    {
        "arrival rate (calls/s)": arrival_rate,
        "mean time a call waits for its user (s)": mean_held_s,
        "Little's law: rate x time": arrival_rate * mean_held_s,
        "simulated mean open streams": sticky.summary["mean_open_streams"],
    },
    "sticky load balancer",
)

# %%
little = arrival_rate * mean_held_s
claim(
    abs(little - sticky.summary["mean_open_streams"]) < 0.1 * little,
    "Little's law and the simulation agree within the noise of a single run (10%)",
    littles_law=round(little, 1),
    simulated=round(sticky.summary["mean_open_streams"], 1),
)

# %% [markdown]
# The two agree within the noise of a single run (a stream is also open for the moments
# the server works on its call). So the memory a legacy deployment needs is *arrival rate
# x think time x memory per held call*. Users who think twice as long double it; MRTR does
# not care.
#
# ## 3. Latency and cost at one load, with confidence intervals
#
# One run is one sample. `study.compare` repeats the run with independent seeds (the same
# seeds for each architecture) and reports means with 95% confidence intervals.

# %%
comparison = study.compare(
    "steady",
    replications=REPLICATIONS,
    seed=SEED,
    processes=2,
    replicas=REPLICAS,
    arrival_rate_per_s=ARRIVAL_RATE_PER_S,
    think_time_median_s=THINK_MEDIAN_S,
)
result_tables.readable(
    comparison,
    [
        "completed_fraction",
        "p50_latency_s",
        "p95_latency_s",
        "mean_open_streams",
        "peak_held_bytes",
        "store_ops",
        "cost_per_million_calls_usd",
    ],
    with_ci=True,
)

# %% [markdown]
# Server latency (the user's own thinking taken out) is nearly the same for all three:
# the server's work dominates, and the store adds a round trip per answer, a fraction of
# a millisecond. The latency distributions of the single runs above:

# %%
means = comparison.pivot(index="architecture", columns="metric", values="mean")
p50_ms = means["p50_latency_s"] * 1e3
claim(
    p50_ms.max() - p50_ms.min() < 0.05 * p50_ms.min(),
    "server latency is nearly the same for all three (median within 5%)",
    p50_ms=p50_ms.round(2).to_dict(),
)
fig = plots.latency_cdf(list(runs.values()))
plt.show()

# %% [markdown]
# And who pays for what. Replicas are billed whether busy or not; the shared store is
# billed for its minimum size every hour plus its operations; egress is bytes sent back
# to clients (MRTR's `requestState` adds a little).

# %%
fig = plots.cost_bars(comparison, "steady")
plt.show()

# %%
one_replica_usd = replica_hour_usd(params)
print(f"one replica costs {one_replica_usd:.4f} USD per hour at the default prices")

# %% [markdown]
# At this load the bill is mostly replicas, and the three architectures need the same
# number of them: the memory held fits easily in each replica. The store is the legacy
# store architecture's extra, and a large one at a small deployment's scale: a fifth of
# its bill or more.

# %%
replicas_share = means["cost_replicas_usd"] / means["cost_total_usd"]
store_share = means["cost_store_usd"] / means["cost_total_usd"]
claim(
    (replicas_share[["sticky", "mrtr"]] > 0.9).all() and replicas_share["sse-store"] > 0.5,
    "the bill is mostly replicas",
    replicas_share=replicas_share.round(3).to_dict(),
)
claim(
    means["peak_held_bytes"].max() < 0.1 * params.cluster.memory_gb_per_replica * 1e9,
    "the memory held fits easily in each replica (under a tenth of one replica's memory)",
    peak_held_mb=(means["peak_held_bytes"] / 1e6).round(1).to_dict(),
)
claim(
    store_share["sse-store"] >= 0.2 and (store_share[["sticky", "mrtr"]] == 0).all(),
    "the store is the store architecture's extra: a fifth of its bill or more",
    store_share=store_share.round(3).to_dict(),
)
#
# ## 4. A sweep of load
#
# Now the same deployment with the load growing. Which limit does each meet first? Three
# candidates: CPU (workers busy), connections (each held call keeps one open; a replica
# accepts `connection_limit` of them) and memory.

# %%
sweep = study.sweep(
    "steady",
    "arrival_rate_per_s",
    LOAD_SWEEP_PER_S,
    replications=1,
    seed=SEED,
    processes=2,
    replicas=REPLICAS,
    think_time_median_s=THINK_MEDIAN_S,
)
result_tables.readable(
    sweep,
    ["utilization", "peak_open_streams", "peak_held_bytes", "p95_latency_s"],
    by="arrival_rate_per_s",
).round(2)

# %%
panels = [
    Panel("utilization", "CPU utilization (%)", 0.01, limit=(100, "all workers busy")),
    Panel(
        "peak_open_streams",
        "peak open streams per replica",
        REPLICAS,
        limit=(params.cluster.connection_limit, "connection limit"),
    ),
    Panel("peak_held_bytes", "peak memory held (MB)", 1e6),
    Panel("p95_latency_s", "p95 server latency (ms)", 1e-3),
]
fig = plots.sweep_panels(
    sweep,
    "arrival_rate_per_s",
    panels,
    xlabel="arrival rate (calls/s, log scale)",
    xscale="log",
    xbase=2,
    columns=2,
    title=f"{REPLICAS} replicas under growing load",
)
plt.show()

# %% [markdown]
# What to notice:
#
# - CPU grows the same for all three: the work is the same work.
# - Open streams and held memory grow in proportion to the load for the legacy
#   architectures and stay at zero for MRTR. With the default tool (its CPU per round is
#   in the table of section 2) the workers would run out before the connections do: the
#   two lines, carried on past the sweep, reach their limits in that order. A lighter
#   tool reaches the connection limit first (exercise 1).
# - Latency stays flat while the workers have room and rises for everyone as they fill
#   (here from about half busy, at the top of the sweep).

# %%
by_rate = sweep.pivot_table(
    index=["architecture", "arrival_rate_per_s"], columns="metric", values="mean"
)
utilization = by_rate["utilization"].unstack("architecture")
claim(
    (utilization.max(axis=1) - utilization.min(axis=1) < 0.01).all(),
    "CPU grows the same for all three",
    utilization=utilization.round(3).to_dict(),
)
streams = by_rate["peak_open_streams"].unstack("architecture")
claim(
    (streams["mrtr"] == 0).all()
    and all(streams[name].is_monotonic_increasing for name in ("sse-store", "sticky")),
    "open streams grow with the load for the legacy architectures and stay at zero for MRTR",
    peak_open_streams=streams.to_dict(),
)
# Carried on past the sweep: each grows in proportion to the load (fit through zero).
rates = utilization.index.to_numpy(dtype=float)
cpu_full_at = 1.0 / (utilization["sticky"].to_numpy() @ rates / (rates @ rates))
per_replica = streams["sticky"].to_numpy() / REPLICAS
connections_full_at = params.cluster.connection_limit / (per_replica @ rates / (rates @ rates))
claim(
    cpu_full_at < connections_full_at,
    "with the default tool the workers run out before the connections do",
    workers_full_at_calls_per_s=round(cpu_full_at),
    connections_full_at_calls_per_s=round(connections_full_at),
)
p95 = by_rate["p95_latency_s"].unstack("architecture")
roomy = utilization["sticky"] < 0.3
claim(
    (p95[roomy].max() < 1.1 * p95[roomy].min()).all()
    and (p95.iloc[-1] > 1.1 * p95[roomy].max()).all(),
    "latency stays flat while the workers have room, and rises for everyone as they fill",
    p95_ms=(p95 * 1e3).round(1).to_dict(),
)

# %% [markdown]
# ## 5. Your turn: sliders
#
# In JupyterLab, move a slider and the three architectures are simulated again with your
# values (a shorter run, about a second). In the book, each slider moves over a few
# values simulated when the book was built. The store's round trip only matters to the
# store architecture; the price of Redis and of a vCPU decide how much the store and the
# replicas weigh in the bill.


# %%
# The sliders start at labsim's defaults (each with its source in labsim/model/deployment.py).
STORE, COST = labsim.StoreParams(), labsim.CostParams()


def explore(
    replicas: int = REPLICAS,
    think_time_median_s: float = THINK_MEDIAN_S,
    store_round_trip_ms: float = STORE.round_trip_s * 1e3,
    redis_usd_per_gb_hour: float = COST.store_gb_hour_usd,
    vcpu_usd_per_hour: float = COST.vcpu_hour_usd,
) -> None:
    """Simulate the three architectures with these values and plot the headline numbers."""
    chosen = one_run_each(
        "steady",
        SEED,
        replicas=replicas,
        arrival_rate_per_s=ARRIVAL_RATE_PER_S,
        think_time_median_s=think_time_median_s,
        round_trip_s=store_round_trip_ms / 1e3,
        store_gb_hour_usd=redis_usd_per_gb_hour,
        vcpu_hour_usd=vcpu_usd_per_hour,
        horizon_s=600.0,
    )
    summaries = {run.architecture: run.summary for run in chosen}
    plots.headline_bars(
        summaries,
        [
            Panel("p95_latency_s", "p95 server latency (ms)", 1e-3),
            Panel("peak_held_bytes", "peak memory held (MB)", 1e6),
            Panel("cost_per_million_calls_usd", "cost per million calls (USD)"),
        ],
        title=f"{replicas} replicas, think median {think_time_median_s:.1f} s, "
        f"store round trip {store_round_trip_ms:.2f} ms,\n"
        f"Redis {redis_usd_per_gb_hour:.3f} USD/GB-hour, {vcpu_usd_per_hour:.5f} USD/vCPU-hour",
    )
    plt.show()


# Each slider runs the simulation when it is released, not while it moves. Readouts show
# the values the simulation gets (the figure's title repeats them, in the same format).
slider = {"continuous_update": False, "style": {"description_width": "initial"}}
sliders = widgets.interactive(
    explore,
    replicas=widgets.IntSlider(value=REPLICAS, min=1, max=16, description="replicas", **slider),
    think_time_median_s=widgets.FloatLogSlider(
        value=THINK_MEDIAN_S,
        base=10,
        min=0,
        max=2.5,
        readout_format=".1f",
        description="think median (s)",
        **slider,
    ),
    store_round_trip_ms=widgets.FloatLogSlider(
        value=STORE.round_trip_s * 1e3,
        base=10,
        min=-1,
        max=2,
        readout_format=".2f",
        description="store round trip (ms)",
        **slider,
    ),
    redis_usd_per_gb_hour=widgets.FloatSlider(
        value=COST.store_gb_hour_usd,
        min=0.0,
        max=0.5,
        step=0.005,
        readout_format=".3f",
        description="Redis USD/GB-hour",
        **slider,
    ),
    vcpu_usd_per_hour=widgets.FloatSlider(
        value=COST.vcpu_hour_usd,
        min=0.01,
        max=0.1,
        step=0.00001,
        readout_format=".5f",
        description="USD/vCPU-hour",
        **slider,
    ),
)
display(sliders)

# %% [markdown]
# Things to try: a think time of a few minutes (legacy memory grows, MRTR's does not); a
# store in another region (50 ms); a single replica (the store's fixed price against one
# replica's).
#
# ## Exercises
#
# Each exercise has its answer under it, behind a **Show answer** button: what the
# solution finds and why, beside what its code prints. Try first. The solution's code is
# folded in the cell above the button; click the cell's collapsed-input bar (⋯) to read it.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** Most MCP tools are thin: they call an API and return. Run the load
# sweep again on a single replica (`replicas=1`, so that the limits come at a low load)
# with a tool that needs 5 ms of CPU per round instead of 50 ms (the parameter is
# `round_cpu=labsim.ServiceTime(mean_s=0.005)`), arrival rates up to 128 calls/s, and
# `horizon_s=420` to keep it quick. Which limit does the sticky deployment meet first
# now, and at roughly what load? What does MRTR meet first?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    With a thin tool the sticky replica runs out of **connections** first: each held
    call keeps one open while its user thinks, and at the top of the sweep the held
    streams reach the connection limit while the CPU is still far from busy. Calls that
    find no connection fail.

    MRTR holds no connection between rounds, so it never meets that limit: only the
    **CPU** limit, much further up.
    """
):
    thin = study.sweep(
        "steady",
        "arrival_rate_per_s",
        [32, 128] if QUICK else [16, 32, 64, 128],
        replications=1,
        seed=SEED,
        processes=2,
        architectures=("sticky", "mrtr"),
        replicas=1,
        round_cpu=labsim.ServiceTime(mean_s=0.005),
        horizon_s=420.0,
    )
    print(
        result_tables.readable(
            thin, ["utilization", "peak_open_streams", "failed"], by="arrival_rate_per_s"
        )
    )
    print("connection limit per replica:", params.cluster.connection_limit)
    top = thin[thin["arrival_rate_per_s"] == thin["arrival_rate_per_s"].max()]
    top = top.pivot(index="architecture", columns="metric", values="mean")
    claim(
        top.loc["sticky", "peak_open_streams"] >= 0.99 * params.cluster.connection_limit
        and top.loc["sticky", "failed"] > 0
        and top.loc["sticky", "utilization"] < 0.5,
        "the sticky replica runs out of connections, its CPU far from busy, and calls fail",
        sticky=top.loc["sticky", ["peak_open_streams", "failed", "utilization"]].to_dict(),
    )
    claim(
        top.loc["mrtr", "peak_open_streams"] == 0 and top.loc["mrtr", "failed"] == 0,
        "MRTR holds no connection between rounds and fails no call",
        mrtr=top.loc["mrtr", ["peak_open_streams", "failed"]].to_dict(),
    )

# %% [markdown] tags=["exercise"]
# **Exercise 2.** Predict, with Little's law and no simulation, the mean number of open
# SSE streams if users took a median of 60 s instead of 10 s to answer (the think time is
# lognormal, so its mean is `median * exp(sigma**2 / 2)`; `params.workload.think_time_sigma`
# holds sigma, and answers time out after `params.client.answer_timeout_s`). Then simulate
# it and compare. Why is the simulation lower than your first estimate?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    Little's law with the uncapped lognormal mean gives far more streams than the
    simulation. Two things shorten the real hold: an unanswered question **times out**
    (`answer_timeout_s`), which cuts the lognormal's long tail, so the mean hold is
    `E[min(T, timeout)]`, much less than the uncapped mean; and users who walk away do
    not come back for a second question.

    With the timeout in the estimate, Little's law lands close to the simulated mean.
    """
):
    from scipy import stats

    sigma = params.workload.think_time_sigma
    timeout_s = params.client.answer_timeout_s
    questions = questions_per_call(params.workload.tools, params.workload.tool_mix)
    uncapped_mean_s = 60 * np.exp(sigma**2 / 2)
    think = stats.lognorm(s=sigma, scale=60)
    # E[min(T, timeout)] = integral of the survival function up to the timeout.
    capped_mean_s = np.trapezoid(think.sf(np.linspace(0, timeout_s, 10_001)), dx=timeout_s / 10_000)
    answering = 1 - params.workload.never_answer_share
    per_question_s = answering * capped_mean_s + (1 - answering) * timeout_s
    slow = labsim.simulate(params.with_overrides(think_time_median_s=60.0), "sticky", seed=SEED)
    print(f"uncapped estimate: {ARRIVAL_RATE_PER_S * questions * uncapped_mean_s:.0f} streams")
    print(f"with the timeout:  {ARRIVAL_RATE_PER_S * questions * per_question_s:.0f} streams")
    print(f"simulated:         {slow.summary['mean_open_streams']:.0f} streams")
    uncapped = ARRIVAL_RATE_PER_S * questions * uncapped_mean_s
    capped = ARRIVAL_RATE_PER_S * questions * per_question_s
    simulated_streams = slow.summary["mean_open_streams"]
    claim(
        simulated_streams < uncapped and abs(capped - simulated_streams) < 0.2 * simulated_streams,
        "the simulation is below the uncapped estimate, and close to the one with the timeout",
        uncapped=round(uncapped),
        with_timeout=round(capped),
        simulated=round(simulated_streams),
    )

# %% [markdown] tags=["exercise"]
# **Exercise 3.** At which price of Redis per GB-hour would the store architecture cost
# the same per million calls as MRTR at this load? Work it out from the comparison table
# (the store's cost is its hourly price times `params.store.billed_gb` plus operations),
# then check with the sliders or a simulation.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    The store's bill is hours × billed GB × price, plus its operations. Only the first
    part moves with the price, in proportion; the rest of the gap (the operations, and
    MRTR's little extra egress) stays. So the break-even price is the current one scaled
    down by the share of the gap the hourly part must cover: a price **far below** what
    ElastiCache charges.

    Simulated at that price, the two architectures cost about the same per million
    calls.
    """
):
    means = comparison.pivot(index="metric", columns="architecture", values="mean")
    per_million = 1e6 / means.loc["calls"]
    cost = means.loc["cost_per_million_calls_usd"]
    gap = cost["sse-store"] - cost["mrtr"]
    print(
        f"at {params.cost.store_gb_hour_usd} USD/GB-hour the store architecture costs {gap:.2f} USD"
    )
    print("more per million calls than MRTR")
    ops_usd = means.loc["store_ops", "sse-store"] * params.cost.store_usd_per_million_ecpu / 1e6
    hourly_per_million = (means.loc["cost_store_usd", "sse-store"] - ops_usd) * per_million[
        "sse-store"
    ]
    break_even = params.cost.store_gb_hour_usd * (1 - gap / hourly_per_million)
    print(f"break-even Redis price: about {break_even:.4f} USD per GB-hour")
    check = study.compare(
        "steady",
        replications=REPLICATIONS,
        seed=SEED,
        processes=2,
        architectures=("sse-store", "mrtr"),
        replicas=REPLICAS,
        arrival_rate_per_s=ARRIVAL_RATE_PER_S,
        think_time_median_s=THINK_MEDIAN_S,
        store_gb_hour_usd=max(break_even, 0.0),
    )
    display(result_tables.readable(check, ["cost_per_million_calls_usd"]))
    costs = check[check["metric"] == "cost_per_million_calls_usd"].set_index("architecture")
    claim(
        break_even < params.cost.store_gb_hour_usd
        and abs(costs.loc["sse-store", "mean"] - costs.loc["mrtr", "mean"])
        < 0.02 * costs.loc["mrtr", "mean"],
        "at the break-even price the two cost the same (within 2%)",
        break_even_usd_per_gb_hour=round(break_even, 4),
        cost=costs["mean"].to_dict(),
    )
