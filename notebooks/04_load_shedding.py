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
# # 4. Load shedding: moving half-done work to another replica
#
# The seed's second use case for `requestState`. A replica is overloaded in the middle of
# a long tool call. It could keep going (and everyone queued behind it waits), or refuse
# with a 503 (and throw away the work done so far). MRTR gives it a third choice: end the
# request with `input_required`, no questions, and its **progress** sealed in
# `requestState`. The client retries at once, the load balancer picks another replica,
# and that replica carries on from where the first stopped.
#
# **What you will learn**
#
# 1. Live: the `crunch` tool moving between two replicas mid-computation, and arriving at
#    exactly the digest it would have computed on one.
# 2. What a load spike does to a cluster with no shedding, with 503 shedding, and with
#    MRTR offload: queues, goodput, tail latency and wasted work.
# 3. Where offloading helps and where it cannot: it moves work, it does not create
#    capacity.

# %% tags=["parameters"]
import os

# The tests set QUICK=1 to run a shorter version of the notebook.
QUICK = os.environ.get("QUICK") == "1"
CRUNCH_UNITS = 200_000  # hash steps of the live crunch call
SHED_EVERY_UNITS = 50_000  # each live replica hands the call on after this many steps
REPLICAS = 4
SPIKE_FACTOR = 15.0  # arrivals multiply by this during the spike
SPIKE_S = 60.0  # how long the spike lasts
# A balancer that does not see queue lengths; several independent round-robin balancer
# nodes look like this from any one replica.
LB_POLICY = "random"
SPIKE_FACTORS = [6, 10, 12, 14] if QUICK else [4, 6, 8, 10, 11, 12, 13, 14, 16]
SEED = 11

# %%
import base64
import time

import matplotlib.pyplot as plt
import pandas as pd
import result_tables
from answers import hidden_answer
from IPython.display import display

import labsim
from labsim import study
from labsim.model.tools import requests_per_call
from labsim.study import plots
from labsim.study.experiments import RunSpec, run_many
from labsim.study.plots import Panel
from server.app import create_app
from server.client import MrtrClient
from server.config import ServerConfig, StateKey
from server.tools.crunch import crunch_start, crunch_units

# %% [markdown]
# ## 1. `crunch`, live, across two replicas
#
# `crunch` hashes a chain: `h = sha256(h || i)` for `i` from 0 to `units`. It is work that
# cannot be skipped, only continued: to know step `i` you need step `i - 1`. A replica
# configured to shed every `SHED_EVERY_UNITS` steps returns, at that point, an
# `input_required` result with no `inputRequests` and the chain's position and value
# sealed in `requestState`.
#
# Two in-process replicas, A and B, sharing their keys. We send the rounds by hand,
# alternating A and B, as a load balancer might.

# %%
STATE_KEY = StateKey("k1", os.urandom(32))
JWT_SECRET = base64.b64encode(os.urandom(32)).decode()


def replica_app(replica_id: str, **settings) -> object:
    """An in-process replica with this notebook's keys and token secret."""
    options = {"state_keys": (STATE_KEY,), "jwt_secret": JWT_SECRET, **settings}
    return create_app(ServerConfig(replica_id=replica_id, **options))


replicas = {
    name: MrtrClient.for_app(replica_app(name, shed_every_units=SHED_EVERY_UNITS))
    for name in ("A", "B")
}
call = replicas["A"].exchange(
    "tools/call", {"name": "crunch", "arguments": {"units": CRUNCH_UNITS}}
)
rounds = []
while True:
    name = "AB"[len(call.rounds) % 2]
    done = replicas[name].send(call)
    response = call.rounds[-1].response["result"]
    rounds.append(
        {
            "served by": name,
            "time on the replica (ms)": call.rounds[-1].elapsed_s * 1e3,
            "result type": response["resultType"],
            "questions asked": len(response.get("inputRequests") or {}),
            "requestState returned (bytes)": len(response.get("requestState", "")),
        }
    )
    if done:
        break
