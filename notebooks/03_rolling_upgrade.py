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
# # 3. A rolling upgrade while users are answering
#
# The seed's first use case for `requestState`. A tool's new version changes its
# questions: version 1 of `link_accounts` asks for a GitHub and a Google login, version 2
# for a GitHub and a Microsoft login. The operators roll the new version out replica by
# replica, while users are in the middle of answering.
#
# **What you will learn**
#
# 1. What a rolling upgrade does, replica by replica, on a timeline: drain, stop, start
#    the new version, back in rotation.
# 2. Version skew, live: a call that starts on version 1 and continues on version 2 keeps
#    the answer both versions need and asks only for what changed.
# 3. Why a drain must outlast the users' think time under the legacy protocol, and what
#    it costs when it does not: calls lost, users asked again, upgrades that take longer.
# 4. How the keys that seal `requestState` are rotated in the same rollout without
#    breaking a single call.

# %% tags=["parameters"]
import os

# The tests set QUICK=1 to run a shorter version of the notebook.
QUICK = os.environ.get("QUICK") == "1"
REPLICAS = 4
DRAIN_TIMEOUT_S = 30.0  # Kubernetes' default termination grace period
RESTART_S = 15.0  # a container starting and passing its readiness probe
UPGRADE_AT_S = 400.0  # when the rollout starts, in simulated seconds
DRAIN_TIMEOUTS_S = [5, 30, 120, 300] if QUICK else [5, 15, 30, 60, 120, 300]
REPLICATIONS = 2 if QUICK else 5
SEED = 3

# %%
import base64

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import result_tables
import traffic
from answers import hidden_answer
from scipy import stats

import labsim
from labsim import ARCHITECTURES, study
from labsim.study import plots
from labsim.study.plots import Panel
from server.app import create_app
from server.client import Handlers, McpError, MrtrClient, accept
from server.config import ServerConfig, StateKey

# %% [markdown]
# ## 1. The rollout, replica by replica
#
# The simulated rollout does what an operator (or a Kubernetes Deployment with
# `maxSurge: 0`) does, for each replica in turn:
#
# 1. **drain**: the load balancer stops sending it new calls; requests pinned to it by a
#    cookie still reach it;
# 2. wait until nothing is attached to it, or until the **drain timeout**; whatever is
#    still attached then is cut;
# 3. **stop** it and start the new version, which takes `RESTART_S`;
# 4. back **up**, serving version 2.

# %%
upgrade = study.scenarios.build(
    "rolling-upgrade",
    replicas=REPLICAS,
    drain_timeout_s=DRAIN_TIMEOUT_S,
    restart_s=RESTART_S,
    at_s=UPGRADE_AT_S,
)
runs = {name: labsim.simulate(upgrade, name, seed=SEED) for name in ARCHITECTURES}
result_tables.events(runs["mrtr"].events.head(8))

# %% [markdown]
# The same rollout as a picture, one row per replica, for each architecture:

# %%
end_s = max(r.summary["upgrade_duration_s"] for r in runs.values()) + UPGRADE_AT_S + 30
fig = plots.rollout(list(runs.values()), start_s=UPGRADE_AT_S - 20, end_s=end_s)
plt.show()

# %% [markdown]
# Under MRTR a draining replica is empty almost at once: nothing waits on it between
# rounds, only requests being worked on, which take milliseconds. The drains are thin
# slivers and the rollout is just the restarts back to back. Under both legacy
# architectures every replica holds the streams of users who are still thinking, so each
# drain runs into its timeout.
#
# ## 2. Version skew, live
#
# During the rollout some replicas run version 1 and some version 2, and the rounds of one
# call may land on both. Two in-process replicas, one of each version, sharing their
# `requestState` keys:

# %%
STATE_KEY = StateKey("k1", os.urandom(32))
JWT_SECRET = base64.b64encode(os.urandom(32)).decode()


