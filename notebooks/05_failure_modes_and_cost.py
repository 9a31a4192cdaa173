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
# # 5. Failure modes and cost, from 1 to 1,000 replicas
#
# Notebooks 2 to 4 compared the architectures in good weather, during an upgrade and under
# a spike. This one breaks things: a replica crashes, the shared store goes away for a
# minute, a load balancer cuts streams that look idle. Then it asks what each architecture
# costs, and what happens to all of it as a deployment grows from one replica to a
# thousand.
#
# **What you will learn**
#
# 1. What a crash, a store outage and an idle timeout do to each architecture: which
#    calls are lost, which users are asked again.
# 2. Why an idle timeout cuts exactly the users who think longest, and how well a few
#    lines of probability predict the simulation.
# 3. What a million calls cost, item by item: replicas, store, egress.
# 4. Where each architecture breaks as the deployment grows: the blast radius of a store
#    outage, losses from crashes per day, the bill, and how long a rollout takes.
#
# A line starting with ✓ is a sentence of this notebook checked against the results just
# computed: if the model changes so that it no longer holds, the notebook stops there and
# says what changed.

# %% tags=["parameters"]
import os

# The tests set QUICK=1 to run a shorter version of the notebook.
QUICK = os.environ.get("QUICK") == "1"
REPLICATIONS = 2 if QUICK else 5
SEED = 5
IDLE_TIMEOUTS_S = [30, 60, 120, 300] if QUICK else [15, 30, 60, 100, 200, 300]
# Scale: replicas, and the load each replica carries in the scale runs (kept light so that
# 1,000 replicas simulate in seconds; the losses per replica scale with it).
SCALE_REPLICAS = [1, 10, 100, 1000] if QUICK else [1, 3, 10, 30, 100, 300, 1000]
CALLS_PER_S_PER_REPLICA = 0.25
# An assumption for the losses per day: how often one replica crashes.
CRASHES_PER_REPLICA_PER_DAY = 0.01
# Calls per second per replica for the bill at scale (the default deployment's load).
BILLED_CALLS_PER_S_PER_REPLICA = 2.0

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display
from scipy import stats

import labsim
from labsim import ARCHITECTURES, study
from labsim.model.cost import SECONDS_PER_HOUR, Usage, bill
from labsim.study import plots
from labsim.study.experiments import one_run_each
from labsim.study.plots import Panel
from lessons import result_tables
from lessons.answers import hidden_answer
from lessons.claims import claim

# %% [markdown]
# ## 1. Three failures, side by side
#
# Each scenario is the default deployment (`labsim/model/params.py`) with one fault in the
# middle of the measured window: a replica crashes and restarts, the shared store is
# unreachable for a minute, or the server sends no SSE keep-alives, so the load balancer
# cuts connections that stay idle for its idle timeout (the AWS ALB default). The
# scenarios describe themselves:

# %%
SCENARIOS = ["steady", "crash", "store-outage", "idle-timeout"]
for name in SCENARIOS:
    print(f"{name:>13}: {study.scenarios.describe(name)}")
faults = study.compare(SCENARIOS, replications=REPLICATIONS, seed=SEED, processes=2)
fig = plots.comparison_grid(faults)
plt.show()

# %% [markdown]
# The bars worth a second look:
#
# - **state lost** (a call the client had to start again, or lost for good): the legacy
#   architectures lose every call a crashed replica held, and every stream an idle
#   timeout cut. MRTR loses none: between rounds there is nothing to lose, and a request
#   cut by a crash is sent again without asking the user anything.
# - **answers asked again**: the human cost of a lost call. The user has to answer again
#   what they already answered.
# - **completed** drops under the store outage for the store architecture alone: every
#   answer that had to cross the store while it was down failed the call it belonged to.
#
# The same numbers, as a table:

