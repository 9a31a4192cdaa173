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
# 4. How the keys that seal `requestState` are rotated in the same rollout, what a
#    replica does with a state sealed by a key it no longer holds, and what a key that
#    was copied wrong does instead.
#
# A line starting with ✓ is a sentence of this notebook checked against the results just
# computed: if the server or the model changes so that it no longer holds, the notebook
# stops there and says what changed.

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
import logging

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

import labsim
from labsim import study
from labsim.study import plots
from labsim.study.experiments import one_run_each
from labsim.study.plots import Panel
from lessons import live_figures, result_tables, traffic
from lessons.answers import hidden_answer
from lessons.claims import claim
from lessons.drains import drain_times_s
from lessons.lab_deployment import LabDeployment, new_state_key
from loadtest.harness.cluster import KeyRing
from server.client import Handlers, McpError, MrtrClient, accept

# A replica logs each state it refuses; this notebook shows the refusals in its tables.
logging.getLogger("server").setLevel(logging.ERROR)
# Fresh secrets for this notebook's replicas (`LabDeployment` starts the server's own app
# with them), so nothing here relies on the lab's public development values.
lab = LabDeployment()

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
ROLLOUT = {
    "replicas": REPLICAS,
    "drain_timeout_s": DRAIN_TIMEOUT_S,
    "restart_s": RESTART_S,
    "at_s": UPGRADE_AT_S,
}
upgrade = study.scenarios.build("rolling-upgrade", **ROLLOUT)
# One run per architecture from the same seed: the same calls for each.
runs = {run.architecture: run for run in one_run_each("rolling-upgrade", SEED, **ROLLOUT)}
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


# %%
drains = {name: drain_times_s(run, upgrade.cluster.replicas) for name, run in runs.items()}
claim(
    max(drains["mrtr"]) < 1.0,
    "under MRTR a draining replica is empty almost at once (every drain under a second)",
    drains_s=drains["mrtr"],
)
claim(
    abs(runs["mrtr"].summary["upgrade_duration_s"] - REPLICAS * RESTART_S) < REPLICAS,
    "MRTR's rollout is just the restarts back to back",
    rollout_s=runs["mrtr"].summary["upgrade_duration_s"],
    restarts_s=REPLICAS * RESTART_S,
)
claim(
    all(min(drains[name]) >= DRAIN_TIMEOUT_S for name in ("sse-store", "sticky")),
    "under both legacy architectures each drain runs into its timeout",
    drains_s={name: drains[name] for name in ("sse-store", "sticky")},
)

# %% [markdown]
# ## 2. Version skew, live
#
# During the rollout some replicas run version 1 and some version 2, and the rounds of one
# call may land on both. Two in-process replicas, one of each version, sharing their
# `requestState` keys:

# %%
LOGINS = {"GitHub": "octocat", "Google": "octo.google", "Microsoft": "octo.microsoft"}


def answer_login(params: dict) -> dict:
    """The user: answers each login form with their name at that provider."""
    provider = next(p for p in LOGINS if p in params["message"])
    return accept(name=LOGINS[provider])


user = Handlers(elicit=answer_login)
old = MrtrClient.for_app(lab.app("old", tool_version=1), handlers=user)
new = MrtrClient.for_app(lab.app("new", tool_version=2), handlers=user)


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
skew = traffic.rounds_table(skewed, served_by)
skew[["served by", "answers sent", "questions asked", "requestState returned (bytes)"]]

# %% [markdown]
# Read the rows: version 1 asks for `github_login` and `google_login`; the user answers
# both; the retry lands on version 2, which needs `github_login` (answered) and
# `microsoft_login` (not asked yet). So it asks *only* for `microsoft_login`, and seals
# both earlier answers into `requestState`. Nothing the user said is lost, and nobody is
# asked twice. Round 2's response:

# %%
asked = [q for questions in skew["questions asked"] for q in questions.split(", ") if q != "-"]
claim(
    skew.loc[2, "questions asked"] == "microsoft_login",
    "version 2 asks only for microsoft_login",
    asked_in_round_2=skew.loc[2, "questions asked"],
)
claim(
    len(asked) == len(set(asked)) and LOGINS["GitHub"] in skewed.text,
    "nothing the user said is lost, and nobody is asked twice",
    questions=asked,
    result=skewed.text,
)
old.close()
new.close()
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
think = stats.lognorm(s=workload.think_time_sigma, scale=workload.think_time_median_s)
timeouts = np.array(DRAIN_TIMEOUTS_S)
still_thinking = pd.DataFrame(
    {
        "drain timeout (s)": timeouts,
        "users still thinking (%)": 100 * think.sf(timeouts.astype(float)),
    }
).set_index("drain timeout (s)")
at_default_s = 100 * think.sf(DRAIN_TIMEOUT_S)
claim(
    at_default_s > 20,
    f"after Kubernetes' default {DRAIN_TIMEOUT_S:g} s, more than a fifth of them still think",
    still_thinking_pct=round(at_default_s, 1),
)
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

# %%
swept = drain_sweep.pivot_table(
    index=["architecture", "drain_timeout_s"], columns="metric", values="mean"
)
shortest, longest = min(DRAIN_TIMEOUTS_S), max(DRAIN_TIMEOUTS_S)
for name in ("sse-store", "sticky"):
    legacy = swept.loc[name]
    claim(
        legacy.loc[shortest, "state_losses"] > legacy.loc[longest, "state_losses"]
        and legacy.loc[shortest, "re_prompts"] > legacy.loc[longest, "re_prompts"],
        f"{result_tables.label(name)}: a short drain cuts more calls, and asks more answers "
        "again, than a long one",
        cut=legacy["state_losses"].to_dict(),
        asked_again=legacy["re_prompts"].to_dict(),
    )
    claim(
        legacy.loc[longest, "upgrade_duration_s"] > 600,
        f"{result_tables.label(name)}: with the longest drain the rollout lasts many minutes",
        rollout_s=legacy.loc[longest, "upgrade_duration_s"],
    )
mrtr = swept.loc["mrtr"]
claim(
    (mrtr["state_losses"] == 0).all()
    and (mrtr["re_prompts"] == 0).all()
    and (abs(mrtr["upgrade_duration_s"] - REPLICAS * RESTART_S) < REPLICAS).all(),
    "MRTR loses no progress at any timeout, and its rollout is as fast as the restarts",
    mrtr=mrtr[["state_losses", "re_prompts", "upgrade_duration_s"]].to_dict(),
)

# %% [markdown]
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
# `new questions after an upgrade` counts calls asked for `microsoft_login`, a question
# that did not exist when they started, asked once. They are MRTR calls that met version 2
# halfway. A legacy call meets it only if it is cut and started again from the first
# question on a version-2 replica after its user had answered: rare (none in most runs,
# now and then one), tens of times rarer than MRTR's.
# `calls whose progress was lost` counts calls the legacy clients had to start again (most
# of them then complete, so few are `lost` for good, but whatever their users had already
# answered is asked again: `answers asked again`).

# %%
means = at_default.pivot(index="architecture", columns="metric", values="mean")
claim(
    means.loc["mrtr", "new_questions"]
    > 10 * means.loc[["sse-store", "sticky"], "new_questions"].max()
    and means.loc["mrtr", "new_questions"] > 0,
    "MRTR calls meet version 2 halfway and are asked its new question; legacy calls meet it "
    "rarely (started again on version 2), ten times less often at least",
    new_questions=means["new_questions"].to_dict(),
)
claim(
    all(
        means.loc[name, "lost"] < means.loc[name, "state_losses"] / 4
        and means.loc[name, "re_prompts"] > 0
        for name in ("sse-store", "sticky")
    ),
    "most legacy calls whose progress was lost complete when started again, few are lost "
    "for good, and their users answer again",
    lost=means["lost"].to_dict(),
    progress_lost=means["state_losses"].to_dict(),
    asked_again=means["re_prompts"].to_dict(),
)

