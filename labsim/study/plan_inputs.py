"""What a plan takes as given besides the architect's question, and where each figure is from.

A plan rests on figures of three kinds: measured on a live server (the parameter file,
`labsim/measured.json` for the lab's own, or `--params FILE`), stated by the architect
(a flag or `--set`), and assumed (a default nobody measured or stated). The plan prints
every one with its kind, so that an assumption is never mistaken for a measurement.

The parameter file given with `--params` is laid over the lab's own: a figure it does
not give (a server seen from outside shows no held memory) keeps the lab's measurement,
and says so: borrowed from the lab's own server.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labsim.model import measured
from labsim.model.checks import ParameterError
from labsim.model.demand import ServiceTime
from labsim.model.measured import Measurement
from labsim.model.params import SimParams
from labsim.model.simulation import ARCHITECTURES
from labsim.study.plan_request import SET_BY_REQUEST, PlanRequest, flag_of, tool_mix_text

MEASURED = "measured"
STATED = "stated"
ASSUMED = "assumption"
CONFIGURED = "the lab's configuration"


@dataclass(frozen=True)
class Input:
    """One figure the plan rests on: what it is, its value, and where it comes from."""

    what: str
    value: str
    kind: str  # MEASURED, STATED, ASSUMED or CONFIGURED
    source: str

    def line(self) -> str:
        """The figure as the plan prints it."""
        return f"{self.what}: {self.value} ({self.source})"


@dataclass(frozen=True)
class PlanInputs:
    """The parameters each architecture's runs start from, the measured round, and the
    parameter files they came from."""

    bases: dict[str, SimParams]
    measured_round: ServiceTime
    round_source: str
    files: tuple[Measurement, ...]
    settings: dict[str, Any] = field(default_factory=dict)


def plan_inputs(
    measurement: Measurement | None = None,
    settings: Mapping[str, Any] | None = None,
    architectures: Sequence[str] = tuple(ARCHITECTURES),
) -> PlanInputs:
    """The lab's measurement, `measurement` over it (a `--params` file), then `settings`
    (`--set`), for each architecture; a setting the request makes itself is refused."""
    settings = dict(settings or {})
    for path in settings:
        name = path.rsplit(".", 1)[-1]
        if name in SET_BY_REQUEST:
            raise ParameterError(
                f"--set {path}: the plan sets {name} itself, from {SET_BY_REQUEST[name]}"
            )
    lab = measured.load()
    files = (
        (lab,)
        if measurement is None or measurement.source == lab.source
        else (
            lab,
            measurement,
        )
    )
    bases = {}
    for architecture in architectures:
        params = SimParams()
        for file in files:
            # The round the file measured is the request's default, split by the plan.
            params = params.with_settings(file.values)
            base_memory = file.base_memory(architecture)
            if base_memory is not None:
                params = params.with_overrides(base_memory_bytes=base_memory)
        bases[architecture] = params.with_settings(settings)
    top = files[-1]
    source = next((f for f in reversed(files) if f.round_cpu is not None), None)
    if source is not None and source.round_cpu is not None:
        measured_round, round_source = source.round_cpu, source.label()
    else:
        # The lab's demo tools do no work of their own: a round is the request's overhead.
        overhead_s = next(iter(bases.values())).workload.request_overhead_s
        measured_round = ServiceTime(mean_s=overhead_s, kind="deterministic", cv=0.0)
        round_source = (
            f"{top.label()}: request_overhead_s, as the demo tools do no work of their own; "
            "spread not measured"
        )
    return PlanInputs(bases, measured_round, round_source, files, settings)


def inputs_table(
    request: PlanRequest,
    inputs: PlanInputs,
    whole_round: ServiceTime,
    stated: set[str],
    shape_note: str = "",
    target_tools: Collection[str] = (),
) -> list[Input]:
    """Every figure the plan rests on, with its kind and source. With `target_tools` (the
    mix's tools a parameter file measured, whose figures `labsim.study.plan_tools` lists)
    the server work per round is the demo tools'."""
    base = next(iter(inputs.bases.values()))
    cluster, workload, state = base.cluster, base.workload, base.state

    def given(*names: str) -> tuple[str, str]:
        flags = ", ".join(dict.fromkeys(flag_of(n) for n in names))
        if any(n in stated for n in names):
            return STATED, f"stated: {flags}"
        return ASSUMED, f"assumption: the default of {flags}"

    def set_or(prefixes: tuple[str, ...], kind: str, source: str) -> tuple[str, str]:
        """Stated with `--set` if a setting names one of `prefixes`, else `(kind, source)`."""
        if any(path.startswith(prefixes) for path in inputs.settings):
            return STATED, "stated: --set"
        return kind, source

    def from_file(name: str) -> tuple[str, str]:
        if name in inputs.settings or any(p.endswith("." + name) for p in inputs.settings):
            return STATED, "stated: --set"
        for file in reversed(inputs.files):
            if name in file.values or any(p.endswith("." + name) for p in file.values):
                return MEASURED, _label(file, inputs)
        return ASSUMED, "assumption: no parameter file gives it"

    rows: list[tuple[str, str, tuple[str, str]]] = [
        ("arrivals", f"Poisson, {request.rate_per_s:g} calls/s", given("rate_per_s")),
        (
            "think time, median",
            f"lognormal, {request.think_time_median_s:g} s",
            given("think_time_median_s"),
        ),
        ("think time, spread", f"sigma {request.think_time_sigma:g}", given("think_time_sigma")),
        (
            "users who never answer",
            f"{request.never_answer_share:.1%}",
            given("never_answer_share"),
        ),
        ("tool mix", tool_mix_text(request.tools, request.tool_mix), given("tools")),
        (
            "server work per round" + _whose_round(request.tools, target_tools),
            whole_round.describe(),
            _round_source(request, inputs, stated),
        ),
        (
            "of which the request's overhead",
            f"{workload.request_overhead_s * 1e3:.3g} ms",
            from_file("request_overhead_s"),
        ),
        (
            "time per request outside the replica",
            f"lognormal, mean {cluster.network_rtt_s * 1e3:.3g} ms, "
            f"cv {cluster.network_rtt_cv:.2g}",
            from_file("network_rtt_s"),
        ),
        (
            "memory per held legacy call",
            f"{cluster.held_call_bytes:,} B",
            from_file("held_call_bytes"),
        ),
        ("idle replica's memory", _base_memory_text(inputs), _base_memory_source(inputs)),
        (
            "requestState seal / open",
            f"{state.seal_cpu_s * 1e6:.3g} / {state.open_cpu_s * 1e6:.3g} us",
            from_file("seal_cpu_s"),
        ),
        (
            "bytes per request / response",
            f"{workload.request_bytes} / {workload.response_bytes}",
            from_file("request_bytes"),
        ),
        (
            "SLO, latency",
            f"p95 {request.slo_p95_ms:g} ms over every call whose user answers",
            given("slo_p95_ms"),
        ),
        (
            "SLO, completion",
            f"{request.slo_completed_share:.2%} of those calls",
            given("slo_completed_share"),
        ),
        (
            "replica",
            f"{request.vcpus_per_replica:g} vCPU ({_workers(request)}), "
            f"{request.memory_gb_per_replica:g} GB{shape_note}",
            given("vcpus_per_replica", "memory_gb_per_replica"),
        ),
        (
            "connection limit",
            f"{request.connection_limit:,} per replica",
            given("connection_limit"),
        ),
        ("CPU target", f"{request.target_cpu_utilization:.0%}", given("target_cpu_utilization")),
        ("answer timeout", f"{request.answer_timeout_s:g} s", given("answer_timeout_s")),
        (
            "balancer",
            f"round-robin (sticky: cookie); health check every "
            f"{cluster.health_check_interval_s:g} s, fall {cluster.health_check_fall}, rise "
            f"{cluster.health_check_rise}, timeout {cluster.health_check_timeout_s:g} s",
            set_or(
                ("cluster.health_check", "health_check", "cluster.lb_policy", "lb_policy"),
                CONFIGURED,
                "the lab's HAProxy: loadtest/harness/haproxy.py",
            ),
        ),
        (
            "keep-alive",
            f"a connection stays open {cluster.keepalive_idle_s:g} s after its last request",
            set_or(
                ("cluster.keepalive_idle_s", "keepalive_idle_s"),
                CONFIGURED,
                "the server's --idle-timeout-s default",
            ),
        ),
        (
            "client",
            f"retries a refused request after {base.client.retry_backoff_s:g} s, doubling, "
            f"{base.client.max_retries} times a call; starts a broken call again "
            f"{base.client.max_call_restarts} times",
            set_or(
                ("client.", "retry_backoff_s", "max_retries", "max_call_restarts"),
                ASSUMED,
                "assumption: ClientParams",
            ),
        ),
        (
            "shared store (sse-store)",
            f"round trip {base.store.round_trip_s * 1e3:g} ms, {base.store.ops_per_answer} "
            "commands per answer",
            set_or(("store.",), ASSUMED, "assumption: Redis documentation"),
        ),
    ]
    return [Input(what, value, kind, source) for what, value, (kind, source) in rows]


def _round_source(request: PlanRequest, inputs: PlanInputs, stated: set[str]) -> tuple[str, str]:
    """Where the server work per round comes from: the flags that stated it, and the
    parameter file for whatever they left out."""
    named = [flag_of(n) for n in ("round_cpu_ms", "round_cpu_cv", "round_cpu_kind") if n in stated]
    unmeasured_spread = "spread not measured" in inputs.round_source
    from_file = inputs.round_source + ("; deterministic assumed" if unmeasured_spread else "")
    if len(named) == 3:
        return STATED, "stated: " + ", ".join(named)
    if named:
        return STATED, f"stated: {', '.join(named)}; the rest {from_file}"
    return (ASSUMED if unmeasured_spread else MEASURED), from_file


def _whose_round(tools: Sequence[str], target_tools: Collection[str]) -> str:
    """Whose round the server work per round is, when the mix has target tools of their own."""
    if not target_tools:
        return ""
    return ", demo tools" + ("" if set(tools) - set(target_tools) else " (none in the mix)")


def _workers(request: PlanRequest) -> str:
    if request.worker_speed < 1:
        return f"1 worker on {request.worker_speed:g} of a CPU"
    return f"{request.workers} worker{'s' if request.workers > 1 else ''}"


def _base_memory_text(inputs: PlanInputs) -> str:
    sizes = {a: p.cluster.base_memory_bytes for a, p in inputs.bases.items()}
    if len(set(sizes.values())) == 1:
        return f"{next(iter(sizes.values())) / 2**20:.1f} MiB"
    return ", ".join(f"{a} {b / 2**20:.1f} MiB" for a, b in sizes.items())


def _base_memory_source(inputs: PlanInputs) -> tuple[str, str]:
    if any(p.endswith("base_memory_bytes") for p in inputs.settings):
        return STATED, "stated: --set"
    file = next((f for f in reversed(inputs.files) if f.base_memory_bytes is not None), None)
    if file is None:
        return ASSUMED, "assumption: no parameter file gives it"
    return MEASURED, _label(file, inputs) + ", replica"


def _label(file: Measurement, inputs: PlanInputs) -> str:
    """Where a figure of `file` comes from: the file, or, when the plan was given another
    file that lacks the figure, the lab's own server it was borrowed from."""
    if len(inputs.files) > 1 and file is inputs.files[0]:
        return f"borrowed from the lab's own server: {file.label()}"
    return file.label()


def assumptions(table: list[Input]) -> list[str]:
    """The figures nobody measured, as the plan's JSON lists them."""
    return [row.line() for row in table if row.kind != MEASURED]