moved = pd.DataFrame(rounds, index=pd.RangeIndex(1, len(rounds) + 1, name="round"))
moved.round(1)

# %% [markdown]
# Every round but the last is a state-only `input_required`: nothing to ask the user, so
# the client (`Exchange.needs_backoff`) retries at once. The result names the replicas
# that worked on the call, in order, and the digest:

# %%
result = call.result["structuredContent"]
started = time.perf_counter()
on_one_machine = crunch_units(crunch_start(), 0, CRUNCH_UNITS)
alone_ms = (time.perf_counter() - started) * 1e3
result_tables.column(
    {
        "replicas, in order": " -> ".join(result["replicas"]),
        "digest from the moving call": result["digest"][:32] + "...",
        "digest computed here in one go": on_one_machine[:32] + "...",
        "identical": result["digest"] == on_one_machine,
        "time in one go, here (ms)": alone_ms,
        "time on the replicas, all rounds (ms)": moved["time on the replica (ms)"].sum(),
    },
    "crunch",
    digits=1,
)

# %%
fig, ax = plt.subplots(figsize=(8, 3))
left = 0.0
colours = {"A": "tab:purple", "B": "tab:olive"}
for number, row in moved.iterrows():
    width = row["time on the replica (ms)"]
    ax.barh(0, width, left=left, color=colours[row["served by"]], edgecolor="white")
    ax.text(left + width / 2, 0, f"round {number}", ha="center", va="center", color="white")
    left += width
ax.barh(-1, alone_ms, color="tab:grey")
ax.set_yticks([0, -1], ["moving A <-> B", "one go, in this process"])
ax.set_xlabel("elapsed time (ms)")
ax.set_title(f"crunch of {CRUNCH_UNITS:,} steps: the same work, cut into slices")
ax.legend(
    [plt.Rectangle((0, 0), 1, 1, color=c) for c in (*colours.values(), "tab:grey")],
    ["replica A", "replica B", "computed here"],
    loc="lower right",
    fontsize="small",
)
fig.tight_layout()
plt.show()

# %% [markdown]
# What to notice: the slices add up to about the work of one go, plus a little per move
# (a round trip and a seal). Nothing was done twice. A 503 at the same points would have
# thrown each slice away, and the call would start again from step 0 on the next replica.

# %%
for client in replicas.values():
    client.close()

# %% [markdown]
# ## 2. A load spike, simulated
#
# Now a cluster under a spike: arrivals jump `SPIKE_FACTOR` times for `SPIKE_S` seconds.
# Three policies for a replica whose queue is long when a request reaches its checkpoint
# (halfway through its work):
#
# - **none**: keep working; the queue grows;
# - **reject-503**: stop and answer 503; the work so far is lost and the client retries
#   later (exponential backoff);
# - **mrtr-offload**: stop and hand the progress back in `requestState`; the client
#   retries at once and another replica resumes.
#
# The legacy architectures cannot carry progress, so for them offload falls back to 503.


# %%
def spike_run(policy: str, architecture: str = "mrtr", **overrides) -> RunSpec:
    """One overload run of `architecture` under shedding `policy`."""
    settings = {
        "shed_policy": policy,
        "replicas": REPLICAS,
        "lb_policy": LB_POLICY,
        "factor": SPIKE_FACTOR,
        "duration_s": SPIKE_S,
        "horizon_s": 600.0,
        **overrides,
    }
    labels = (("policy", policy), *overrides.items())
    return RunSpec(study.scenarios.build("overload", **settings), architecture, SEED, labels)


POLICIES = ("none", "reject-503", "mrtr-offload")
timelines = {policy: labsim.simulate(spike_run(policy).params, "mrtr", SEED) for policy in POLICIES}
spike = timelines["none"].events.query("kind in ['spike-start', 'spike-end']")
result_tables.events(spike)