def replica_app(replica_id: str, **settings) -> object:
    """An in-process replica with this notebook's keys and token secret."""
    options = {"state_keys": (STATE_KEY,), "jwt_secret": JWT_SECRET, **settings}
    return create_app(ServerConfig(replica_id=replica_id, **options))


LOGINS = {"GitHub": "octocat", "Google": "octo.google", "Microsoft": "octo.microsoft"}


def answer_login(params: dict) -> dict:
    """The user: answers each login form with their name at that provider."""
    provider = next(p for p in LOGINS if p in params["message"])
    return accept(name=LOGINS[provider])


user = Handlers(elicit=answer_login)
old = MrtrClient.for_app(replica_app("old", tool_version=1), handlers=user)
new = MrtrClient.for_app(replica_app("new", tool_version=2), handlers=user)


def run_across(route: list[tuple[str, MrtrClient]]) -> tuple[object, list[str]]:
    """Run link_accounts with round k sent to route[k]; the exchange and who served."""
    call = old.exchange("tools/call", {"name": "link_accounts", "arguments": {}})
    served_by = []
    for name, client in route:
        served_by.append(name)
        if client.send(call):
            break
        call.answer({key: answer_login(r["params"]) for key, r in call.input_requests.items()})
    return call, served_by


skewed, served_by = run_across([("old (v1)", old), ("new (v2)", new), ("new (v2)", new)])
print(skewed.text)
traffic.rounds_table(skewed, served_by)[
    ["served by", "answers sent", "questions asked", "requestState returned (bytes)"]
]

# %% [markdown]
# Read the rows: version 1 asks for `github_login` and `google_login`; the user answers
# both; the retry lands on version 2, which needs `github_login` (answered) and
# `microsoft_login` (not asked yet). So it asks *only* for `microsoft_login`, and seals
# both earlier answers into `requestState`. Nothing the user said is lost, and nobody is
# asked twice. Round 2's response:

# %%
traffic.show(skewed.rounds[1].response)

# %% [markdown]
# The legacy protocol has no such move: the call is a coroutine on one replica, and that
# replica is about to be stopped. If the user is still thinking when the drain times out,
# the stream is cut and the client must start the call again from the first question.
#
# ## 3. Drain timeout against think time
#
# How long must a drain wait? Long enough for the users it holds to finish answering.
# Think times are heavy-tailed (lognormal, with the median and spread of
# `upgrade.workload`), so the share of held users still thinking after *t* seconds falls
# slowly:

# %%
workload = upgrade.workload
think = stats.lognorm(s=workload.think_sigma, scale=workload.think_median_s)
timeouts = np.array(DRAIN_TIMEOUTS_S)
still_thinking = pd.DataFrame(
    {
        "drain timeout (s)": timeouts,
        "users still thinking (%)": 100 * think.sf(timeouts.astype(float)),
    }
).set_index("drain timeout (s)")
still_thinking.round(1)

# %% [markdown]
# Now the rollout with each of these drain timeouts, for the three architectures.

# %%
drain_sweep = study.sweep(
    "rolling-upgrade",
    "drain_timeout_s",
    DRAIN_TIMEOUTS_S,
    replications=1,
    seed=SEED,
    processes=2,
    replicas=REPLICAS,
    restart_s=RESTART_S,
    at_s=UPGRADE_AT_S,
)
panels = [
    Panel("state_losses", "calls whose progress was lost"),
    Panel("re_prompts", "answers the users had to give again"),
    Panel("upgrade_duration_s", "rollout duration (s)"),
]
fig = plots.sweep_panels(
    drain_sweep,
    "drain_timeout_s",
    panels,
    xlabel="drain timeout (s, log scale)",
    xscale="log",
    title=f"A rollout of {REPLICAS} replicas, by drain timeout",
)
plt.show()

