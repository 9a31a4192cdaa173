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
# # 6. A live swarm, and the simulation's prediction beside it
#
# The earlier notebooks simulated thousands of replicas. This one runs the real thing,
# small: server replicas as processes, a real HAProxy in front of them, Redis where the
# architecture needs it, and a Locust swarm of users who call the demo tools, think, and
# answer. In the middle of each swarm, a rolling upgrade replaces every replica with tool
# version 2 and rotated state keys. Then the simulation is given the same parameters, and
# its prediction is put beside the measurement.
#
# **What you will learn**
#
# 1. What a cluster is made of, started from the notebook (and stopped: nothing is left
#    running), and how one MRTR call's rounds spread over its replicas.
# 2. How each architecture lives through a rolling upgrade under load: calls completed,
#    calls started again, users asked again, latency, and the time each drain took.
# 3. How to read the per-second timeline of a run against its faults.
# 4. How far the simulation, fed the same parameters, predicts what was measured.
#
# Times are scaled down so that a swarm fits in seconds: users think for about half a
# second (not ten), and a drain times out after a couple of seconds (not minutes). The
# ratios that matter are kept. Everything listens on 127.0.0.1, on free ports.

# %% tags=["parameters"]
import os

# The tests set QUICK=1 to run a shorter swarm.
QUICK = os.environ.get("QUICK") == "1"
REPLICAS = 2 if QUICK else 3
USERS = 4 if QUICK else 20
SWARM_S = 5.0 if QUICK else 20.0  # how long each swarm runs
UPGRADE_AT_S = 1.0 if QUICK else 5.0  # when the rolling upgrade starts, into the swarm
DRAIN_TIMEOUT_S = 2.0  # per replica, then whatever it still holds is cut
THINK_MEDIAN_S = 0.5  # users' median think time per question (lognormal)
SIMULATED_RUNS = 20  # seeded simulation runs per architecture, for the prediction
SEED = 17

# %%
import ast
import random
import time

import httpx
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import result_tables
import swarm_figures
from answers import hidden_answer
from IPython.display import display

from labsim import study
from loadtest.config import ARCHITECTURES, LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.harness.haproxy import HAProxy
from loadtest.harness.redis_server import RedisServer
from loadtest.swarm import scenario_twin
from loadtest.swarm.scenario_run import LOCUSTFILE, USER_CLASSES, run_scenario
from loadtest.users.simulated_user import answer_for
from server.client import Exchange

# %% [markdown]
# ## 1. What is installed, and which architectures can run
#
# The cluster needs `haproxy`, and the store architecture `redis-server` (`make lab`
# installs both where it can). Each architecture also needs its Locust user class.

# %%
defined = {
    node.name for node in ast.parse(LOCUSTFILE.read_text()).body if isinstance(node, ast.ClassDef)
}
needs = {
    "mrtr": [HAProxy.available()],
    "sticky": [HAProxy.available()],
    "sse-store": [HAProxy.available(), RedisServer.available()],
}
ready = pd.DataFrame(
    {
        result_tables.label(arch): {
            "Locust user class": USER_CLASSES[arch],
            "defined in the locustfile": USER_CLASSES[arch] in defined,
            "programs installed": all(needs[arch]),
        }
        for arch in ARCHITECTURES
    }
).T
LIVE = [arch for arch in ARCHITECTURES if USER_CLASSES[arch] in defined and all(needs[arch])]
print("architectures that run live here:", ", ".join(LIVE) or "none")
ready

# %% [markdown]
# ## 2. A cluster, started and stopped from the notebook
#
# `loadtest.harness.cluster.Cluster` starts the replicas (`python -m server`, each on a free port,
# all sharing the `requestState` keys), then HAProxy in front of them with health checks,
# and Redis first when the architecture needs it. As a context manager it stops every
# process it started when the block ends, also after an error.
#
# Inside the block, three MRTR calls go through the load balancer, round by round. HAProxy
# names the replica that answered each round in the `X-Served-By` header.


# %%
def call_through(url: str, http: httpx.Client, tool: str, arguments: dict) -> list[dict]:
    """One MRTR call through the load balancer; a row per round: who served it, what came back."""
    exchange = Exchange("tools/call", {"name": tool, "arguments": arguments}, {"elicitation": {}})
    rows = []
    rng = random.Random(SEED)
    while True:
        headers, body = exchange.next_request()
        response = http.post(url, json=body, headers=headers)
        done = exchange.record(body, response.status_code, response.json(), 0.0)
        result = exchange.rounds[-1].response["result"]
        rows.append(
            {
                "tool": tool,
                "round": len(exchange.rounds),
                "served by": response.headers.get("x-served-by", "?"),
                "result type": result.get("resultType"),
            }
        )
        if done:
            return rows
        exchange.answer(
            {key: answer_for(request, rng) for key, request in exchange.input_requests.items()}
        )


