"""Locust users for the three architectures, each running whole tool calls back to back,
and the users of a target's own tools (`TargetUser`, whose mix `python -m loadtest swarm
--target` discovers and hands over in `LOADTEST_TARGET`: `loadtest.swarm.target_mix`).

    locust -f loadtest/swarm/locustfile.py --host http://127.0.0.1:PORT MrtrUser

With `--rate` the users are open-loop arrivals instead: one Locust user starts each call,
at exponential intervals, as a user of its own (`FlowUser`).

Every call fires a `CALL` event named for its tool (its end-to-end latency without think
time, size 0, an exception unless it completed: a target's carries the server's words)
and sends its record to the master (`loadtest.swarm.call_relay`), which appends it to the
file named by `LOADTEST_CALLS_FILE` when set (what `python -m loadtest scenario`
summarises). Its HTTP requests are `POST`
rows named for their round kind, counted per replica as well (`loadtest.swarm.locust_stats`).
Settings come from `LOADTEST_CONFIG` (JSON of `LoadTestConfig` fields). Each user is a
principal of its own, with a token signed with the cluster's secret (`LOADTEST_JWT_SECRET`;
without it, every user is the one anonymous principal). The same file runs
in Locust's distributed mode (`--master` / `--worker`): records reach the master however
many workers and machines run the users.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from typing import Any

import gevent
import gevent.pool
from locust import FastHttpUser, events, task
from locust.contrib.fasthttp import FastHttpSession

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import USERS_SECRET_ENV, task_tools
from loadtest.swarm import call_relay
from loadtest.swarm.locust_stats import CALL, install
from loadtest.swarm.target_mix import TargetCaller, era_of_user, exported_mix
from loadtest.swarm.user_http import UserHttp
from loadtest.users.flows import Backoff, CallRecord, run_mrtr_flow
from loadtest.users.legacy_flow import SessionHolder, run_legacy_flow
from loadtest.users.simulated_user import ThinkTime, crunch_units_for, tool_arguments, tool_cpu_ms
from loadtest.users.task_flow import WIRES, run_task_flow
from server.harness.principals import user_headers

CONFIG = LoadTestConfig(**json.loads(os.environ.get("LOADTEST_CONFIG", "{}")))
CALLS_FILE = os.environ.get("LOADTEST_CALLS_FILE")
STARTED_FILE = os.environ.get("LOADTEST_STARTED_FILE")
TASK_TOOLS = set(task_tools(CONFIG.tool_mix))
#: A target's own tools, when the swarm drives one (`--target`): what its users call.
TARGET = exported_mix()
if TARGET is not None:
    TARGET.warm_up()
#: The index of each user this process starts (a target's users split between its eras).
USER_INDEX = itertools.count()
#: How the users' client waits before it sends a refused round again.
BACKOFF = Backoff(CONFIG.retry_backoff_s, CONFIG.retry_backoff_max_s)
#: How long open-loop calls still running at the end may take, when Locust names no
#: stop timeout (the swarm's own runs always do).
STOP_TIMEOUT_S = 10.0
install(events)


def call_cpu_ms(rng: random.Random) -> float:
    """The CPU a CPU-bound tool's rounds spend in one call (`--tool-cpu-ms`, drawn)."""
    return tool_cpu_ms(CONFIG.tool_cpu_ms, CONFIG.tool_cpu_cv, CONFIG.tool_cpu_kind, rng)


def call_crunch_units(cpu_ms: float) -> int:
    """crunch's units: the overload scenario's own, else as much hashing as `cpu_ms`."""
    return CONFIG.crunch_units if CONFIG.scenario == "overload" else crunch_units_for(cpu_ms)


@events.init.add_listener
def collect_calls(environment: Any, **kwargs: Any) -> None:
    """The master (or a lone process) collects every call record of the run."""
    call_relay.listen(environment, CALLS_FILE)


@events.test_start.add_listener
def announce_start(**kwargs: Any) -> None:
    """Tell the scenario runner when users start, so faults are timed from the real start."""
    if STARTED_FILE:
        with open(STARTED_FILE, "w") as marker:
            marker.write(repr(time.time()))


