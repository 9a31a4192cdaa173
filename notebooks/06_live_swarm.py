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
# 5. Why replicas of your own server, written with the official Python SDK, must share
#    the key and the name that seal `requestState`, and how the deployment doctor
#    (`python -m loadtest doctor`) finds out when they do not.
#
# Times are scaled down so that a swarm fits in seconds: users think for about half a
# second (not ten), and a drain times out after a couple of seconds (not minutes). The
# ratios that matter are kept. Everything listens on 127.0.0.1, on free ports.
#
# **Without HAProxy, Redis or Locust** (a laptop with only the notebooks' Python
# packages), the live parts say what is missing and show a run recorded on a machine
# that had them, from the same cells: marked RECORDED, with its date, commit, command and
# parameters. Everything after them (tables, figures, the simulation) is computed here
# from that run.
#
# A line starting with ✓ is a sentence of this notebook checked against the results just
# measured: if the server, the load test or the model changes so that it no longer holds,
# the notebook stops there and says what changed.

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
SDK_CALLS = 4  # calls through two replicas of an official-SDK server, half begun on each

# %%
import ast
import importlib.util
import random
import secrets
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from labsim import study
from lessons import result_tables, swarm_figures
from lessons.answers import hidden_answer
from lessons.claims import claim
from lessons.recordings import live_or_recorded
from lessons.sdk_replicas import round_robin_call, sdk_replicas
from loadtest.config import ARCHITECTURES, LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.harness.haproxy import HAProxy
from loadtest.harness.redis_server import RedisServer
from loadtest.scenarios.run import run_scenario
from loadtest.scenarios.twin import twin_inputs, twin_params
from loadtest.swarm.user_classes import LOCUSTFILE, USER_CLASSES
from loadtest.users.simulated_user import answer_for
from server.client import Handlers, MrtrClient

NOTEBOOK = "06_live_swarm"

# %% [markdown]
# ## 1. What is installed, and what runs live here
#
# The cluster needs `haproxy`, the store architecture `redis-server` (`make lab`
# installs both where it can), and the swarm Locust (the `load` install group) with a
# user class for each architecture in its locustfile.

# %%
INSTALLED = {
    "haproxy": HAProxy.available(),
    "redis-server": RedisServer.available(),
    "locust (Python package)": importlib.util.find_spec("locust") is not None,
}
defined = {
    node.name for node in ast.parse(LOCUSTFILE.read_text()).body if isinstance(node, ast.ClassDef)
}
NEEDS = {
    "mrtr": ["haproxy", "locust (Python package)"],
    "sticky": ["haproxy", "locust (Python package)"],
    "sse-store": ["haproxy", "redis-server", "locust (Python package)"],
}
ready = pd.DataFrame(
    {
        result_tables.label(arch): {
            "Locust user class": USER_CLASSES[arch],
            "defined in the locustfile": USER_CLASSES[arch] in defined,
            "needs": ", ".join(NEEDS[arch]),
            "all installed here": all(INSTALLED[need] for need in NEEDS[arch]),
        }
        for arch in ARCHITECTURES
    }
).T
claim(
    all(USER_CLASSES[arch] in defined for arch in ARCHITECTURES),
    "the locustfile defines a user class for each architecture",
)
ready

# %% [markdown]
# ## 2. A cluster, started and stopped from the notebook
#
# `loadtest.harness.cluster.Cluster` starts the replicas (`python -m server`, each on a
# free port, all sharing the `requestState` keys), then HAProxy in front of them with
# health checks, and Redis first when the architecture needs it. As a context manager it
# stops every process it started when the block ends, also after an error.
#
# Inside the block, three MRTR calls go through the load balancer, round by round, with
# the lab's reference client (`server.client.MrtrClient`, answering as the swarm's
# simulated users do). HAProxy names the replica that answered each round in the
# `X-Served-By` header, and the client records it with the round (`Round.served_by`).

# %%
CALLS = [
    ("get_weather", {"location": "Oslo"}),
    ("link_accounts", {}),
    ("update_work_item", {"workItemId": 7, "fields": {"System.State": "Resolved"}}),
]