# %% [markdown]
# The legacy architectures trade one against the other: a short drain cuts calls (and
# users answer again), a long drain makes the rollout last for many minutes, because
# every replica waits for its slowest thinker. MRTR has neither problem at any timeout:
# its rollout is as fast as the restarts, and no progress is lost.
#
# At the default drain timeout, with several replications:

# %%
at_default = study.compare(
    "rolling-upgrade",
    replications=REPLICATIONS,
    seed=SEED,
    processes=2,
    replicas=REPLICAS,
    drain_timeout_s=DRAIN_TIMEOUT_S,
    restart_s=RESTART_S,
    at_s=UPGRADE_AT_S,
)
result_tables.readable(
    at_default,
    ["state_losses", "lost", "re_prompts", "new_questions", "upgrade_duration_s"],
    with_ci=True,
)

# %% [markdown]
# `new questions after an upgrade` counts MRTR calls that met version 2 halfway and were
# asked for `microsoft_login`: a question that did not exist when they started, asked once.
# `calls whose progress was lost` counts calls the legacy clients had to start again (most
# of them then complete, so few are `lost` for good, but whatever their users had already
# answered is asked again: `answers asked again`).
#
# ## 4. Rotating the `requestState` keys in the same rollout
#
# Replicas share the AES keys that seal `requestState`; the first key in a replica's list
# seals, every key in it opens. A rollout can also replace a key, in phases, one phase per
# rollout:

# %%
k1, k2 = StateKey("k1", os.urandom(32)), StateKey("k2", os.urandom(32))
PHASES = {
    "0: k1 only": (k1,),
    "1: trust k2 (seal k1)": (k1, k2),
    "2: seal k2 (trust k1)": (k2, k1),
    "3: k2 only": (k2,),
}
ARGUMENTS = {"workItemId": 4522, "fields": {"System.State": "Resolved"}}
phase_clients = {
    phase: MrtrClient.for_app(replica_app(phase, state_keys=keys), handlers=user)
    for phase, keys in PHASES.items()
}


def state_from(client: MrtrClient) -> object:
    """An update_work_item call after two rounds on `client`: a sealed state, round 3 ready."""
    call = client.exchange("tools/call", {"name": "update_work_item", "arguments": ARGUMENTS})
    client.send(call)
    call.answer({"resolution": accept(resolution="Duplicate")})
    client.send(call)
    call.answer({"duplicate_of": accept(duplicateOfId=4301)})
    return call


opens = pd.DataFrame(index=list(PHASES), columns=list(PHASES), dtype=float)
for sealed_by, sealer in phase_clients.items():
    for opened_by, opener in phase_clients.items():
        call = state_from(sealer)
        try:
            opener.send(call)
            opens.loc[sealed_by, opened_by] = 1.0
        except McpError:
            opens.loc[sealed_by, opened_by] = 0.0
opens.index.name = "state sealed by a replica in phase"
opens.columns.name = "retry reaches a replica in phase"
opens.astype(int)

# %%
short = [
    f"phase {phase[0]}\n(" + "+".join(k.key_id for k in keys) + ")"
    for phase, keys in PHASES.items()
]
fig, ax = plt.subplots(figsize=(7, 5))
image = ax.imshow(opens.to_numpy(), cmap="RdYlGn", vmin=0, vmax=1)
ax.set_xticks(range(len(PHASES)), short)
ax.set_yticks(range(len(PHASES)), short)
ax.set_xlabel("the retry reaches a replica in (its keys, sealing key first)")
ax.set_ylabel("the state was sealed in")
ax.set_title("Which replicas open which states (tried live)")
for (row, column), value in np.ndenumerate(opens.to_numpy()):
    ax.text(column, row, "opens" if value else "rejected", ha="center", va="center", color="white")
ax.legend(
    [plt.Rectangle((0, 0), 1, 1, color=image.cmap(v)) for v in (1.0, 0.0)],
    ["the call carries on", "rejected: unknown_key"],
    loc="upper left",
    bbox_to_anchor=(1.02, 1.0),
)
fig.tight_layout()
plt.show()

