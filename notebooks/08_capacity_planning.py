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
# 5. A plan tested live: a CPU-heavy tool you set, its plan, and `verify-plan` running
#    that plan on a real cluster at its fleet and one replica fewer, side by side.
#
# Section 5's live check needs `haproxy` and `redis-server` (`make lab` installs both) and
# takes about seven minutes. Without them (a laptop with only the notebooks' Python
# packages), or in a quick run, it shows a check recorded on a machine that had them,
# marked RECORDED, with its date, commit and command.
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
import dataclasses
import importlib.util
import json
import shlex

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display
from matplotlib.ticker import MaxNLocator

import labsim
from labsim import ARCHITECTURES, study
from labsim.cli.main import parser as labsim_parser
from labsim.cli.plan import request_from, stated_fields
from labsim.study import plots
from labsim.study.capacity import first_guess, plan, simulated
from labsim.study.plan import ArchitectureAnswer, Plan
from labsim.study.plan_report import table
from labsim.study.plan_request import PlanRequest
from lessons import recordings, result_tables
from lessons.answers import hidden_answer
from lessons.claims import claim
from lessons.state_expiry import expiry_beside_tail
from loadtest.harness.haproxy import HAProxy
from loadtest.harness.redis_server import RedisServer
from loadtest.verify.check import verify_plan
from loadtest.verify.plan_file import parse_plan

NOTEBOOK = "08_capacity_planning"

# %% [markdown]
# ## 1. The plan, per architecture
#
# The request below is the architect's question. `plan` makes a first guess per
# architecture, then simulates fleets around it (`REPLICATIONS` seeded runs each) until
# it has the smallest one that meets the SLO and every limit, and the one just below it
# that does not. The same answer comes from the command line:
#
# ```sh
# python -m labsim plan --rate 10 --think-time-median-s 90 --slo-p95-ms 400 --vcpus 1 \
#     --memory-gb-per-replica 2 --connection-limit 256 --json plan.json
# ```