def running(pid: int) -> bool:
    """Whether a process with this id is still alive (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def tour_a_cluster() -> dict:
    """Start an MRTR cluster, read each replica's /healthz, make the calls through HAProxy,
    stop it; then check which of its processes still run."""
    rng = random.Random(SEED)
    user = Handlers(elicit=lambda params: answer_for({"params": params}, rng))
    with Cluster(LoadTestConfig(arch="mrtr", replicas=REPLICAS)) as cluster:
        started = {name: replica.pid for name, replica in cluster.replicas.items()}
        started["haproxy"] = cluster.lb.pid
        health = {name: cluster.health(name) for name in cluster.names}
        with MrtrClient(cluster.url, handlers=user) as client:
            calls = {tool: client.call_tool(tool, arguments) for tool, arguments in CALLS}
    rounds = [
        {
            "tool": tool,
            "round": number,
            "served by": done.served_by,
            "result type": (done.response or {}).get("result", {}).get("resultType"),
        }
        for tool, call in calls.items()
        for number, done in enumerate(call.rounds, start=1)
    ]
    return {
        "health": health,
        "rounds": rounds,
        "still running": {name: running(pid) for name, pid in started.items()},
    }


tour = live_or_recorded(
    NOTEBOOK,
    "cluster",
    needed={"haproxy": INSTALLED["haproxy"]},
    parameters={"REPLICAS": REPLICAS, "SEED": SEED},
    run=tour_a_cluster,
)
health = pd.DataFrame(tour.data["health"]).T
claim(
    (health["status"] == "ok").all() and (health["tool_version"] == 1).all(),
    "every replica answers its health check, serving tool version 1",
    health=health[["status", "tool_version"]].to_dict("index"),
)
health

# %% [markdown]
# Each replica's `/healthz` (above): its id, its tool version, what it holds. And the
# rounds of the three calls: any round may land on any replica.

# %%
rounds = pd.DataFrame(tour.data["rounds"]).set_index(["tool", "round"])
claim(
    rounds["served by"].nunique() == len(health) and rounds["served by"].isin(health.index).all(),
    "the rounds of the calls landed on every replica, and HAProxy named each",
    served_by=list(rounds["served by"]),
)
rounds

# %% [markdown]
# The block is over; every process the cluster started has exited:

# %%
still = tour.data["still running"]
claim(not any(still.values()), "every process the cluster started has exited", still=still)
result_tables.column(still, "still running")

# %% [markdown]
# ## 3. A swarm per architecture, with a rolling upgrade in the middle
#
# `loadtest.scenarios.run.run_scenario` does the whole run: a fresh cluster, a
# headless Locust swarm of `USERS` users for `SWARM_S` seconds, and at `UPGRADE_AT_S`
# the rolling upgrade (for each replica: drain in HAProxy, wait until it holds nothing or
# `DRAIN_TIMEOUT_S` passes, stop, start version 2 with rotated keys, back in rotation).
# It returns a summary: every call, a per-second timeline, and the faults with their
# times. The notebook keeps the parts it shows (`kept`).


# %%
def swarm_config(arch: str, parameters: dict) -> LoadTestConfig:
    """The swarm of `arch` with the notebook's parameters (live, or the recording's)."""
    return LoadTestConfig(
        arch=arch,
        scenario="rolling-upgrade",
        replicas=parameters["REPLICAS"],
        users=parameters["USERS"],
        spawn_rate=parameters["USERS"],
        duration_s=parameters["SWARM_S"],
        fault_at_s=parameters["UPGRADE_AT_S"],
        drain_timeout_s=parameters["DRAIN_TIMEOUT_S"],
        think_time_median_s=parameters["THINK_MEDIAN_S"],
    )


CALL_FIELDS = ("arch", "outcome", "latency_ms", "started", "ended", "retries")


def kept(summary: dict) -> dict:
    """A run's summary without what the notebook does not show (every call's every field)."""
    calls = [{field: call.get(field) for field in CALL_FIELDS} for call in summary["calls"]]
    return {**{k: v for k, v in summary.items() if k not in ("calls", "locust")}, "calls": calls}


def swarm_each_architecture() -> dict:
    summaries = {}
    for arch in ARCHITECTURES:
        began = time.perf_counter()
        summaries[arch] = kept(
            run_scenario(swarm_config(arch, PARAMETERS), progress=lambda _: None)
        )
        print(f"{result_tables.label(arch)}: {time.perf_counter() - began:.1f} s wall time")
    return summaries


PARAMETERS = {
    "REPLICAS": REPLICAS,
    "USERS": USERS,
    "SWARM_S": SWARM_S,
    "UPGRADE_AT_S": UPGRADE_AT_S,
    "DRAIN_TIMEOUT_S": DRAIN_TIMEOUT_S,
    "THINK_MEDIAN_S": THINK_MEDIAN_S,
}
swarm = live_or_recorded(
    NOTEBOOK,
    "swarms",
    needed=INSTALLED,
    parameters=PARAMETERS,
    run=swarm_each_architecture,
)
# From here on, the parameters the swarms ran with: this notebook's, or the recording's.
ran = swarm.parameters
config = {arch: swarm_config(arch, ran) for arch in ARCHITECTURES}
summaries = swarm.data

# %% [markdown]
# The summaries, side by side. For the legacy architectures a call *started again* is a
# call whose stream was cut (here: by the drain timeout) and which the client ran again
# from its first question; for MRTR a *round re-sent* is one request that hit a stopping
# replica and was sent again, the user none the wiser.


# %%
def measured_row(summary: dict) -> dict:
    faults = {f["event"]: f["t"] for f in summary["faults"]}
    drains = summary["drains"]
    return {
        "calls started": summary["started"],
        "completed": summary["completed"],
        "failed": summary["failed"],
        "lost": summary["lost"],
        "calls started again": summary["restarted"],
        "rounds re-sent": summary["rounds_resent"],
        "answers asked again": summary["re_prompts"],
        "p50 latency (ms)": summary["latency_ms"]["p50"],
        "p99 latency (ms)": summary["latency_ms"]["p99"],
        "completed per second": summary["throughput_per_s"],
        "upgrade duration (s)": faults.get("upgrade done", np.nan)
        - faults.get("upgrade start", np.nan),
        "slowest drain (s)": max((d["drained_s"] for d in drains), default=np.nan),
        "requests cut at the drain timeout": sum(d["still_held"] for d in drains),
    }


measured = pd.DataFrame({result_tables.label(a): measured_row(s) for a, s in summaries.items()}).T
mrtr_row = measured.loc[result_tables.label("mrtr")]
claim(
    mrtr_row["answers asked again"] == 0 and mrtr_row["calls started again"] == 0,
    "MRTR asks nobody again and starts no call again: at most a round is re-sent",
    mrtr=mrtr_row[["answers asked again", "calls started again", "rounds re-sent"]].to_dict(),
)
measured

# %% [markdown]
# ## 4. The timelines
#
# Each run's per-second timeline: calls completed in that second, and calls open. The
# vertical lines are the upgrade: a replica drained (dotted), stopped (dashed), back up
# (solid).

# %%
swarm_figures.timelines(summaries, f"rolling upgrade from {ran['UPGRADE_AT_S']:g} s ({swarm.note})")
plt.show()

# %% [markdown]
# What to notice: under MRTR each drain ends at once (nothing is held between rounds), so
# the dotted and dashed lines of a replica almost touch. Under the legacy architectures a
# drain waits for the users its replica holds, up to the timeout, and calls still held
# then are cut and started again.

# %%
drained = measured["slowest drain (s)"]
legacy = [result_tables.label(a) for a in ("sticky", "sse-store")]
claim(
    drained[result_tables.label("mrtr")] < ran["DRAIN_TIMEOUT_S"] / 4,
    "under MRTR each drain ends at once (within a quarter of the drain timeout)",
    slowest_drain_s=drained.to_dict(),
)
claim(
    drained[legacy].max() > drained[result_tables.label("mrtr")],
    "a legacy drain waits longer, for the users its replica holds",
    slowest_drain_s=drained.to_dict(),
)
claim(
    (drained[legacy] <= ran["DRAIN_TIMEOUT_S"] + 0.5).all(),
    "no drain waits much beyond the timeout: what is still held then is cut",
    slowest_drain_s=drained.to_dict(),
    timeout_s=ran["DRAIN_TIMEOUT_S"],
)

# %% [markdown]
# And the latency each user felt, think time taken out:

# %%
swarm_figures.latency_cdf(summaries, f"Measured latency during the rolling upgrade ({swarm.note})")
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
twin = {arch: twin_inputs(config[arch], summaries.get(arch)) for arch in ARCHITECTURES}
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
claim(
    twin["mrtr"].think_stops_per_call < twin["sticky"].think_stops_per_call,
    "an MRTR user stops to think fewer times per call: a round asks all its questions at once",
    stops={arch: t.think_stops_per_call for arch, t in twin.items()},
)
inputs.rename(index=result_tables.label).round(3)

# %% [markdown]
# `loadtest.scenarios.twin` turns each architecture's configuration and run into
# labsim's parameters: the same replicas, think time, drain timeout and upgrade time, the
# swarm's tools in the swarm's mix (labsim's model of each demo tool asks what the server
# asks), and each user's calls in one session, as the live users keep their session
# cookie.

# %%
sim_params = {arch: twin_params(config[arch], twin[arch]) for arch in ARCHITECTURES}
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
    f"Live swarm ({ran['USERS']} users, {ran['REPLICAS']} replicas, {ran['SWARM_S']:g} s, "
    f"{swarm.note}) against the simulation",
)
plt.show()

# %% [markdown]
# How to read it: the simulation has never seen HAProxy, uvicorn or Locust, only the
# parameters above and two calibrated numbers per architecture. Where it agrees with the
# measurement, the model has the mechanism right: nothing is held under MRTR, so nobody
# is asked again and its rollout is the shortest, just the restarts; held streams make
# legacy drains wait, and cut what outlasts the timeout. Where it disagrees, look for
# what the model leaves out:
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

# %%
simulated = predicted.rename(index={result_tables.label(a): a for a in ARCHITECTURES})
claim(
    simulated.loc["mrtr", "answers asked again"] == 0,
    "in the simulation too, MRTR asks nobody again",
    simulated=simulated["answers asked again"].to_dict(),
)
claim(
    simulated.loc["mrtr", "upgrade duration (s)"]
    < simulated.loc[["sticky", "sse-store"], "upgrade duration (s)"].min(),
    "in the simulation MRTR's rollout is the shortest",
    simulated=simulated["upgrade duration (s)"].to_dict(),
)

# %% [markdown]
# ## 6. Your own server's replicas: a key each, and the doctor
#
# Everything so far ran the lab's own server, whose replicas are started with the same
# `requestState` keys. A server you write with the official Python SDK seals its
# `requestState` too (encrypted, bound to the call, to its caller and to the server's
# name, alive for a TTL), but with what key? Given none, `MCPServer` makes one per
# process. One replica is then fine; two behind a round-robin balancer are not, since a
# call's next round may land on the replica that did not seal its state.
#
# Two replicas of such a server (`tests/loadtest/sdk_server.py`, a `transfer` of a high
# amount asks for a code, then, carrying the code in its `requestState`, for a date) are
# started here twice: A and B each with a key of its own, and A and B again from one
# shared secret and one server name, the fix (started side by side at once, so that the
# notebook waits for the SDK's start-up only once). The calls go round-robin, as a
# balancer sends them: each round to the other replica (`lessons.sdk_replicas`). Then the
# doctor examines the first pair from outside, as it would your deployment.
#
# Without the load test's packages (the light install has the notebooks' alone), this part
# shows a recorded run, as the swarms above do.


# %%
def sdk_replicas_apart_and_shared() -> dict:
    """Calls round-robin through two SDK replicas with a key each, the doctor's report on
    them, and the same calls through two replicas sharing one secret and one name."""
    from loadtest.doctor import Examination, diagnose  # the load test's packages
    from loadtest.target import Auth

    own_key = {"SDK_STATE_KEY": "own"}
    shared = {"SDK_STATE_KEY": secrets.token_hex(32), "SDK_SERVER_NAME": "rooms-and-money"}
    with sdk_replicas([own_key, own_key, shared, shared]) as urls:
        apart, together = urls[:2], urls[2:]
        calls = {
            "a key each": [round_robin_call(apart, k % 2) for k in range(SDK_CALLS)],
            "one shared key": [round_robin_call(together, k % 2) for k in range(SDK_CALLS)],
        }
        examination = Examination(tool="transfer", think_time_s=0.5, limit_probe_s=0.3)
        report = diagnose(apart, Auth(), examination).to_json()
    for check in report["checks"]:  # the replicas by name, as in the calls' tables
        for url, name in zip(apart, "AB", strict=True):
            check["evidence"] = check["evidence"].replace(url, f"replica {name}")
    return {"calls": calls, "doctor": report}


sdk = live_or_recorded(
    NOTEBOOK,
    "sdk_replicas",
    needed={
        "the load test's packages (hypothesis-jsonschema)": importlib.util.find_spec(
            "hypothesis_jsonschema"
        )
        is not None
    },
    parameters={"SDK_CALLS": SDK_CALLS},
    run=sdk_replicas_apart_and_shared,
)


def call_rounds(calls: list[dict]) -> pd.DataFrame:
    """Each call's rounds: where each went, whose state it carried, what came back."""
    rows = [{"call": k + 1, **row} for k, call in enumerate(calls) for row in call["rounds"]]
    table = pd.DataFrame(rows).set_index(["call", "round"])
    return table[["replica", "state sealed by", "outcome"]]