# %% [markdown]
# During a rollout, replicas of two *adjacent* phases serve side by side, and every pair
# of adjacent phases opens each other's states (the squares next to the diagonal). Hence
# the rule: one phase per rollout, and phase 3 only after every state sealed with k1 has
# expired (`state_ttl_s`). The load test's cluster starts in phase 1, so the rolling
# upgrade it runs (to phase 2) rotates keys without a single rejected state.

# %%
for client in (old, new, *phase_clients.values()):
    client.close()

# %% [markdown]
# ## Exercises
#
# Solutions are in the collapsed cells under each exercise: click the three dots to open
# one, after you have tried.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** Which drain timeout lets 99% of thinking users finish before their
# replica stops? Compute it from the think-time distribution (`think.ppf`), remember that
# unanswered questions time out after `upgrade.client.answer_timeout_s`, then simulate the
# sticky rollout with that drain timeout. How long does the rollout take, and how many
# calls still lose their progress?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    p99_s = think.ppf(0.99)
    drain_s = min(p99_s, upgrade.client.answer_timeout_s)
    print(
        f"p99 think time {p99_s:.0f} s; "
        f"answers time out after {upgrade.client.answer_timeout_s:.0f} s"
    )
    patient = labsim.simulate(upgrade.with_overrides(drain_timeout_s=drain_s), "sticky", seed=SEED)
    print(f"drain timeout {drain_s:.0f} s: rollout {patient.summary['upgrade_duration_s']:.0f} s,")
    print(f"{patient.summary['state_losses']} calls lost their progress")
    # Almost nothing is cut, but the rollout takes the drain timeout per replica: with hundreds
    # of replicas, hours. (Users who never answer hold a stream until the answer timeout.)

# %% [markdown] tags=["exercise"]
# **Exercise 2.** A rollback: the first round of a call lands on version 2 and the retry
# on version 1. Run it with `run_across` and read the rounds. Which question is asked in
# round 2, which answers does the final result use, and is any answer asked twice?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    old = MrtrClient.for_app(replica_app("old", tool_version=1), handlers=user)
    new = MrtrClient.for_app(replica_app("new", tool_version=2), handlers=user)
    back, served_by = run_across([("new (v2)", new), ("old (v1)", old), ("old (v1)", old)])
    print(back.text)
    print(traffic.rounds_table(back, served_by)[["served by", "answers sent", "questions asked"]])
    # Version 1 asks only google_login; the GitHub answer comes from requestState. Every answer
    # the user gave is carried (also microsoft_login, which version 1 does not use), so no
    # question is asked twice in either direction.
    old.close()
    new.close()

# %% [markdown] tags=["exercise"]
# **Exercise 3.** An operator skips phase 1 and rolls replicas straight from phase 0 to
# phase 2. Using the matrix, say which retries fail during that rollout, and in which
# direction. Then count them in a small experiment: 20 calls whose round 1 and round 2 land
# on replicas picked at random from a half-upgraded fleet (one phase-0 replica, one
# phase-2 replica).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer():
    rng = np.random.default_rng(SEED)
    fleet = [
        MrtrClient.for_app(replica_app(f"phase {p}", state_keys=PHASES[p]), handlers=user)
        for p in ("0: k1 only", "2: seal k2 (trust k1)")
    ]
    failures = 0
    for _ in range(20):
        first, second = rng.integers(0, 2, size=2)
        call = state_from(fleet[first])
        try:
            fleet[second].send(call)
        except McpError:
            failures += 1
    print(f"{failures} of 20 calls failed")
    # A state sealed with k2 by a phase-2 replica cannot be opened by a phase-0 replica,
    # which does not know k2: about a quarter of the calls (first on phase 2, retry on phase 0).
    for client in fleet:
        client.close()