# %%
fault_means = faults.pivot_table(
    index=["scenario", "architecture"], columns="metric", values="mean"
)
mrtr_faults = fault_means.xs("mrtr", level="architecture")
claim(
    (mrtr_faults["state_losses"] == 0).all() and (mrtr_faults["re_prompts"] == 0).all(),
    "MRTR loses no call's progress and asks nobody again, whatever the fault",
    mrtr=mrtr_faults[["state_losses", "re_prompts"]].to_dict("index"),
)
claim(
    all(
        fault_means.loc[(scenario, name), "state_losses"] > 0
        for scenario in ("crash", "idle-timeout")
        for name in ("sse-store", "sticky")
    ),
    "the legacy architectures lose calls in a crash and to an idle timeout",
    state_losses=fault_means["state_losses"].to_dict(),
)
outage_failed = fault_means.loc["store-outage", "failed"]
claim(
    outage_failed["sse-store"] > 0 and (outage_failed[["sticky", "mrtr"]] == 0).all(),
    "the store outage fails calls of the store architecture alone",
    failed=outage_failed.to_dict(),
)
result_tables.readable(
    faults[faults["scenario"] != "steady"],
    ["completed_fraction", "failed", "lost", "state_losses", "re_prompts"],
    by="scenario",
    with_ci=True,
)

# %% [markdown]
# What a crash looks like from the cluster's side, one run per architecture: the dotted
# lines mark the crash and the restart.

# %%
crash = study.scenarios.build("crash")
crash_runs = one_run_each("crash", SEED)
fig = plots.timeline(crash_runs, series=("open_streams", "replicas_up"))
fig.axes[-1].set_xlim(400, 560)
plt.show()
pd.DataFrame(
    {
        result_tables.label(run.architecture): {
            "calls attached to the replica when it died": int(
                run.events.query("kind == 'cut'")["detail"].str.split().str[0].astype(int).sum()
            ),
            "calls whose progress was lost": run.summary["state_losses"],
            "answers asked again": run.summary["re_prompts"],
        }
        for run in crash_runs
    }
)

# %% [markdown]
# Under MRTR nothing is attached to a replica between rounds: at most the requests it was
# working on at that instant, milliseconds each (here none), and the client sends each
# of those again to another replica.

# %%
attached = {
    run.architecture: int(
        run.events.query("kind == 'cut'")["detail"].str.split().str[0].astype(int).sum()
    )
    for run in crash_runs
}
mrtr_run = next(run for run in crash_runs if run.architecture == "mrtr")
claim(
    attached["mrtr"] <= crash.cluster.workers_per_replica
    and mrtr_run.summary["state_losses"] == 0
    and min(attached["sse-store"], attached["sticky"]) > 10 * max(attached["mrtr"], 1),
    "under MRTR at most the requests being worked on are attached to a replica when it dies, "
    "and none loses its progress; the legacy replicas held many calls",
    attached=attached,
)
#
# ## 2. The idle timeout: cut exactly the users who think longest
#
# A load balancer closes a connection on which nothing has moved for its idle timeout.
# An SSE stream whose user is thinking is silent, so without keep-alives the balancer
# cuts every stream whose user takes longer than the timeout. That is a probability you
# can write down: with think times lognormal, a question is cut when the user would have
# answered, but after the timeout. A call with two questions has two chances.

# %%
base = study.scenarios.build("idle-timeout")
w = base.workload
think = stats.lognorm(s=w.think_time_sigma, scale=w.think_time_median_s)
stay = 1 - w.never_answer_share  # a user still there for the next question


def cut_probability(idle_timeout_s: float) -> float:
    """Chance that a call's first attempt is cut, over the tool mix (0, 1 or 2 questions)."""
    late = think.sf(idle_timeout_s)  # answers, but after the timeout
    first = stay * late
    second = stay * (1 - late) * stay * late  # first answered in time, second late
    return w.tool_mix[1] * first + w.tool_mix[2] * (first + second)


def cut_at_least_once(idle_timeout_s: float) -> float:
    """Share of the simulated calls whose stream was cut at least once (sticky)."""
    run = labsim.simulate(base.with_overrides(lb_idle_timeout_s=idle_timeout_s), "sticky", SEED)
    calls = run.measured_calls()
    return float(((calls["restarts"] > 0) | (calls["outcome"] == "lost")).mean())