# %%
POLICY_COLOURS = {"none": "tab:grey", "reject-503": "tab:red", "mrtr-offload": "tab:blue"}
fig, axes = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True)
for policy, run in timelines.items():
    frame = run.timeline
    axes[0].plot(
        frame["time_s"], frame["queued_requests"], color=POLICY_COLOURS[policy], label=policy
    )
    axes[1].plot(
        frame["time_s"], frame["in_flight_calls"], color=POLICY_COLOURS[policy], label=policy
    )
for ax in axes:
    ax.axvspan(*spike["time_s"], color="gold", alpha=0.2, label="spike")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="upper right")
axes[0].set_ylabel("requests queued\nfor a worker")
axes[1].set_ylabel("calls in flight")
axes[1].set_xlabel("simulated time (s)")
axes[1].set_xlim(spike["time_s"].iloc[0] - 60, spike["time_s"].iloc[1] + 120)
axes[0].set_title(f"A {SPIKE_FACTOR:g}x spike on {REPLICAS} MRTR replicas, by shedding policy")
fig.tight_layout()
plt.show()

# %% [markdown]
# The queues during the spike look alike for *none* and *offload*: the spike is beyond
# what the replicas can do (section 3 computes their capacity), so work moved from a busy
# replica lands on another busy replica. *reject-503* looks worse after the spike, not
# better: every rejected request comes back after its backoff, on top of new arrivals,
# and its first half is done again. Calls in flight stay high long after the spike ends.
#
# The numbers, for MRTR and for the two legacy architectures:

# %%
specs = [
    spike_run(policy, architecture)
    for architecture in labsim.ARCHITECTURES
    for policy in POLICIES
    if policy != "mrtr-offload" or architecture == "mrtr"
]
spike_runs = run_many(specs, processes=2)
spike_runs["architecture"] = spike_runs["architecture"].map(result_tables.label)
columns = {
    "architecture": "architecture",
    "policy": "shedding policy",
    "completed": "completed",
    "failed": "failed",
    "goodput_per_s": "goodput (calls/s)",
    "p99_latency_s": "p99 latency (s)",
    "wasted_cpu_s": "wasted CPU (s)",
    "offloads": "offloads",
    "retries": "retried requests",
}
spike_runs[list(columns)].rename(columns=columns).set_index(
    ["architecture", "shedding policy"]
).round(2)

# %% [markdown]
# Read it as a budget. *Goodput* is calls completed per second over the measured window;
# *wasted CPU* is work done and thrown away. Under 503 the cluster spends a large part of
# its CPU on halves that are discarded, and many calls give up after their retries: the
# spike becomes a retry storm. Offloading wastes nothing and keeps every call.
#
# ## 3. Where offloading helps: near capacity
#
# Offloading moves work to a replica with a shorter queue. That helps when there *is* a
# shorter queue somewhere: when the cluster as a whole can take the load but some replicas
# get more than their share. How big a spike fills this cluster? Each call needs CPU for
# each of its rounds, and the cluster has `REPLICAS x workers_per_replica` workers:

# %%
base = spike_run("none").params
rounds_per_call = requests_per_call(base.workload.tools, base.workload.tool_mix)
work_per_call_s = rounds_per_call * (
    base.workload.round_cpu.mean_s + base.workload.request_overhead_s
)
capacity = REPLICAS * base.cluster.workers_per_replica / work_per_call_s
result_tables.column(
    {
        "normal arrival rate (calls/s)": base.workload.arrival_rate_per_s,
        "CPU per call (ms)": work_per_call_s * 1e3,
        "cluster capacity (calls/s)": capacity,
        "spike factor that fills it": capacity / base.workload.arrival_rate_per_s,
    },
    "capacity",
)

# %% [markdown]
# A sweep of the spike's size, on either side of that capacity (dotted line):