apart = call_rounds(sdk.data["calls"]["a key each"])
carried = apart[apart["state sealed by"] != "-"]
claim(
    not any(call["completed"] for call in sdk.data["calls"]["a key each"])
    and (carried["state sealed by"] != carried["replica"]).all()
    and carried["outcome"].str.contains("-32602").all(),
    "with a key each, every call fails: its state, sealed by one replica, is refused by "
    "the other (-32602)",
    rounds=apart.to_dict("index"),
)
apart

# %% [markdown]
# Each call's first round asks for the code and carries no state; the second, on the
# other replica, asks for the date and seals the code into a `requestState`; the third,
# back on the first replica, brings the answer and that state, and the replica cannot
# open it. The SDK says only `Invalid or expired requestState`: the user's two answers are
# lost, and nothing in the reply says why. The doctor tries each ordered pair of replicas
# (a call taken on one to a round that carries a state, its retry sent to the other), and
# names the cause where it can tell it from outside: here the key id the sealed state shows
# differs from the one the other replica's states show.

# %%
checks = pd.DataFrame(sdk.data["doctor"]["checks"]).set_index("name")
across = checks.loc["state-across-replicas"]
claim(
    not sdk.data["doctor"]["ready"]
    and checks.index[0] == "state-across-replicas"
    and not across["passed"]
    and "cause: another key" in across["evidence"]
    and "same requestState keys" in across["fix"],
    "the doctor fails the deployment, its failed check first: state-across-replicas, "
    "naming another key as the cause and sharing the keys as the fix",
    across=across.to_dict(),
)
print("FAIL  state-across-replicas:", across["evidence"])
print("      fix:", across["fix"])
checks[["passed", "evidence"]]