CALLS = [
    ("get_weather", {"location": "Oslo"}),
    ("link_accounts", {}),
    ("update_work_item", {"workItemId": 7, "fields": {"System.State": "Resolved"}}),
]
if LIVE:
    with Cluster(LoadTestConfig(arch="mrtr", replicas=REPLICAS)) as cluster:
        started = {name: replica.pid for name, replica in cluster.replicas.items()}
        started["haproxy"] = cluster.lb.pid
        health = pd.DataFrame({name: cluster.health(name) for name in cluster.names}).T
        with httpx.Client(timeout=10) as http:
            rounds = pd.DataFrame(
                row
                for tool, arguments in CALLS
                for row in call_through(cluster.url, http, tool, arguments)
            )
    display(health)
else:
    print("no live cluster here: see section 1")

# %% [markdown]
# Each replica's `/healthz` (above): its id, its tool version, what it holds. And the
# rounds of the three calls: any round may land on any replica.

# %%
if LIVE:
    display(rounds.set_index(["tool", "round"]))

# %% [markdown]
# The block is over; every process the cluster started has exited:


# %%
def running(pid: int) -> bool:
    """Whether a process with this id is still alive (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


if LIVE:
    display(
        result_tables.column({name: running(pid) for name, pid in started.items()}, "still running")
    )

# %% [markdown]
# ## 3. A swarm per architecture, with a rolling upgrade in the middle
#
# `loadtest.swarm.scenario_run.run_scenario` does the whole run: a fresh cluster, a headless
# Locust swarm of `USERS` users for `SWARM_S` seconds, and at `UPGRADE_AT_S` the rolling
# upgrade (for each replica: drain in HAProxy, wait until it holds nothing or
# `DRAIN_TIMEOUT_S` passes, stop, start version 2 with rotated keys, back in rotation).
# It returns a summary: every call, a per-second timeline, and the faults with their times.

# %%
config = {
    arch: LoadTestConfig(
        arch=arch,
        scenario="rolling-upgrade",
        replicas=REPLICAS,
        users=USERS,
        spawn_rate=USERS,
        duration_s=SWARM_S,
        fault_at_s=UPGRADE_AT_S,
        drain_timeout_s=DRAIN_TIMEOUT_S,
        think_time_median_s=THINK_MEDIAN_S,
    )
    for arch in ARCHITECTURES
}
summaries = {}
for arch in LIVE:
    began = time.perf_counter()
    summaries[arch] = run_scenario(config[arch], progress=lambda line: None)
    print(f"{result_tables.label(arch)}: {time.perf_counter() - began:.1f} s wall time")

# %% [markdown]
# The summaries, side by side. For the legacy architectures a call *started again* is a
# call whose stream was cut (here: by the drain timeout) and which the client ran again
# from its first question; for MRTR a *round re-sent* is one request that hit a stopping
# replica and was sent again, the user none the wiser.


# %%
def upgrade_facts(faults: list[dict]) -> dict:
    """Upgrade duration, slowest drain and streams cut, from a run's fault log."""
    times = {f["event"]: f["t"] for f in faults if f["event"] in ("upgrade start", "upgrade done")}
    stops = [f for f in faults if f["event"] == "stop"]
    return {
        "upgrade duration (s)": times.get("upgrade done", np.nan)
        - times.get("upgrade start", np.nan),
        "slowest drain (s)": max((f["drained_s"] for f in stops), default=np.nan),
        "sessions cut at the drain timeout": sum(f["still_held"] for f in stops),
    }


def measured_row(summary: dict) -> dict:
    calls = pd.DataFrame(summary["calls"])
    restarted = int((calls["retries"] > 0).sum()) if summary["arch"] != "mrtr" else 0
    return {
        "calls started": summary["started"],
        "completed": summary["completed"],
        "failed": summary["failed"],
        "lost": summary["lost"],
        "calls started again": restarted,
        "rounds re-sent": int(calls["retries"].sum()) if summary["arch"] == "mrtr" else 0,
        "answers asked again": summary["re_prompts"],
        "p50 latency (ms)": summary["latency_ms"]["p50"],
        "p99 latency (ms)": summary["latency_ms"]["p99"],
        "completed per second": summary["throughput_per_s"],
        **upgrade_facts(summary["faults"]),
    }


measured = pd.DataFrame({result_tables.label(a): measured_row(s) for a, s in summaries.items()}).T
measured

# %% [markdown]
# ## 4. The timelines
#
# Each run's per-second timeline: calls completed in that second, and calls open. The
# vertical lines are the upgrade: a replica drained (dotted), stopped (dashed), back up
# (solid).