# %% [markdown]
# ## 4. Rotating the `requestState` keys in the same rollout
#
# Replicas share the AES keys that seal `requestState`; the first key in a replica's list
# seals, every key in it opens. A rollout can also replace a key, in phases, one phase per
# rollout. A state that reaches a replica can meet three fates:
#
# - **opens**: the replica holds the key that sealed it; the call carries on;
# - **asked again**: the replica does not hold that key (retired after a rotation, or not
#   trusted yet). The server treats such a state as late, not as an attack: it answers
#   `input_required` from the first question, and the user answers again;
# - **rejected**: the state fails its checks (here: it does not decrypt under the key its
#   id names); the call ends with an error.
#
# Below, a call's first two rounds go to a replica in one phase and its third to a
# replica in another, for every pair of phases. A fifth replica, **x**, shows a mistake:
# an operator who makes a *new* key but gives it the old id `k1`. These replicas tell
# every caller why they refuse a state (`state_error_detail`, for a classroom; by default
# only the state's owner hears the reason).

# %%
k1, k2, mistaken_k1 = new_state_key("k1"), new_state_key("k2"), new_state_key("k1")
PHASES = {
    "0: k1 only": (k1,),
    "1: trust k2 (seal k1)": (k1, k2),
    "2: seal k2 (trust k1)": (k2, k1),
    "3: k2 only": (k2,),
    "x: a new k1, by mistake": (mistaken_k1,),
}
ARGUMENTS = {"workItemId": 4522, "fields": {"System.State": "Resolved"}}
bug_user = Handlers(elicit=lambda params: accept(resolution="Duplicate", duplicateOfId=4301))
phase_clients = {
    phase: MrtrClient.for_app(
        lab.app(phase, state_keys=keys, state_error_detail=True), handlers=bug_user
    )
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


def retry_outcome(sealer: MrtrClient, opener: MrtrClient) -> str:
    """What becomes of a state sealed on `sealer` when round 3 reaches `opener`."""
    call = state_from(sealer)
    try:
        done = opener.send(call)
    except McpError as error:
        return f"rejected: {(error.data or {}).get('reason', error.message)}"
    if done:
        return "opens"
    if list(call.input_requests) == ["resolution"]:
        return "asked again"
    raise AssertionError(f"round 3 asked {list(call.input_requests)}")


outcomes = pd.DataFrame(
    {
        opened_by: {
            sealed_by: retry_outcome(sealer, opener) for sealed_by, sealer in phase_clients.items()
        }
        for opened_by, opener in phase_clients.items()
    }
)
outcomes.index.name = "state sealed by a replica in phase"
outcomes.columns.name = "round 3 reaches a replica in phase"
outcomes

# %%
OUTCOME_COLOURS = {"opens": "#8fd18f", "asked again": "#f5d76e", "rejected": "#f08080"}
short = [
    f"{phase.split(':')[0]}: " + "+".join(k.key_id for k in keys) for phase, keys in PHASES.items()
]
fig = live_figures.outcome_matrix(
    outcomes, OUTCOME_COLOURS, short, "What becomes of a state in each pair of phases (live)"
)
plt.show()

# %% [markdown]
# During a rollout, replicas of two *adjacent* phases serve side by side, and every pair
# of adjacent phases opens each other's states (the squares next to the diagonal). Two
# phases apart, a state may reach a replica that no longer holds (or does not yet hold)
# its key: the user is asked again from the first question, and no call fails. Hence the
# rule: one phase per rollout, and phase 3 only after every state sealed with k1 has
# expired (`state_ttl_s`). A key id must also always name the same key: replica x's `k1`
# is not a retired key but a different one, so states between it and the replicas that
# hold the real `k1` do not decrypt, and are rejected as tampered.

# %%
phases = list(PHASES)[:4]
ring = [[outcomes.loc[a, b] for b in phases] for a in phases]
claim(
    all(ring[i][j] == "opens" for i in range(4) for j in range(4) if abs(i - j) <= 1),
    "every pair of adjacent phases opens each other's states",
    outcomes=ring,
)
holds = {phase: {k.key_id for k in PHASES[phase]} for phase in phases}
sealer_key = {phase: PHASES[phase][0].key_id for phase in phases}
claim(
    all(
        outcomes.loc[a, b] == ("opens" if sealer_key[a] in holds[b] else "asked again")
        for a in phases
        for b in phases
    ),
    "a state whose key the replica does not hold is asked again from the first question: "
    "none of the four phases rejects another's state",
    outcomes=ring,
)
real_k1 = [phase for phase in phases if "k1" in holds[phase]]
claim(
    all(
        outcomes.loc["x: a new k1, by mistake", phase] == "rejected: tampered"
        and outcomes.loc[phase, "x: a new k1, by mistake"].startswith("rejected: tampered")
        == (sealer_key[phase] == "k1")
        for phase in real_k1
    ),
    "a key id that names another key makes states between those replicas fail as tampered",
    outcomes=outcomes["x: a new k1, by mistake"].to_dict(),
)

# %% [markdown]
# The load test's cluster (`loadtest.harness.cluster.KeyRing`) starts in phase 1, so the
# rolling upgrade it runs (to phase 2) rotates keys without a single rejected state or a
# user asked again:

# %%
ring_keys = KeyRing()
before = [key.split(":")[0] for key in ring_keys.before_rotation().split(",")]
after = [key.split(":")[0] for key in ring_keys.after_rotation().split(",")]
claim(
    before == ["k1", "k2"] and after == ["k2", "k1"],
    "the load test's replicas go from phase 1 (seal k1, trust k2) to phase 2 (seal k2, trust k1)",
    before=before,
    after=after,
)
claim(
    outcomes.loc[phases[1], phases[2]] == outcomes.loc[phases[2], phases[1]] == "opens",
    "phases 1 and 2 open each other's states",
)

# %%
for client in phase_clients.values():
    client.close()

# %% [markdown]
# ## Exercises
#
# Each exercise has its answer under it, behind a **Show answer** button: what the
# solution finds and why, beside what its code prints. Try first. The solution's code is
# folded in the cell above the button; click the cell's collapsed-input bar (⋯) to read it.

# %% [markdown] tags=["exercise"]
# **Exercise 1.** Which drain timeout lets 99% of thinking users finish before their
# replica stops? Compute it from the think-time distribution (`think.ppf`), remember that
# unanswered questions time out after `upgrade.client.answer_timeout_s`, then simulate the
# sticky rollout with that drain timeout. How long does the rollout take, and how many
# calls still lose their progress?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    The 99th percentile of the think time is a few minutes, more than the
    time after which an unanswered question times out; the drain never needs to wait
    longer than that timeout, so the drain timeout is the smaller of the two.

    With it, **almost nothing is cut** (only the rare user who thinks longer than the
    99th percentile), but **every replica waits for its slowest thinker** before it
    restarts, minutes each: the rollout takes more than ten times MRTR's. Four replicas
    take many minutes; hundreds would take hours. Users who never answer hold a stream
    until the answer timeout, which is why the drain cannot simply be made shorter.
    """
):
    p99_s = think.ppf(0.99)
    drain_s = min(p99_s, upgrade.client.answer_timeout_s)
    print(
        f"p99 think time {p99_s:.0f} s; "
        f"answers time out after {upgrade.client.answer_timeout_s:.0f} s"
    )
    patient = labsim.simulate(upgrade.with_overrides(drain_timeout_s=drain_s), "sticky", seed=SEED)
    print(f"drain timeout {drain_s:.0f} s: rollout {patient.summary['upgrade_duration_s']:.0f} s,")
    print(f"{patient.summary['state_losses']} calls lost their progress")
    claim(
        patient.summary["state_losses"] < runs["sticky"].summary["state_losses"] / 4
        and patient.summary["upgrade_duration_s"] > 10 * runs["mrtr"].summary["upgrade_duration_s"],
        "with a drain of the p99 think time almost nothing is cut, and the rollout takes "
        "more than ten times MRTR's",
        cut=patient.summary["state_losses"],
        cut_at_default=runs["sticky"].summary["state_losses"],
        rollout_s=patient.summary["upgrade_duration_s"],
        mrtr_rollout_s=runs["mrtr"].summary["upgrade_duration_s"],
    )

# %% [markdown] tags=["exercise"]
# **Exercise 2.** A rollback: the first round of a call lands on version 2 and the retry
# on version 1. Run it with `run_across` and read the rounds. Which question is asked in
# round 2, which answers does the final result use, and is any answer asked twice?

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    Version 2 asks for `github_login` and `microsoft_login` in round 1. The
    retry reaches version 1, which needs `github_login` (answered, carried in
    `requestState`) and `google_login`: it asks **only** for `google_login`.

    The final result uses the GitHub and Google answers. Every answer the user gave is
    carried in the state, also `microsoft_login`, which version 1 does not use, so **no
    question is asked twice** in either direction of the skew.
    """
):
    old = MrtrClient.for_app(lab.app("old", tool_version=1), handlers=user)
    new = MrtrClient.for_app(lab.app("new", tool_version=2), handlers=user)
    back, served_by = run_across([("new (v2)", new), ("old (v1)", old), ("old (v1)", old)])
    print(back.text)
    rollback = traffic.rounds_table(back, served_by)
    print(rollback[["served by", "answers sent", "questions asked"]])
    claim(
        rollback.loc[2, "questions asked"] == "google_login" and LOGINS["Google"] in back.text,
        "after a rollback version 1 asks only for google_login",
        asked_in_round_2=rollback.loc[2, "questions asked"],
        result=back.text,
    )
    old.close()
    new.close()