class FlowUser(FastHttpUser):
    """A user who calls demo tools one after another and answers every question.

    With `--rate` (open loop) one such user is the arrivals instead: at exponential
    intervals it starts a call by a user of its own, with its own connections, cookies,
    principal and session, and does not wait for it. Calls still running when the run ends
    get the stop timeout to finish; any left then count as lost.
    """

    abstract = True
    last_call_s = 0.0

    def wait_time(self) -> float:
        """Open loop: the gap to the next arrival. Closed loop: none, or the rest of an
        exponential gap since this user's last call began.

        Constant pacing would keep every user's phase, and users spawned together would
        then call together each period: bursts, not the Poisson arrivals labsim models.
        """
        if CONFIG.rate_per_s:
            return self.rng.expovariate(CONFIG.rate_per_s)
        if not CONFIG.pacing_s:
            return 0.0
        return max(0.0, self.rng.expovariate(1 / CONFIG.pacing_s) - self.last_call_s)

    arch = "mrtr"

    def on_start(self) -> None:
        self.rng = random.Random()
        self.think = ThinkTime(
            CONFIG.think_time_median_s, CONFIG.think_time_sigma, self.rng, CONFIG.never_answer_share
        )
        # A principal of its own: the replicas' caps are per principal.
        self.http = UserHttp(self.client, self.credentials())
        self.holder = SessionHolder()
        self.calls = gevent.pool.Group()
        self.running: dict[Any, CallRecord] = {}
        if CONFIG.pacing_s or CONFIG.rate_per_s:
            # The first call waits an exponential gap as every later one does: users spawned
            # together (Locust starts a second's worth at once) then offer a Poisson stream
            # from the start, not a burst of first calls. Waited as Locust waits between
            # tasks, so the end of the run stops a user still waiting at once; a plain sleep
            # here held the run open for its whole stop timeout.
            self.wait()

    def on_stop(self) -> None:
        """Open loop: give the calls still running the stop timeout, then count the rest
        as lost (they were cut by the end of the run)."""
        if not CONFIG.rate_per_s:
            return
        self.calls.join(timeout=self.environment.stop_timeout or STOP_TIMEOUT_S)
        for record in list(self.running.values()):
            record.outcome, record.error = "lost", "still running when the run ended"
            record.ended = time.time()
            self.report(record)
        self.running.clear()
        self.calls.kill(block=False)

    def pick_tool(self) -> str:
        if CONFIG.scenario == "overload":
            return "crunch"
        tools, weights = zip(*CONFIG.tool_mix.items(), strict=True)
        return self.rng.choices(tools, weights)[0]

    @task
    def call_a_tool(self) -> None:
        """One whole tool call of the mix, all rounds, then its report (open loop: start
        one by a new user, and go on to the next arrival at once)."""
        if CONFIG.rate_per_s:
            self.calls.spawn(self.call_of_a_new_user)
            return
        self.report(self.one_call(self.http, self.holder))

    def call_of_a_new_user(self) -> None:
        """Open loop: one call by a user of its own, on a client of its own."""
        client = FastHttpSession(
            base_url=self.host,
            request_event=self.environment.events.request,
            user=self,
            network_timeout=self.network_timeout,
            connection_timeout=self.connection_timeout,
            # A legacy answer is POSTed while the call's stream is still open.
            concurrency=self.concurrency,
        )
        http = UserHttp(client, self.credentials())
        me = gevent.getcurrent()
        self.running[me] = CallRecord(tool="", arch=self.arch, started=time.time())
        try:
            record = self.one_call(http, SessionHolder(), self.running[me])
        except Exception as error:  # a bug in a flow: the call counts, as a failure
            record = self.running[me]
            record.outcome, record.error = "failed", f"{type(error).__name__}: {error}"
            record.ended = time.time()
        finally:
            self.running.pop(me, None)
            client.client.clientpool.close()
        self.report(record)

    def one_call(
        self, http: UserHttp, holder: SessionHolder, pending: CallRecord | None = None
    ) -> CallRecord:
        """One whole call of the mix, as a user with `http` and `holder` makes it.

        A task tool runs as a task under every architecture: the 2026-07-28 task methods,
        in the configured wire form, against the shared task store. `pending` is told the
        tool as soon as it is picked (what an open-loop call cut at the end reports).
        """
        tool = self.pick_tool()
        if pending is not None:
            pending.tool = tool
        options = {
            "think": self.think,
            "rng": self.rng,
            "max_retries": CONFIG.max_retries,
            "sleep": gevent.sleep,
        }
        cpu_ms = call_cpu_ms(self.rng)
        arguments = tool_arguments(
            tool,
            self.rng,
            call_crunch_units(cpu_ms),
            CONFIG.provision_s,
            cpu_ms,
            CONFIG.argument_bytes,
        )
        if tool in TASK_TOOLS:
            wire = self.rng.choice(WIRES) if CONFIG.task_wire == "both" else CONFIG.task_wire
            return run_task_flow(
                http.post,
                tool,
                arguments,
                arch=self.arch,
                wire=wire,
                timeout_s=CONFIG.task_timeout_s,
                **options,
            )
        return self.flow(http, holder, tool, arguments, backoff=BACKOFF, **options)

    def flow(
        self,
        http: UserHttp,
        holder: SessionHolder,
        tool: str,
        arguments: dict[str, Any],
        **options: Any,
    ) -> CallRecord:
        """Run one call the way this architecture's client does."""
        raise NotImplementedError

    def credentials(self) -> dict[str, str]:
        """The user's headers: a principal of its own (the replicas' caps are per principal)."""
        return user_headers(os.environ.get(USERS_SECRET_ENV))

    def failure(self, record: CallRecord) -> str:
        """What Locust's Failures tab says of a call that did not complete."""
        return record.outcome

    def report(self, record: CallRecord) -> None:
        if not CONFIG.rate_per_s:
            self.last_call_s = record.ended - record.started
        events.request.fire(
            request_type=CALL,
            name=record.tool,
            response_time=record.latency_ms,
            response_length=0,  # a call has no one body; its rounds are the POST rows
            exception=None if record.outcome == "completed" else RuntimeError(self.failure(record)),
            context={"arch": record.arch},
        )
        call_relay.deliver(self.environment, record)