# %%
swarm_figures.timelines(summaries, f"rolling upgrade from {UPGRADE_AT_S:g} s")
plt.show()

# %% [markdown]
# What to notice: under MRTR each drain ends at once (nothing is held between rounds), so
# the dotted and dashed lines of a replica almost touch. Under the legacy architectures a
# drain waits for the users its replica holds, up to the timeout, and calls still held
# then are cut and started again.
#
# And the latency each user felt, think time taken out:

# %%
swarm_figures.latency_cdf(summaries, "Measured latency during the rolling upgrade")
plt.show()

# %% [markdown]
# ## 5. The simulation's prediction for the same parameters
#
# The simulation is given the swarm's parameters: replicas, duration, the upgrade's time
# and drain timeout, the think-time distribution and the tool mix. Two things it cannot
# know in advance are *calibrated* from each run, and said so: how long a replica took to
# restart (from the fault log) and the server time per round (from the measured latency).
#
# One difference between the protocols matters here: how many times a user stops to
# think during a call. MRTR puts all the questions of a round in one `input_required`
# (`link_accounts` asks for both logins at once), so the client answers them together.
# The legacy protocol sends them as separate requests on the stream, one after another.
#
# The swarm is a closed loop (each user starts a new call when the last one ends), the
# simulation an open one (Poisson arrivals), so the arrival rate comes from Little's law:
# users divided by the time one call takes, thinking included.

# %%
base = config["mrtr"]
twin = {
    arch: scenario_twin.twin_inputs(config[arch], summaries.get(arch)) for arch in ARCHITECTURES
}
inputs = pd.DataFrame(
    {
        arch: {
            "think stops per call": t.think_stops_per_call,
            "server time per round, measured (ms)": t.round_s * 1e3,
            "replica restart, measured (s)": t.restart_s,
            "one call, thinking included (s)": t.call_s,
            "arrival rate, by Little's law (calls/s)": t.arrival_rate_per_s,
            "calls per user's session": t.calls_per_session,
        }
        for arch, t in twin.items()
    }
).T
inputs.rename(index=result_tables.label).round(3)

# %% [markdown]
# `loadtest.swarm.scenario_twin` turns each architecture's configuration and run into labsim's
# parameters: the same replicas, think time, drain timeout and upgrade time, the swarm's
# tools in the swarm's mix (labsim's model of each demo tool asks what the server asks),
# and each user's calls in one session, as the live users keep their session cookie.

# %%
sim_params = {arch: scenario_twin.twin_params(config[arch], twin[arch]) for arch in ARCHITECTURES}
predicted_runs = {
    arch: study.replicate(params, arch, replications=SIMULATED_RUNS, seed=SEED, processes=1)
    for arch, params in sim_params.items()
}


def predicted_row(runs: pd.DataFrame) -> dict:
    return {
        "calls started": runs["calls"].mean(),
        "completed": runs["completed"].mean(),
        "calls started again": runs["restarts"].mean(),
        "answers asked again": runs["re_prompts"].mean(),
        "completed per second": runs["goodput_per_s"].mean(),
        "upgrade duration (s)": runs["upgrade_duration_s"].mean(),
    }


predicted = pd.DataFrame(
    {result_tables.label(a): predicted_row(r) for a, r in predicted_runs.items()}
).T
SHOWN = {  # column of the tables -> the simulation's per-run metric
    "calls started": "calls",
    "completed per second": "goodput_per_s",
    "calls started again": "restarts",
    "answers asked again": "re_prompts",
    "upgrade duration (s)": "upgrade_duration_s",
}
side_by_side = pd.concat(
    {
        "measured": measured.reindex(predicted.index)[list(SHOWN)],
        "simulated": predicted[list(SHOWN)],
    },
    axis=1,
).swaplevel(axis=1)[list(SHOWN)]
side_by_side.astype(float).round(2)

# %%
metrics = ["completed per second", "answers asked again", "upgrade duration (s)"]
spread = pd.DataFrame(
    {
        result_tables.label(a): {m: predicted_runs[a][SHOWN[m]].std() for m in metrics}
        for a in ARCHITECTURES
    }
).T
swarm_figures.against_simulation(
    predicted,
    spread,
    measured,
    metrics,
    f"Live swarm ({USERS} users, {REPLICAS} replicas, {SWARM_S:g} s) against the simulation",
)
plt.show()