# %% [markdown] tags=["exercise"]
# **Exercise 3.** An operator skips phase 1 and rolls replicas straight from phase 0 to
# phase 2. Using the matrix, say which retries go wrong during that rollout, in which
# direction, and how. Then count them in a small experiment: 20 calls whose first two
# rounds and whose third land on replicas picked at random from a half-upgraded fleet
# (one phase-0 replica, one phase-2 replica).

# %% tags=["solution"] jupyter={"source_hidden": true, "outputs_hidden": true}
with hidden_answer(
    """
    A phase-2 replica seals with `k2`, which a phase-0 replica does not hold. So a call
    whose state was sealed on phase 2 and whose retry reaches phase 0 is **asked again
    from the first question**: the user answers twice. Nothing fails, and the other
    three directions open (phase 2 still trusts `k1`).

    With each round on either replica at random, that is a half times a half: **about a
    quarter of the calls**. The experiment counts exactly those calls asked again, and no
    rejected one. Skipping phase 1 costs users' answers, not errors; one phase per
    rollout costs neither.
    """
):
    rng = np.random.default_rng(SEED)
    half_upgraded = ("0: k1 only", "2: seal k2 (trust k1)")
    fleet = [
        MrtrClient.for_app(
            lab.app(f"phase {p}", state_keys=PHASES[p], state_error_detail=True),
            handlers=bug_user,
        )
        for p in half_upgraded
    ]
    draws = [tuple(rng.integers(0, 2, size=2)) for _ in range(20)]
    seen = pd.Series([retry_outcome(fleet[first], fleet[second]) for first, second in draws])
    print(seen.value_counts().to_string())
    two_then_zero = sum(1 for first, second in draws if (first, second) == (1, 0))
    low, high = stats.binom.interval(0.99, len(draws), 0.25)
    claim(
        (seen == "asked again").sum() == two_then_zero
        and not seen.str.startswith("rejected").any(),
        "exactly the calls sealed on phase 2 and retried on phase 0 are asked again; none fails",
        asked_again=int((seen == "asked again").sum()),
        phase_2_then_0=two_then_zero,
    )
    claim(
        low <= two_then_zero <= high,
        "that is about a quarter of the calls",
        share=two_then_zero / len(draws),
    )
    for client in fleet:
        client.close()