# %% [markdown]
# The fix is the one the doctor names: every replica given the same keys (in the SDK,
# `RequestStateSecurity(keys=[...])` from one secret, never the per-process default) and
# the same server name (the state's audience; another name fails the same check, with
# `cause: another server name`). With them, the same round-robin calls:

# %%
together = call_rounds(sdk.data["calls"]["one shared key"])
claim(
    all(call["completed"] for call in sdk.data["calls"]["one shared key"])
    and together.groupby("call")["replica"].nunique().eq(2).all(),
    "sharing one key and one name, every call completes, its rounds on both replicas",
    rounds=together.to_dict("index"),
)
together

# %% [markdown]
# ## Exercises
#
# Each exercise has its answer under it, behind a **Show answer** button: what the
# solution finds and why, beside what its code prints. Try first. The solution's code is
# folded in the cell above the button; click the cell's collapsed-input bar (⋯) to read it.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** Check Little's law on the measurement itself: the number of users
# should equal the rate at which calls complete times the mean time one call takes
# (`ended - started` of each call, thinking included). How close is it for each
# architecture, and why is it not exact over a few seconds?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    In a closed loop each user is always in a call, so Little's law says rate of calls
    times mean time per call should be the number of users. The measurement comes out
    **below it, but more than half of it**, for each architecture.

    The gap is the **edges** of a short run. The run's duration (`duration_s`) lasts until
    the last call has ended: after `SWARM_S` the swarm starts no new call but lets those
    in progress finish, and in that tail fewer and fewer users are in a call. At the
    start, too, the swarm takes a moment to start every user. Over a few seconds of swarm
    those edges are a large share of the run; the longer the run, the closer the law comes.
    """
):
    users = ran["USERS"]
    little = {}
    for arch, summary in summaries.items():
        calls = pd.DataFrame(summary["calls"])
        mean_call_s = (calls["ended"] - calls["started"]).mean()
        rate = len(calls) / summary["duration_s"]
        little[arch] = rate * mean_call_s
        print(
            f"{result_tables.label(arch)}: {rate:.2f} calls/s x {mean_call_s:.2f} s "
            f"= {little[arch]:.1f} users (of {users})"
        )
    claim(
        all(users / 2 <= n <= users * 1.05 for n in little.values()),
        "rate x time comes out below the number of users, but more than half of it",
        little=little,
        users=users,
    )

# %% [markdown] tags=["exercise"]
# **Exercise 2.** Which drain timeout would have let (almost) every held user finish
# answering before their replica stopped? Work it out from the think-time distribution
# (a legacy user holds a stream for one think time per question), then check it with the
# simulation for the sticky architecture, which takes a second instead of a swarm.

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    99% of think times are under the printed value, and a two-question legacy call holds
    its stream for two of them: a drain of **twice the 99th percentile** lets almost every
    held user finish.

    The simulation agrees: with that drain, **fewer answers are asked again** than with
    the short timeout, and the **rollout takes longer**, since each replica now waits for
    its slowest thinker. Longer drains protect the users and slow the rollout; MRTR needs
    neither.
    """
):
    from scipy import stats

    think = stats.lognorm(s=base.think_time_sigma, scale=ran["THINK_MEDIAN_S"])
    print(f"99% of think times are under {think.ppf(0.99):.2f} s")
    by_drain = {}
    for drain_s in (ran["DRAIN_TIMEOUT_S"], 2 * think.ppf(0.99)):
        params = sim_params["sticky"].with_overrides(drain_timeout_s=drain_s)
        runs = study.replicate(
            params, "sticky", replications=SIMULATED_RUNS, seed=SEED, processes=1
        )
        by_drain[drain_s] = runs[["re_prompts", "upgrade_duration_s"]].mean()
        print(
            f"drain timeout {drain_s:.1f} s: {runs['re_prompts'].mean():.2f} answers asked again, "
            f"upgrade {runs['upgrade_duration_s'].mean():.1f} s"
        )
    short, patient = by_drain.values()
    claim(
        patient["re_prompts"] < short["re_prompts"]
        and patient["upgrade_duration_s"] > short["upgrade_duration_s"],
        "a longer drain asks fewer answers again, and makes the rollout longer",
        short=short.to_dict(),
        patient=patient.to_dict(),
    )