idle = pd.DataFrame(
    {
        "idle timeout (s)": IDLE_TIMEOUTS_S,
        "simulated: calls cut (%)": [100 * cut_at_least_once(t) for t in IDLE_TIMEOUTS_S],
        "predicted: calls cut (%)": [100 * cut_probability(t) for t in IDLE_TIMEOUTS_S],
    }
).set_index("idle timeout (s)")
gap_pp = (idle["simulated: calls cut (%)"] - idle["predicted: calls cut (%)"]).abs()
claim(
    gap_pp.max() < 3 and idle["simulated: calls cut (%)"].is_monotonic_decreasing,
    "the simulation and the prediction agree within a few percentage points (under 3)",
    gap_pp=gap_pp.round(2).to_dict(),
)
idle.round(2)

# %%
fine = np.geomspace(min(IDLE_TIMEOUTS_S), max(IDLE_TIMEOUTS_S), 100)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(fine, [100 * cut_probability(t) for t in fine], color="black", label="prediction")
ax.plot(
    idle.index,
    idle["simulated: calls cut (%)"],
    "o",
    color=plots.COLOURS["sticky"],
    label="simulation (sticky, no keep-alives)",
)
default_s = base.cluster.lb_idle_timeout_s
ax.axvline(default_s, color="grey", linestyle=":", label=f"the default ({default_s:g} s)")
ax.set_xscale("log")
ax.set_xlabel("load balancer idle timeout (s, log scale)")
ax.set_ylabel("calls whose stream was cut (%)")
ax.set_title("No keep-alives: the idle timeout cuts the slow thinkers")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
plt.show()

# %% [markdown]
# The simulation and three lines of probability agree to within a few percentage points.
# The fix in practice is
# keep-alives: an SSE comment every `sse_keepalive_s` resets the balancer's idle clock,
# and the losses go away (exercise 1). MRTR has no stream to keep alive.
#
# ## 3. What a million calls cost
#
# The bill of the steady runs above, item by item:

# %%
fig = plots.cost_bars(faults, "steady")
plt.show()
steady = faults[faults["scenario"] == "steady"].pivot(
    index="architecture", columns="metric", values="mean"
)
per_million = 1e6 / steady["calls"]
bill_table = (
    pd.DataFrame(
        {
            "replicas (USD)": steady["cost_replicas_usd"] * per_million,
            "shared store (USD)": steady["cost_store_usd"] * per_million,
            "egress (USD)": steady["cost_egress_usd"] * per_million,
            "total (USD)": steady["cost_total_usd"] * per_million,
        }
    )
    .loc[list(ARCHITECTURES)]
    .rename(index=result_tables.label)
)
bill_table.index.name = "per million calls"
billed = bill_table.rename(index={result_tables.label(a): a for a in ARCHITECTURES})
claim(
    billed.loc["mrtr", "egress (USD)"] > billed.loc["sticky", "egress (USD)"]
    and billed.loc["sse-store", "shared store (USD)"] > 0
    and (billed.loc[["sticky", "mrtr"], "shared store (USD)"] == 0).all()
    and billed["replicas (USD)"].max() - billed["replicas (USD)"].min() < 1e-9,
    "MRTR's egress is a little higher, only the store architecture pays for Redis, and the "
    "replicas cost the same for all three",
    bill=billed.to_dict("index"),
)
bill_table.round(3)

# %% [markdown]
# MRTR's egress is a little higher (each `input_required` carries its sealed state), and
# the store architecture pays for Redis. Everything else is the replicas, which all three
# need in the same number at this load.
#
# ## 4. From 1 to 1,000 replicas
#
# Now the deployment grows, each replica carrying the same load. Four questions:
#
# 1. **A store outage**: how many calls fail? (simulated at each size)
# 2. **Crashes**: how many calls lose their progress per day, if each replica crashes
#    `CRASHES_PER_REPLICA_PER_DAY` times a day? (losses per crash simulated at each size)
# 3. **The bill** per million calls. (labsim's cost model, with the bytes and store
#    operations per call of the steady runs)
# 4. **A rollout**, one replica at a time: how long? (the time per replica from a
#    simulated rollout, times the number of replicas)
#
# The simulated runs count every call that was in the system at the fault (no warm-up),
# with the fault soon after the start, and stop shortly after it.