# %% [markdown]
# How to read it: the simulation has never seen HAProxy, uvicorn or Locust, only the
# parameters above and two calibrated numbers per architecture. Where it agrees with the
# measurement, the model has the mechanism right: nothing is held under MRTR, so its
# rollout is just the restarts; held streams make legacy drains wait, and cut what
# outlasts the timeout. Where it disagrees, look for what the model leaves out:
#
# - a short swarm has few calls, so single runs scatter widely (the error bars show the
#   spread of the simulated runs; the measurement is one run);
# - the swarm's users are a closed loop that slows down when the servers do;
# - the live sticky balancer pins a *user* (their session cookie), not a call: while a
#   replica drains, HAProxy keeps sending that user's next calls to it, so a busy user can
#   keep it from ever draining. Compare the measured `slowest drain (s)` with
#   `DRAIN_TIMEOUT_S`: a drain that lasted the whole timeout was cut, not emptied. The
#   twin gives each user's calls one session for this reason; set `calls_per_session` to
#   1 in `sim_params["sticky"]` (exercise 4) and the simulated cuts all but vanish.

# %% [markdown]
# ## Exercises
#
# Solutions are in the collapsed cells under each exercise: click the three dots to open
# one, after you have tried.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** Check Little's law on the measurement itself: the number of users
# should equal the rate at which calls complete times the mean time one call takes
# (`ended - started` of each call, thinking included). How close is it for each
# architecture, and why is it not exact over a few seconds?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    for arch, summary in summaries.items():
        calls = pd.DataFrame(summary["calls"])
        mean_call_s = (calls["ended"] - calls["started"]).mean()
        rate = len(calls) / summary["duration_s"]
        print(
            f"{result_tables.label(arch)}: {rate:.2f} calls/s x {mean_call_s:.2f} s "
            f"= {rate * mean_call_s:.1f} users (of {USERS})"
        )
    # Close to the number of users. The edges of a short run bias it: calls still running when
    # the run starts being measured, and the last calls that finish after the swarm stops.

# %% [markdown] tags=["exercise"]
# **Exercise 2.** Which drain timeout would have let (almost) every held user finish
# answering before their replica stopped? Work it out from the think-time distribution
# (a legacy user holds a stream for one think time per question), then check it with the
# simulation for the sticky architecture, which takes a second instead of a swarm.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    from scipy import stats

    think = stats.lognorm(s=base.think_time_sigma, scale=THINK_MEDIAN_S)
    print(f"99% of think times are under {think.ppf(0.99):.2f} s")
    for drain_s in (DRAIN_TIMEOUT_S, 2 * think.ppf(0.99)):
        params = sim_params["sticky"].with_overrides(drain_timeout_s=drain_s)
        runs = study.replicate(
            params, "sticky", replications=SIMULATED_RUNS, seed=SEED, processes=1
        )
        print(
            f"drain timeout {drain_s:.1f} s: {runs['re_prompts'].mean():.2f} answers asked again, "
            f"upgrade {runs['upgrade_duration_s'].mean():.1f} s"
        )
    # A two-round call can hold a stream for two think times, hence the factor 2: longer drains
    # protect the users and slow the rollout.

# %% [markdown] tags=["exercise"]
# **Exercise 3.** `per_replica` in each summary counts the HTTP requests each replica
# served (from the balancer's `X-Served-By` header). How evenly did the load balancer
# spread them for each architecture? Compute the busiest replica's share divided by the
# fair share `1 / REPLICAS`. Why can a sticky balancer not spread as evenly?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    for arch, summary in summaries.items():
        share = pd.Series({r: v["requests"] for r, v in summary["per_replica"].items()})
        share = share / share.sum()
        print(
            f"{result_tables.label(arch)}: busiest replica {share.max():.0%} of requests "
            f"({share.max() * REPLICAS:.2f} x the fair share): "
            + ", ".join(f"{name} {part:.0%}" for name, part in share.items())
        )
    # The sticky balancer keeps every request of a call (and of a user's session) on one
    # replica, so a replica's load depends on which users it happened to get and how long
    # they think; round-robin balances request by request.

# %% [markdown] tags=["exercise"]
# **Exercise 4.** The twin gives each user's calls one session, as the live users keep
# their cookie. Simulate the sticky architecture again with every call its own session
# (`calls_per_session=1`): how many calls are started again now, against the measured
# count? What does that say about what a sticky balancer pins?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    for per_session in (twin["sticky"].calls_per_session, 1.0):
        params = sim_params["sticky"].with_overrides(calls_per_session=per_session)
        runs = study.replicate(
            params, "sticky", replications=SIMULATED_RUNS, seed=SEED, processes=1
        )
        print(
            f"{per_session:.1f} calls per session: {runs['restarts'].mean():.1f} calls started "
            f"again, {runs['re_prompts'].mean():.1f} answers asked again"
        )
    if "sticky" in summaries:
        print(f"measured: {measured.loc[result_tables.label('sticky'), 'calls started again']:.0f}")
    # Pinned call by call, a drained replica soon holds nothing: few calls are cut. Pinned
    # user by user, a busy user's next calls keep arriving at the draining replica, so it
    # still holds calls when the drain timeout strikes, and those are cut.