class MrtrUser(FlowUser):
    """MRTR (2026-07-28): every round a fresh request; a cut round is simply sent again."""

    arch = "mrtr"

    def flow(
        self,
        http: UserHttp,
        holder: SessionHolder,
        tool: str,
        arguments: dict[str, Any],
        **options: Any,
    ) -> CallRecord:
        return run_mrtr_flow(http.post, tool, arguments, **options)


class LegacyUser(FlowUser):
    """Legacy SSE (2025-11-25): one session per user; a call is held on a stream while the
    user thinks, and a cut call is started again from scratch."""

    abstract = True

    def flow(
        self,
        http: UserHttp,
        holder: SessionHolder,
        tool: str,
        arguments: dict[str, Any],
        **options: Any,
    ) -> CallRecord:
        return run_legacy_flow(http, holder, tool, arguments, arch=self.arch, **options)


class StickyUser(LegacyUser):
    """Legacy SSE behind a cookie-sticky balancer: answers reach the replica holding the call."""

    arch = "sticky"


class SseStoreUser(LegacyUser):
    """Legacy SSE behind round-robin: answers travel to the holding replica through Redis."""

    arch = "sse-store"


class TargetUser(FlowUser):
    """A user of a target's own tools (`--target URL`): each call's tool drawn by the mix's
    weights, its arguments from the tool's schema or the workload file, every question
    answered validly (`loadtest.swarm.target_mix`), in the era the user speaks. Failures
    carry the server's words to Locust's Failures tab."""

    def on_start(self) -> None:
        if TARGET is None:
            raise RuntimeError("a TargetUser needs the target's mix (python -m loadtest swarm)")
        self.index = next(USER_INDEX)
        super().on_start()
        era = era_of_user(TARGET, self.index)
        self.caller = TargetCaller(TARGET, era, self.rng, TARGET.workload())
        self.arch = self.caller.arch

    def credentials(self) -> dict[str, str]:
        token = TARGET.tokens[self.index % len(TARGET.tokens)] if TARGET else None
        return {"Authorization": f"Bearer {token}"} if token else {}

    def failure(self, record: CallRecord) -> str:
        return f"{record.outcome}: {record.error}" if record.error else record.outcome

    def one_call(
        self, http: UserHttp, holder: SessionHolder, pending: CallRecord | None = None
    ) -> CallRecord:
        tool = self.caller.pick_tool()
        if pending is not None:
            pending.tool = tool
        http.transport_error = ""
        record = self.caller.call(
            http.post, http, holder, tool, think=self.think, rng=self.rng,
            max_retries=CONFIG.max_retries, sleep=gevent.sleep, backoff=BACKOFF,
        )  # fmt: skip
        if record.outcome == "lost" and http.transport_error:
            # The lab's words for this are its replicas'; a target's are the client's.
            record.error = f"no answer from the target: {http.transport_error}"
        return record