# %%
def scale_sweep(scenario: str) -> pd.DataFrame:
    """Short runs of `scenario` at each size in SCALE_REPLICAS, each replica carrying
    CALLS_PER_S_PER_REPLICA, the fault at 130 s: `study.sweep` over the replicas, one size
    at a time, since the arrival rate grows with them."""
    return pd.concat(
        study.sweep(
            scenario,
            "replicas",
            [replicas],
            replications=1,
            seed=SEED,
            processes=2,
            arrival_rate_per_s=CALLS_PER_S_PER_REPLICA * replicas,
            warmup_s=0.0,
            horizon_s=140.0,
            at_s=130.0,
        )
        for replicas in SCALE_REPLICAS
    )


def per_size(tidy: pd.DataFrame, metric: str) -> pd.DataFrame:
    """A metric of a scale sweep: a row per size, a column per architecture."""
    rows = tidy[tidy["metric"] == metric]
    return rows.pivot(index="replicas", columns="architecture", values="mean")


outage = per_size(scale_sweep("store-outage"), "failed")
per_crash = per_size(scale_sweep("crash"), "state_losses")
per_day = per_crash.mul(per_crash.index * CRASHES_PER_REPLICA_PER_DAY, axis=0)
pd.DataFrame(
    {
        "one store outage: calls failed, SSE + shared store": outage["sse-store"],
        "one crash: calls losing progress, SSE + shared store": per_crash["sse-store"],
        "one crash: calls losing progress, sticky": per_crash["sticky"],
        "MRTR: calls failed or losing progress, both faults": outage["mrtr"] + per_crash["mrtr"],
    }
).T

# %% [markdown]
# The bill at each size, from labsim's own cost model (`labsim.model.cost.bill`): replica-hours
# grow with the replicas, the store is one store whatever the size, and the bytes and
# store operations per call are those the steady runs measured.


# %%
def cost_per_million(architecture: str, replicas: int) -> dict[str, float]:
    """Bill per million calls of one hour at `replicas` replicas, by item."""
    calls = BILLED_CALLS_PER_S_PER_REPLICA * replicas * SECONDS_PER_HOUR
    per_call = steady.loc[architecture] / steady.loc[architecture, "calls"]
    usage = Usage(
        replica_hours=replicas,
        store_hours=1.0 if ARCHITECTURES[architecture].uses_store else 0.0,
        store_ops=int(per_call["store_ops"] * calls),
        egress_bytes=int(per_call["bytes_out"] * calls),
        calls=int(calls),
    )
    return {
        item: usd / calls * 1e6
        for item, usd in bill(usage, base).as_dict().items()
        if item != "total_usd"
    }


costs = pd.DataFrame(
    {(name, n): cost_per_million(name, n) for name in ARCHITECTURES for n in SCALE_REPLICAS}
).T
costs.index.names = ["architecture", "replicas"]
costs["total"] = costs.sum(axis=1)
costs["total"].unstack("architecture")[list(ARCHITECTURES)].rename(
    columns=result_tables.label
).round(3)

# %% [markdown]
# And the rollout: the simulated time per replica of a one-at-a-time rollout with the
# default drain timeout and restart time, times the number of replicas.

# %%
rollout = study.scenarios.build("rolling-upgrade")
per_replica_s = {
    name: labsim.simulate(rollout, name, seed=SEED).summary["upgrade_duration_s"]
    / rollout.cluster.replicas
    for name in ARCHITECTURES
}
result_tables.column(
    {result_tables.label(name): s for name, s in per_replica_s.items()},
    "rollout time per replica (s)",
    digits=1,
)