# %%
sweep_specs = [spike_run(policy, factor=factor) for factor in SPIKE_FACTORS for policy in POLICIES]
by_factor = run_many(sweep_specs, processes=2)
panels = [
    Panel("p99_latency_s", "p99 server latency (s)", yscale="log"),
    Panel("goodput_per_s", "goodput (calls/s)"),
    Panel("wasted_cpu_s", "wasted CPU (s)"),
]
fig = plots.sweep_panels(
    by_factor.melt(["factor", "policy"], [p.metric for p in panels], "metric", "mean"),
    "factor",
    panels,
    by="policy",
    colours=POLICY_COLOURS,
    marks=[(capacity / base.workload.arrival_rate_per_s, "capacity")],
    xlabel="spike (x the normal arrival rate)",
    title=f"{REPLICAS} MRTR replicas, {SPIKE_S:g} s spikes of growing size",
)
plt.show()

# %% [markdown]
# What to notice:
#
# - **Small spikes**: queues stay short, nobody sheds, the three policies are the same.
# - **Near capacity**: some replicas are swamped while others are not. Offloading moves
#   half-done calls to the others and cuts the tail latency; 503 cuts queues too, but
#   pays with wasted work and backoff delays.
# - **Beyond capacity**: there is no idle replica to move work to. Offload matches no
#   shedding (nothing is lost, nothing gained), while 503 collapses into a retry storm.

# %% [markdown]
# ## Exercises
#
# Solutions are in the collapsed cells under each exercise: click the three dots to open
# one, after you have tried.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** In the live demo, how many rounds does a `crunch` of `CRUNCH_UNITS`
# steps take when each replica sheds every `SHED_EVERY_UNITS` steps? Predict it, then
# check with `MrtrClient.run`, which drives the rounds itself, against a single replica
# that sheds every 30,000 steps (the same replica serves every round: the state does not
# care who opens it).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    predicted = -(-CRUNCH_UNITS // SHED_EVERY_UNITS)  # ceiling division
    print("predicted rounds:", predicted, "| measured:", len(call.rounds))
    with MrtrClient.for_app(replica_app("C", shed_every_units=30_000)) as single:
        again = single.call_tool("crunch", {"units": CRUNCH_UNITS})
    print(
        "with 30,000 steps per slice:",
        len(again.rounds),
        "rounds;",
        -(-CRUNCH_UNITS // 30_000),
        "predicted",
    )
    print("same digest:", again.result["structuredContent"]["digest"] == on_one_machine)

# %% [markdown] tags=["exercise"]
# **Exercise 2.** The checkpoint sits halfway through a request's work
# (`checkpoint_fraction=0.5`). Move it to 0.9 (late) and to 0.1 (early) for the
# near-capacity spike (factor 12) and compare wasted CPU under 503 and p99 latency under
# offload. Why does a late checkpoint hurt 503 more?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    checkpoint_specs = [
        spike_run(policy, factor=12.0, checkpoint_fraction=fraction)
        for fraction in (0.1, 0.5, 0.9)
        for policy in ("reject-503", "mrtr-offload")
    ]
    checkpoints = run_many(checkpoint_specs, processes=2)
    display(
        result_tables.pivot(
            checkpoints, "checkpoint_fraction", "policy", ["wasted_cpu_s", "p99_latency_s"]
        )
    )
    # Under 503 everything done before the checkpoint is thrown away: the later the
    # checkpoint, the bigger the discarded part. Offload keeps it whatever the fraction.

# %% [markdown] tags=["exercise"]
# **Exercise 3.** Offloading needs somewhere to put the work. Give the spike of factor 14
# (beyond capacity, above) two more replicas. How do p99 latency and goodput change for no
# shedding and for offload? What does that say about offloading versus autoscaling?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    scaled_specs = [
        spike_run(policy, factor=14.0, replicas=replicas)
        for replicas in (REPLICAS, REPLICAS + 2)
        for policy in ("none", "mrtr-offload")
    ]
    scaled = run_many(scaled_specs, processes=2)
    display(result_tables.pivot(scaled, "replicas", "policy", ["p99_latency_s", "goodput_per_s"]))
    # With spare replicas the spike is near capacity instead of beyond it, and offloading
    # turns the spare capacity into shorter tails. Offloading spreads load; only more replicas
    # add capacity. The two work together: new replicas take offloaded calls at once, without
    # waiting for new arrivals.