# %% [markdown] tags=["exercise"]
# **Exercise 3.** `per_replica` in each summary counts the HTTP requests each replica
# served (from the balancer's `X-Served-By` header). How evenly did the load balancer
# spread them for each architecture? Compute the busiest replica's share divided by the
# fair share `1 / REPLICAS`. Why can a sticky balancer not spread as evenly?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    MRTR's requests are spread by round-robin **request by request**, so every replica
    gets close to its fair share (a replica serves a little less while it drains and
    restarts).

    The sticky balancer keeps every request of a call, and of a user's session, on one
    replica: a replica's load depends on which users it happened to get and how long they
    think, so its busiest replica is usually further from the fair share. With a handful
    of users the luck of the draw dominates; with thousands it evens out, but never
    request by request.
    """
):
    busiest = {}
    for arch, summary in summaries.items():
        share = pd.Series({r: v["requests"] for r, v in summary["per_replica"].items()})
        share = share / share.sum()
        busiest[arch] = share.max() * ran["REPLICAS"]
        print(
            f"{result_tables.label(arch)}: busiest replica {share.max():.0%} of requests "
            f"({busiest[arch]:.2f} x the fair share): "
            + ", ".join(f"{name} {part:.0%}" for name, part in share.items())
        )
    claim(
        busiest["mrtr"] < 1.35,
        "round-robin gives each replica close to its fair share of MRTR's requests",
        busiest_over_fair=busiest,
    )

# %% [markdown] tags=["exercise"]
# **Exercise 4.** The twin gives each user's calls one session, as the live users keep
# their cookie. Simulate the sticky architecture again with every call its own session
# (`calls_per_session=1`): how many calls are started again now, against the measured
# count? What does that say about what a sticky balancer pins?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    Pinned **call by call**, a drained replica soon holds nothing: its calls end and no
    new one arrives, so few calls are cut. Pinned **user by user**, a busy user's next
    calls keep arriving at the draining replica, so it still holds calls when the drain
    timeout strikes, and those are cut and started again.

    So what a sticky balancer pins matters as much as that it pins: a session cookie that
    outlives a call keeps a replica from draining.
    """
):
    restarts = {}
    for per_session in (twin["sticky"].calls_per_session, 1.0):
        params = sim_params["sticky"].with_overrides(calls_per_session=per_session)
        runs = study.replicate(
            params, "sticky", replications=SIMULATED_RUNS, seed=SEED, processes=1
        )
        restarts[per_session] = runs["restarts"].mean()
        print(
            f"{per_session:.1f} calls per session: {runs['restarts'].mean():.1f} calls started "
            f"again, {runs['re_prompts'].mean():.1f} answers asked again"
        )
    print(f"measured: {measured.loc[result_tables.label('sticky'), 'calls started again']:.0f}")
    by_session, by_call = restarts.values()
    claim(
        by_call <= by_session,
        "pinned call by call, no more calls are cut than pinned user by user",
        restarts=restarts,
    )