# %%
rollout_h = pd.DataFrame(
    {name: np.array(SCALE_REPLICAS) * s / SECONDS_PER_HOUR for name, s in per_replica_s.items()},
    index=pd.Index(SCALE_REPLICAS, name="replicas"),
)
growth = pd.concat(
    {
        "outage_failed": outage,
        "crash_losses_per_day": per_day,
        "cost_per_million_calls_usd": costs["total"].unstack("architecture"),
        "rollout_h": rollout_h,
    },
    names=["metric", "replicas"],
)
fig = plots.sweep_panels(
    growth[list(ARCHITECTURES)]
    .rename_axis(columns="architecture")
    .stack()
    .rename("mean")
    .reset_index(),
    "replicas",
    [
        Panel("outage_failed", "calls failed by one store outage", yscale="symlog"),
        Panel("crash_losses_per_day", "calls losing progress per day to crashes", yscale="symlog"),
        Panel("cost_per_million_calls_usd", "cost per million calls (USD)"),
        Panel("rollout_h", "rollout, one replica at a time (hours)", yscale="log"),
    ],
    xlabel="replicas (log scale)",
    xscale="log",
    columns=2,
    title=f"Growing the deployment: faults at {CALLS_PER_S_PER_REPLICA:g} calls/s per replica, "
    f"the bill at {BILLED_CALLS_PER_S_PER_REPLICA:g}",
)
plt.show()

# %% [markdown]
# Where the sticky and MRTR lines are both at zero, the sticky one is dashed over MRTR's.
# Where each architecture breaks as it grows:
#
# - **SSE + shared store**: the store is one thing that every waiting call depends on.
#   Its blast radius grows with the fleet: one outage fails every call waiting for an
#   answer, everywhere. Its price, on the other hand, fades into the replicas' bill.
# - **Sticky load balancer**: no single point of failure, but every crash loses the calls
#   one replica held, and crashes happen in proportion to the number of replicas. Rollouts
#   wait for thinkers on every replica.
# - **MRTR**: nothing to lose between rounds, so neither line grows; its costs are a few
#   hundred bytes per round and microseconds of sealing, which scale with the calls, like
#   the work itself.

# %%
total = costs["total"].unstack("architecture")
claim(
    outage["sse-store"].is_monotonic_increasing
    and outage["sse-store"].iloc[-1] > 100 * max(outage["sse-store"].iloc[0], 1),
    "one store outage fails more calls the larger the fleet",
    failed=outage["sse-store"].to_dict(),
)
gap = total["sse-store"] - total["mrtr"]
claim(
    gap.is_monotonic_decreasing and gap.iloc[-1] < 0.05 * gap.iloc[0],
    "the store's price fades into the replicas' bill as the fleet grows",
    store_architecture_extra_usd=gap.round(3).to_dict(),
)
claim(
    per_day["sticky"].iloc[-1] > 10 * per_day["sticky"].iloc[0]
    and per_replica_s["sticky"] > per_replica_s["mrtr"],
    "sticky: losses to crashes grow with the replicas, and every replica's drain waits",
    losses_per_day=per_day["sticky"].round(2).to_dict(),
    rollout_per_replica_s=per_replica_s,
)
claim(
    (outage["mrtr"] == 0).all() and (per_crash["mrtr"] == 0).all(),
    "MRTR: nothing to lose between rounds, at any size",
    failed=outage["mrtr"].to_dict(),
    lost_per_crash=per_crash["mrtr"].to_dict(),
)