# %%
request = PlanRequest(
    rate_per_s=RATE_PER_S,
    think_time_median_s=THINK_MEDIAN_S,
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
    {result_tables.label(a): r.cost_breakdown for a, r in answer.architectures.items()}
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
ttl_s = labsim.SimParams().state.state_ttl_s
ttl = expiry_beside_tail(TTL_THINK_MEDIANS_S, SEED, horizon_s=2400.0 if QUICK else 7200.0)
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
# ## 5. A plan tested live
#
# A plan is a prediction, and a class should see it tested. Take a tool that computes:
# each round of it spends `TOOL_CPU_MS` milliseconds of a replica's CPU (rendering a
# chart, scoring a document), where the lab's own tools spend well under one. Its users
# answer within a second or so, so what a replica holds while they think hardly matters:
# the CPU sizes every fleet. `plan` predicts the smallest fleet of each architecture that
# meets the SLO, and says that one replica fewer misses it. `python -m loadtest
# verify-plan` then runs that very workload on a real cluster (uvicorn replicas behind
# HAProxy, Redis for the shared store, users from Locust arriving as the plan's do) at
# the plan's fleet and at one replica fewer, and judges each run as the plan judged its
# simulation.
#
# Set the tool's work here, then run the section.

# %%
# A CPU-heavy tool and its workload. The recorded live check below is of these values as
# they stand; change TOOL_CPU_MS and the section says how to check yours.
TOOL_CPU_MS = 22.0  # server work per round of the tool, mean (ms)
TOOL_CPU_CV = 0.3  # its spread (std / mean), lognormal
HEAVY_RATE_PER_S = 20.0  # calls arriving per second
HEAVY_THINK_MEDIAN_S = 1.0  # users answer in about a second (lognormal median)
HEAVY_THINK_SIGMA = 0.5
HEAVY_SLO_P95_MS = 250.0
HEAVY_VCPUS = 1.0  # per replica (memory: the plan's default, 4 GB)
HEAVY_CONNECTION_LIMIT = 256
HEAVY_MEASURE_S = 60.0  # simulated seconds per run of the plan
LIVE_JUDGED_S = 60.0  # seconds of each live run that are judged (verify-plan --duration)

# %% [markdown]
# The notebook makes the plan from its command line: it parses the command with
# `labsim`'s own parser and calls the function the command calls (`plan`), so the two
# cannot disagree. The same command in a terminal prints the same answer and writes it
# as `cpu.json`, the file `verify-plan` reads.

# %%
PLAN_COMMAND = (
    f"python -m labsim plan --rate {HEAVY_RATE_PER_S:g} "
    f"--think-time-median-s {HEAVY_THINK_MEDIAN_S:g} --think-time-sigma {HEAVY_THINK_SIGMA:g} "
    f"--never-answer 0 --slo-p95-ms {HEAVY_SLO_P95_MS:g} --round-cpu-ms {TOOL_CPU_MS:g} "
    f"--round-cpu-cv {TOOL_CPU_CV:g} --round-cpu-kind lognormal --vcpus {HEAVY_VCPUS:g} "
    f"--connection-limit {HEAVY_CONNECTION_LIMIT} --tool-mix get_weather=1 "
    f"--measure-s {HEAVY_MEASURE_S:g} --json cpu.json"
)
VERIFY_COMMAND = (
    f"python -m loadtest verify-plan cpu.json --duration {LIVE_JUDGED_S:g} --json cpu.verified.json"
)
plan_args = labsim_parser().parse_args(shlex.split(PLAN_COMMAND)[3:])
heavy_plan = dataclasses.replace(
    plan(request_from(plan_args), processes=2, stated=stated_fields(plan_args)),
    command=PLAN_COMMAND,
)


def planned_row(answer: ArchitectureAnswer) -> dict:
    """One architecture's answer in a row: its fleet N, what binds it, and N-1."""
    if answer.fleet is None:
        return {"N (replicas)": "none", "binding": answer.binding, "why": answer.reason}
    fewer = answer.one_fewer
    row = {"N (replicas)": answer.fleet.replicas, "binding": answer.binding}
    row["p95 at N (ms)"] = answer.fleet.p95_ms
    row |= {"N-1": "none", "p95 at N-1 (ms)": None, "what breaks at N-1": "-"}
    if fewer is not None:
        row["N-1"] = fewer.replicas
        # No p95 is a miss: too few calls completed to have one.
        row["p95 at N-1 (ms)"] = "miss" if fewer.p95_ms is None else fewer.p95_ms
        row["what breaks at N-1"] = ", ".join(fewer.broke) or "-"
    return row | {"bill at N (USD/month)": answer.cost_per_month_usd}


print(PLAN_COMMAND)
planned = result_tables.columns(
    {result_tables.label(a): planned_row(r) for a, r in heavy_plan.architectures.items()},
    digits=1,
).T
claim(
    all(r.binding == "cpu" for r in heavy_plan.architectures.values())
    and len({r.replicas for r in heavy_plan.architectures.values()}) == 1,
    "with users who answer in a second, the CPU sizes every fleet, and all three are the same",
    fleets={a: (r.replicas, r.binding) for a, r in heavy_plan.architectures.items()},
)
beyond_store = {
    a: (r.cost_per_month_usd or 0.0) - (r.cost_breakdown or {}).get("store_usd", 0.0)
    for a, r in heavy_plan.architectures.items()
}
claim(
    max(beyond_store.values()) < 1.05 * min(beyond_store.values()),
    "the bills differ by the shared store, and by little else",
    bill_without_the_store_usd=beyond_store,
)
planned

# %% [markdown]
# ### The live check, beside the plan
#
# `verify-plan` reads the plan's JSON and, for each architecture, starts a cluster of N
# replicas, drives the plan's workload at it (the tool played by a demo tool spending the
# same CPU a round), judges `LIVE_JUDGED_S` seconds after a short warm-up, stops the
# cluster, and does the same with N-1. Three architectures, two fleets each: about seven
# minutes. It does not judge a run whose replicas waited for a CPU that other programs
# held, and it scales down a plan this machine cannot host (fewer replicas, the same load
# on each); its output says so when it does either.

# %%
INSTALLED = {
    "haproxy": HAProxy.available(),
    "redis-server": RedisServer.available(),
    "locust (Python package)": importlib.util.find_spec("locust") is not None,
}
LIVE_PARAMETERS = {
    "TOOL_CPU_MS": TOOL_CPU_MS,
    "TOOL_CPU_CV": TOOL_CPU_CV,
    "HEAVY_RATE_PER_S": HEAVY_RATE_PER_S,
    "HEAVY_THINK_MEDIAN_S": HEAVY_THINK_MEDIAN_S,
    "HEAVY_THINK_SIGMA": HEAVY_THINK_SIGMA,
    "HEAVY_SLO_P95_MS": HEAVY_SLO_P95_MS,
    "HEAVY_VCPUS": HEAVY_VCPUS,
    "HEAVY_CONNECTION_LIMIT": HEAVY_CONNECTION_LIMIT,
    "HEAVY_MEASURE_S": HEAVY_MEASURE_S,
    "LIVE_JUDGED_S": LIVE_JUDGED_S,
}


def check_live() -> dict:
    """The plan above as `cpu.json`, and verify-plan's live verdicts on it."""
    plan_json = json.loads(json.dumps(heavy_plan.to_json()))
    verified = verify_plan(
        parse_plan(plan_json, "cpu.json"), source="cpu.json", judged_s=LIVE_JUDGED_S
    )
    return {"commands": [PLAN_COMMAND, VERIFY_COMMAND], "plan": plan_json, "verified": verified}


missing = recordings.missing_programs(INSTALLED)
if QUICK and not missing:
    # A quick run does not wait seven minutes: it shows the recording, as a laptop does.
    checked = recordings.read(NOTEBOOK, "verify")
    print(
        "RECORDED RUN, not live: QUICK=1, and the live check takes about seven minutes.\n"
        + recordings.banner(checked, missing).split("\n", 1)[1]
    )
else:
    checked = recordings.live_or_recorded(
        NOTEBOOK, "verify", needed=INSTALLED, parameters=LIVE_PARAMETERS, run=check_live
    )
# The plan the check tested, read as verify-plan reads it.
checked_plan = Plan.from_json(checked.data["plan"], "cpu.json")
changed = {
    name: value for name, value in LIVE_PARAMETERS.items() if checked.parameters[name] != value
}
if changed:
    print(
        "\nYour parameters differ from the recording's: "
        + ", ".join(
            f"{k} = {v:g} (recorded: {checked.parameters[k]:g})" for k, v in changed.items()
        )
        + f".\nThe recording tests the plan of a {checked.parameters['TOOL_CPU_MS']:g} ms tool, "
        "not the plan above. To test yours live, where HAProxy, Redis and Locust are "
        "installed, run these two commands (or this notebook without QUICK=1):\n"
        f"    {PLAN_COMMAND}\n    {VERIFY_COMMAND}"
    )
elif checked.recorded:
    fleets = {a: r.replicas for a, r in heavy_plan.architectures.items()}
    recorded_fleets = {a: r.replicas for a, r in checked_plan.architectures.items()}
    recorded_plan_command, recorded_verify_command = checked.data["commands"]
    # The same question, whatever names its flags had then (older names are still read).
    recorded_args = labsim_parser().parse_args(shlex.split(recorded_plan_command)[3:])
    same_question = request_from(recorded_args) == request_from(plan_args)
    claim(
        same_question and recorded_verify_command == VERIFY_COMMAND and fleets == recorded_fleets,
        "the recording ran this section's commands, and tested a plan with the fleets of the "
        "plan made here",
        commands=checked.data["commands"],
        here=fleets,
        recorded=recorded_fleets,
    )
print("\nThe commands that made it:", *checked.data["commands"], sep="\n    ")

# %% [markdown]
# The plan and the live runs side by side, one row per architecture. At the plan's fleet
# N and at N-1: whether the fleet met the SLO, simulated then live; its p95, simulated
# then live; the share of calls completed live. A verdict held when the live runs agreed
# with the plan at both sizes.

# %%
NOT_RUN = {"replicas": None, "meets": None, "p95_ms": None}


def yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def ms(found: dict) -> str:
    """A run's p95; a run without one missed (too few calls completed to have one)."""
    if not found:
        return "-"
    return "miss" if found["p95_ms"] is None else f"{found['p95_ms']:.0f}"


def at_size(planned_here: dict, run: dict) -> dict:
    """One fleet size: the plan's answer and the live run's, each cell "plan / live"."""
    n = planned_here["replicas"]
    simulated = planned_here if n is not None else {}
    live = run.get("live") or {}
    scaled = run.get("replicas") not in (None, n)
    return {
        "replicas": "-" if n is None else (f"{n} (run as {run['replicas']})" if scaled else n),
        "meets SLO: plan / live": f"{yes_no(simulated.get('meets'))} / {yes_no(live.get('meets'))}",
        "p95 (ms): plan / live": f"{ms(simulated)} / {ms(live)}",
        "completed live": f"{live['completed_share']:.1%}" if live else "-",
    }


def side_by_side(entry: dict) -> dict:
    """An architecture's row: the plan beside the live runs at N and N-1, and the verdict."""
    fewer = entry.get("one_fewer") or {}
    cells = {("at N", k): v for k, v in at_size(entry.get("plan", NOT_RUN), entry).items()}
    cells |= {("at N-1", k): v for k, v in at_size(fewer.get("plan", NOT_RUN), fewer).items()}
    held = yes_no(entry["verdict_held"])
    cells[("", "verdict held")] = held if entry["judged"] else f"not judged: {entry['reason']}"
    return cells


verified = checked.data["verified"]
# In the order of the plan's table above.
entries = {a: verified["architectures"][a] for a in ARCHITECTURES if a in verified["architectures"]}
pd.DataFrame({result_tables.label(a): side_by_side(e) for a, e in entries.items()}).T

# %% [markdown]
# The same p95s as a figure, against the SLO: the plan's with its 95% interval over the
# seeded runs, the live run's beside it.


# %%
def p95_beside_slo(entries: dict, planned: Plan, slo_ms: float, note: str) -> plt.Figure:
    """Per architecture (`entries`: verify-plan's), the p95 the plan simulated and the one
    measured live, at N and N-1, against the SLO."""
    archs = list(entries)
    fig, axes = plt.subplots(
        1, len(archs), figsize=(11, 4), sharey=True, squeeze=False, layout="constrained"
    )
    for ax, arch in zip(axes[0], archs, strict=True):
        entry, answer = entries[arch], planned.architectures[arch]
        sizes = [("N", entry, answer.fleet)]
        if "one_fewer" in entry:
            sizes.append(("N-1", entry["one_fewer"], answer.one_fewer))
        ticks, simulated_ms, below, above, live_ms = [], [], [], [], []
        for name, run, simulated_run in sizes:
            n = run["plan"]["replicas"]
            ticks.append(f"{name}: {n} replica{'s' if n != 1 else ''}")
            p95 = run["plan"]["p95_ms"]
            low, high = simulated_run.p95_ms_ci if simulated_run else (None, None)
            simulated_ms.append(np.nan if p95 is None else p95)
            below.append(np.nan if p95 is None or low is None else p95 - low)
            above.append(np.nan if p95 is None or high is None else high - p95)
            live_p95 = (run.get("live") or {}).get("p95_ms")
            live_ms.append(np.nan if live_p95 is None else live_p95)
        x = np.arange(len(ticks))
        ax.bar(
            x - 0.2, simulated_ms, 0.4, yerr=[below, above], capsize=4,
            label="plan: simulated p95, 95% interval",
        )  # fmt: skip
        ax.bar(x + 0.2, live_ms, 0.4, label="live: measured by verify-plan")
        ax.axhline(
            slo_ms, color="black", linestyle="--", linewidth=1.2, label=f"SLO: p95 {slo_ms:g} ms"
        )
        ax.set_xticks(x, ticks)
        ax.set_title(result_tables.label(arch))
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("p95 server latency (ms)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize="small")
    fig.suptitle(f"The plan's p95 and the live p95 against the {slo_ms:g} ms SLO ({note})")
    return fig


fig = p95_beside_slo(entries, checked_plan, checked.parameters["HEAVY_SLO_P95_MS"], checked.note)
plt.show()
at_n = {a: (e.get("live") or {}).get("meets") for a, e in entries.items()}
at_fewer = {
    a: (e["one_fewer"].get("live") or {}).get("meets")
    for a, e in entries.items()
    if "one_fewer" in e
}
claim(
    verified["judged"] and all(e["verdict_held"] for e in entries.values()),
    "every verdict of the plan held live",
    held={a: e["verdict_held"] for a, e in entries.items()},
    reason=verified.get("reason"),
)
claim(
    all(meets is True for meets in at_n.values())
    and at_fewer
    and all(meets is False for meets in at_fewer.values()),
    "live, each architecture's planned fleet N met the SLO, and N-1 missed it",
    meets_at_n=at_n,
    meets_at_n_minus_1=at_fewer,
)
broke = {
    a: {
        "plan": list(checked_plan.architectures[a].one_fewer.broke),
        "live": e["one_fewer"]["live"]["broke"],
    }
    for a, e in entries.items()
    if "one_fewer" in e
}
claim(
    all(set(b["plan"]) <= set(b["live"]) for b in broke.values()),
    "N-1 broke live the limits the plan said it would break",
    broke=broke,
)

# %% [markdown]
# Why is one replica not enough, when it has the CPU for the work? The busiest replica's
# share of time at work, live, at N-1 against the plan's CPU target:

# %%
target = checked_plan.request.target_cpu_utilization
busy = {
    result_tables.label(a): {
        "busy at N": max(e["live"]["cpu_utilization"].values()),
        "busy at N-1": max(e["one_fewer"]["live"]["cpu_utilization"].values()),
        "completed at N-1": e["one_fewer"]["live"]["completed_share"],
        "p95 at N-1 / p95 at N": e["one_fewer"]["live"]["p95_ms"] / e["live"]["p95_ms"],
    }
    for a, e in entries.items()
    if "one_fewer" in e
}
busy_table = pd.DataFrame(busy).T
claim(
    ((busy_table["busy at N-1"] > target) & (busy_table["busy at N-1"] < 1)).all()
    and (busy_table["completed at N-1"] >= 0.999).all(),
    f"at N-1 a replica is busy beyond the plan's {target:.0%} target but not full, and still "
    "completes the calls",
    busy=busy_table.round(3).to_dict("index"),
)
claim(
    (busy_table["p95 at N-1 / p95 at N"] > 2).all(),
    "yet one replica fewer more than doubles the live p95",
    ratio=busy_table["p95 at N-1 / p95 at N"].round(2).to_dict(),
)
shares = ["busy at N", "busy at N-1", "completed at N-1"]
busy_table.style.format("{:.0%}", subset=shares).format("{:.1f}x", subset=["p95 at N-1 / p95 at N"])

# %% [markdown]
# **What the check shows.** The plan named a fleet for each architecture and said that
# one replica fewer would miss; live, the fleet met the SLO and one fewer missed it, for
# the reasons the plan gave: too busy, and so too slow. One fewer did not run out of CPU:
# it finished every call. But a replica busy most of the time makes each request wait
# for the ones ahead of it, and near full load that queue grows fast: twice the load on
# a replica, and the p95 grows more than twice. That is why the plan keeps each replica
# below its CPU target: the spare time is what keeps the queue short.
#
# The milliseconds of the plan and of the live run need not agree to the last digit (the
# table shows how far apart they are); the verdict, which is what an architect buys
# replicas by, is what the live run tests. And here the three architectures need the same
# fleet: when users answer in a second, what a replica holds while they think is small,
# and a round costs the same CPU whichever architecture serves it. The bills differ by
# the shared store that SSE + shared store pays for, and by little else.

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

# %% [markdown] tags=["exercise"]
# **Exercise 4.** Make the tool of section 5 twice as heavy (`2 * TOOL_CPU_MS` a round).
# First predict the fleet from the CPU alone: calls per second x rounds per call (two:
# the question and its answer) x work per round is the CPU the work takes; divide by the
# plan's 70% CPU target and round up. Then make the plan. Does the simulation agree with
# your arithmetic? Which constraint binds, and what happens to the bill?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    The arithmetic: 20 calls a second x 2 rounds x 44 ms is 1.76 CPU cores of work; at
    70% busy each, 2.5 replicas, so **3**. The plan agrees for **MRTR and the sticky
    balancer**: three replicas, sized by their CPU.

    **SSE + shared store needs a fourth**, and not for its CPU: at three replicas its
    p95 is over the SLO (binding: latency). Its answer is parsed on whichever replica
    the balancer picks and relayed through the store to the replica that holds the call,
    so an answer can wait in two replicas' queues, and at 60% busy those waits add up.

    For MRTR and the sticky balancer, twice the work did not take twice the replicas:
    the two replicas of section 5 were under half busy, with room to spare. SSE + shared
    store's fleet, and its bill for replicas, did double.
    """
):
    import math

    heavier = dataclasses.replace(request_from(plan_args), round_cpu_ms=2 * TOOL_CPU_MS)
    cores = heavier.rate_per_s * 2 * heavier.round_cpu_ms / 1e3
    predicted = math.ceil(cores / heavier.target_cpu_utilization)
    print(
        f"{cores:.2f} CPU cores of work; at {heavier.target_cpu_utilization:.0%} each, "
        f"{predicted} replicas"
    )
    doubled = plan(heavier, processes=2)
    display(
        result_tables.columns(
            {result_tables.label(a): planned_row(r) for a, r in doubled.architectures.items()},
            digits=1,
        ).T
    )
    fleets = {a: r.replicas for a, r in doubled.architectures.items()}
    claim(
        fleets["mrtr"] == fleets["sticky"] == predicted
        and doubled.architectures["mrtr"].binding == "cpu",
        "for MRTR and the sticky balancer the plan agrees with the arithmetic",
        predicted=predicted,
        fleets=fleets,
    )
    claim(
        fleets["sse-store"] > predicted and doubled.architectures["sse-store"].binding == "latency",
        "SSE + shared store needs more replicas, for its latency",
        sse_store=(fleets["sse-store"], doubled.architectures["sse-store"].binding),
    )
    before = {a: r.replicas for a, r in heavy_plan.architectures.items()}
    claim(
        all(fleets[a] < 2 * before[a] for a in ("mrtr", "sticky")),
        "for MRTR and the sticky balancer, twice the work takes fewer than twice the replicas",
        before=before,
        after=fleets,
    )
