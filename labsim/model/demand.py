"""Who calls the tools and how: arrivals, the tool mix, server CPU, think time, the client.

`WorkloadParams` says what the users ask for and how long they think; `ServiceTime`
how long a worker is busy with one round; `ClientParams` what the MCP client does
when something goes wrong. Each default carries its source in a comment (a measurement
of the lab's own server in `labsim/measured.json`, a documented product default, or a
stated assumption); `docs/model.md` lists them all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from labsim.model.checks import ParameterError, check_fraction, check_numbers, require
from labsim.model.service_time import SERVICE_TIME_KINDS as SERVICE_TIME_KINDS
from labsim.model.service_time import ServiceTime
from labsim.model.tools import TOOLS, SimTool, requests_per_call, tool_names


def stated_round(
    measured: ServiceTime, mean_ms: float | None, cv: float | None, kind: str | None
) -> ServiceTime:
    """The server work per round as a user states it (`--round-cpu-ms`, `-cv`, `-kind`),
    the rest as `measured`.

    A spread stated without a kind is a lognormal's (the only kind with a spread of its
    own); a kind stated without a spread takes its own (exponential 1, deterministic 0)
    or, for a lognormal, the measured one.
    """
    if kind is None:
        kind = "lognormal" if cv is not None else measured.kind
    if cv is None:
        cv = {"exponential": 1.0, "deterministic": 0.0}.get(kind, measured.cv)
    mean_s = measured.mean_s if mean_ms is None else mean_ms / 1e3
    try:
        return ServiceTime(mean_s=mean_s, kind=kind, cv=cv)
    except ParameterError as error:
        raise ParameterError(f"--round-cpu-cv, --round-cpu-kind: {error}") from None


def split_round(whole: ServiceTime, overhead_s: float) -> tuple[ServiceTime, float]:
    """A round's whole service time, as measured or stated, in the model's two parts: the
    constant overhead every request pays (`request_overhead_s`) and the tool's own work.

    The tool's part keeps the whole's spread: its mean is the whole's less the overhead,
    its standard deviation the whole's. A round lighter than the overhead is all overhead
    (the server described is quicker than the one the overhead was measured on). Returns
    the tool's part and the overhead.
    """
    overhead_s = min(overhead_s, whole.mean_s)
    rest_s = whole.mean_s - overhead_s
    if rest_s <= 0:
        return ServiceTime(mean_s=0.0, kind="deterministic", cv=0.0), overhead_s
    if whole.kind == "lognormal":
        return ServiceTime(rest_s, "lognormal", whole.cv * whole.mean_s / rest_s), overhead_s
    return ServiceTime(rest_s, whole.kind, whole.cv), overhead_s


@dataclass(frozen=True)
class WorkloadParams:
    """Who calls the tools: arrivals, the tool mix, server CPU and the users' think time.

    Calls arrive as a Poisson process (optionally with piecewise-constant rate
    multipliers). A call is to a tool that asks the user 0, 1 or 2 questions;
    each round of server work costs a request overhead plus the tool's own CPU.
    A user thinks for a lognormal time before answering; some never answer.
    """

    arrival_rate_per_s: float = 8.0  # assumption: a small deployment, quick to sweep
    rate_profile: tuple[tuple[float, float], ...] = ()  # (start_s, multiplier) pieces; () = flat
    # The simulated demo tools (`labsim.model.tools`) and the share of calls to each: none asks,
    # one asks one question, one asks two in one round (assumption).
    tools: tuple[str, ...] = ("crunch", "get_weather", "link_accounts")
    tool_mix: tuple[float, ...] = (0.5, 0.3, 0.2)  # assumption: share of calls per tool
    # Tools of another server, by their own names, as measured (`labsim.model.tools.target_tool`;
    # `labsim plan --params` makes them from the file's `tools`); a name of `tools` is one of
    # these or of the demo catalogue.
    target_tools: tuple[SimTool, ...] = ()
    # The tool's own CPU per round, on top of the request's overhead. Assumption: 50 ms, a
    # tool that parses, validates and calls an API client; `labsim plan` takes the round
    # as measured (`--params`) or stated (`--round-cpu-ms`) instead, and says which.
    round_cpu: ServiceTime = field(default_factory=ServiceTime)
    request_overhead_s: float = 0.000186  # measured.json: replica CPU per round (fitted)
    think_time_median_s: float = 10.0  # docs/model.md: stated assumption, lognormal, median 10 s
    think_time_sigma: float = 1.5  # lognormal shape: p95 = 10 s * e^(1.645*1.5) = about 2 minutes
    think_scale: float = 1.0  # multiplier for sweeps; 0 = users answer instantly
    never_answer_share: float = 0.05  # docs/model.md: assumption (the seed: maybe never)
    calls_per_session: float = 1.0  # assumption: each call its own session unless a scenario says
    session_s: float = 1800.0  # assumption: a session's calls spread over half an hour
    request_bytes: int = 445  # measured.json: mean JSON-RPC request body per round
    response_bytes: int = 322  # measured.json: mean JSON-RPC response body per round

    def __post_init__(self) -> None:
        check_numbers(
            self,
            "arrival_rate_per_s",
            "think_time_median_s",
            "think_time_sigma",
            "session_s",
            positive=True,
        )
        require(self.calls_per_session >= 1, "calls_per_session must be >= 1")
        check_numbers(self, "request_overhead_s", "think_scale", "request_bytes", "response_bytes")
        check_fraction(self, "never_answer_share")
        require(
            isinstance(self.round_cpu, ServiceTime),
            f"round_cpu must be a ServiceTime, got {self.round_cpu!r}",
        )
        require(
            all(isinstance(tool, SimTool) for tool in self.target_tools),
            f"target_tools must be tools (labsim.model.tools.SimTool), got {self.target_tools!r}",
        )
        known = {tool.name: tool for tool in self.target_tools}
        unknown = [name for name in self.tools if name not in known and name not in TOOLS]
        require(
            not unknown,
            f"unknown tools {unknown!r}; choose from "
            f"{tool_names([*self.target_tools, *TOOLS.values()])}",
        )
        require(
            len(self.tool_mix) == len(self.tools)
            and all(share >= 0 for share in self.tool_mix)
            and math.isclose(sum(self.tool_mix), 1.0),
            f"tool_mix must be one share >= 0 per tool ({len(self.tools)}) summing to 1, "
            f"got {self.tool_mix!r}",
        )
        starts = [start for start, _ in self.rate_profile]
        require(
            starts == sorted(starts) and all(s >= 0 and m >= 0 for s, m in self.rate_profile),
            "rate_profile must be (start_s, multiplier) pairs, sorted, all >= 0",
        )

    def specs(self) -> tuple[SimTool, ...]:
        """The tools of `tools`, in order: the target's of that name, else the demo one."""
        known = {tool.name: tool for tool in self.target_tools}
        return tuple(known.get(name) or TOOLS[name] for name in self.tools)

    def tool_cpu_per_call_s(self) -> float:
        """Mean work of the tools' own per call, nothing going wrong, the requests'
        overhead apart: each tool's rounds times its work per round (the workload's
        `round_cpu` for a tool without its own)."""
        specs = self.specs()
        if all(tool.round_cpu is None for tool in specs):
            return requests_per_call(specs, self.tool_mix) * self.round_cpu.mean_s
        return sum(
            share * tool.mean_requests() * (tool.round_cpu or self.round_cpu).mean_s
            for tool, share in zip(specs, self.tool_mix, strict=True)
        )


@dataclass(frozen=True)
class ClientParams:
    """What the MCP client does when things go wrong: time-outs, retries, restarts."""

    answer_timeout_s: float = 300.0  # assumption: a question unanswered for 5 minutes is dropped
    retry_backoff_s: float = 1.0  # assumption: first retry after 1 s, then doubling with jitter
    max_retries: int = 4  # assumption: a client gives up after 4 retried requests
    max_call_restarts: int = 2  # assumption: an agent re-runs a broken tool call twice
    reconnect_delay_s: float = 0.5  # assumption: noticing a dropped stream and reconnecting
    offload_retry_delay_s: float = 0.0  # docs/model.md: a state-only result is retried at once
    # Legacy: when a client learns that a held call was cut while its user thinks. False
    # (assumption): it watches the stream and restarts at once; True: only when the answer
    # POST is refused, after the user has answered (the load test's client does this).
    cut_noticed_on_answer: bool = False

    def __post_init__(self) -> None:
        check_numbers(self, "answer_timeout_s", positive=True)
        check_numbers(
            self,
            "retry_backoff_s",
            "max_retries",
            "max_call_restarts",
            "reconnect_delay_s",
            "offload_retry_delay_s",
        )