# %% [markdown]
# ## Exercises
#
# Each exercise has its answer under it, behind a **Show answer** button: what the
# solution finds and why, beside what its code prints. Try first. The solution's code is
# folded in the cell above the button; click the cell's collapsed-input bar (⋯) to read it.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** Turn the SSE keep-alives back on (`sse_keepalive_s=15`) in the
# idle-timeout scenario and simulate the sticky architecture. What happens to the calls
# cut? Then set the keep-alive interval to 90 s with the 60 s idle timeout. Why is that
# the same as no keep-alives at all? (Look at `ClusterParams.keepalives_on`.)

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    With a keep-alive every 15 s, something crosses every held stream well within the
    60 s idle timeout: the balancer never sees it idle, and **no call is cut**.

    A keep-alive every 90 s arrives **after** the idle timeout has already fired, so it
    helps no one: exactly as many calls are cut as with no keep-alives at all (0 means
    none). A keep-alive only helps if its interval is shorter than the idle timeout;
    `ClusterParams.keepalives_on` is that test.
    """
):
    cut = {}
    for interval in (15.0, 90.0, 0.0):
        chosen = base.with_overrides(sse_keepalive_s=interval)
        run = labsim.simulate(chosen, "sticky", seed=SEED)
        cut[interval] = run.summary["state_losses"]
        print(
            f"keep-alive every {interval:>4g} s (reaches the balancer in time: "
            f"{chosen.cluster.keepalives_on}): {run.summary['state_losses']} calls cut"
        )
    claim(
        cut[15.0] == 0 and cut[90.0] == cut[0.0] > 0,
        "keep-alives every 15 s cut nothing; every 90 s cut as many as none at all",
        cut=cut,
    )

# %% [markdown] tags=["exercise"]
# **Exercise 2.** The store's blast radius above is for `CALLS_PER_S_PER_REPLICA` calls
# per second per replica. Double the load per replica at 100 replicas and compare the
# calls failed by one store outage. Is the blast radius proportional to the replicas, to
# the load, or to both? Explain it with Little's law.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    **Both.** The calls waiting for an answer at any moment are arrival rate × think time
    (Little's law), and the arrival rate is replicas × load per replica. An outage of a
    minute fails those waiting and those that arrive and ask during it, so doubling the
    load per replica about doubles the calls failed, as doubling the replicas does.
    """
):
    failed = {}
    for load in (CALLS_PER_S_PER_REPLICA, 2 * CALLS_PER_S_PER_REPLICA):
        params = study.scenarios.build(
            "store-outage",
            replicas=100,
            arrival_rate_per_s=load * 100,
            warmup_s=0.0,
            horizon_s=140.0,
            at_s=130.0,
        )
        failed[load] = labsim.simulate(params, "sse-store", seed=SEED).summary["failed"]
        print(f"{load:g} calls/s per replica: {failed[load]} calls failed")
    once, twice = failed.values()
    claim(
        1.5 < twice / once < 2.5,
        "doubling the load per replica about doubles the calls failed",
        failed=failed,
    )

# %% [markdown] tags=["exercise"]
# **Exercise 3.** A managed Redis with a replica and automatic failover still has
# failovers of about a minute. If the store has 4 such outages a year, how many calls per
# year does the store architecture fail at 1,000 replicas, from the simulation above?
# And with a sticky load balancer, from crashes alone, at `CRASHES_PER_REPLICA_PER_DAY`?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    Rare events times a large fleet: four outages a year, each failing every call that
    waits on the store at that size, and a crash every hundred days per replica, each
    cutting what that replica held, add up to **thousands of calls a year**. That yearly
    count, not the rate of one replica, is what an on-call team meets. MRTR's is zero:
    there is nothing to lose between rounds.
    """
):
    largest = max(SCALE_REPLICAS)
    per_year = {
        "store outages (SSE + shared store)": 4 * outage.loc[largest, "sse-store"],
        "crashes (sticky)": 365 * per_day.loc[largest, "sticky"],
        "MRTR, both": 4 * outage.loc[largest, "mrtr"] + 365 * per_day.loc[largest, "mrtr"],
    }
    display(
        result_tables.column(
            per_year, f"calls failed or losing progress per year, {largest:,} replicas"
        )
    )
    claim(
        per_year["store outages (SSE + shared store)"] > 1000
        and per_year["crashes (sticky)"] > 1000
        and per_year["MRTR, both"] == 0,
        "thousands of calls a year for each legacy architecture, none for MRTR",
        per_year=per_year,
    )
