"""The ceiling: the highest open-loop rate at which the deployment still meets its SLO.

`--find-ceiling` steps the rate: the first `--step-s` seconds at `--rate` calls per second
(or `--start-rate`, a whole number of them), then one more arrival stream of `--rate` per
step (Poisson streams add up to a Poisson stream), until a step breaks the SLO (`--slo-p95-ms`,
`--max-error-share`) or `--max-steps` have run. A step's calls are the ones that started in
it; it holds when their p95 latency is within the SLO and their share of failed and lost
calls at most the maximum (a step in which no call was answered holds: none missed it).
The ceiling is the rate of the last step that held before the first that broke.

The search judges a step as it runs by the same rule, `settle_s` after the step's end (the
SLO's p95 and a quarter of a second for the last answers to reach the master), the rate
held until then: a call of the step still running by then is over the SLO already. The
report judges each step again with every call counted; the two differ only when calls still
running at the judgement end up tipping the step, and the report says so.

With `--confirm-breaks`, a step that breaks is run once more at its rate, and the search
stops only when that repeat breaks too: on a shared machine one stall of a few hundred
milliseconds (a neighbour's burst, a collection) can put a step's p95 over the SLO well
below the knee, and a repeat that holds says the step's rate was not the ceiling.

On the lab's own cluster the replicas' time is read as the steps run (`ReplicaTime`: their
CPU seconds and the seconds they waited for a CPU other programs held, a few times a
second): each step then says how busy the replicas were per round served, and the steps
near the knee (the one that broke and the two before it) give the service time of a round
on these replicas, which the simulation's ceiling is asked with
(`loadtest.scenarios.ceiling_prediction`). A round's latency as a client sees it would not
do: at a low rate it is mostly time outside the replica (client, balancer, wire), which a
replica at its ceiling spends in parallel with its own work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.swarm.load_shapes import Schedule
from loadtest.swarm.plan import SwarmPlan
from loadtest.swarm.tool_table import error_share, percentiles_ms

#: Seconds between readings of the replicas' time: a few inside each step.
REPLICA_READ_EVERY_S = 0.5
#: Steps whose busy time per round is the service time of a round near the knee: the step
#: that broke and the two before it.
KNEE_STEPS = 3
#: Seconds past the SLO's p95 a step's judgement waits after its end, for the answers of
#: its last calls to reach the master.
SETTLE_MARGIN_S = 0.25


@dataclass(frozen=True)
class CeilingSearch:
    """How the rate is stepped and what the SLO is."""

    rate_step_per_s: float
    step_s: float
    max_steps: int
    slo_p95_ms: float
    max_error_share: float
    #: Arrival streams of the first step: a search that starts near the knee rather than
    #: climb to it from a single stream spends its time where the ceiling is.
    first_streams: int = 1
    #: A step that breaks runs again at its rate; the SLO breaks when the repeat does too.
    confirm_breaks: bool = False

    def streams_of(self, step: int) -> int:
        """The arrival streams of step `step` (1 the first)."""
        return self.first_streams + step - 1

    def rate_of(self, step: int) -> float:
        """The rate of step `step` (1 the first)."""
        return round(self.rate_step_per_s * self.streams_of(step), 6)

    @property
    def settle_s(self) -> float:
        """Seconds after a step's end at which it is judged as the search runs: a call of
        the step not answered by then took longer than the SLO's p95 (at most half a step)."""
        return min(self.slo_p95_ms / 1e3 + SETTLE_MARGIN_S, self.step_s / 2)


class ReplicaTime(NamedTuple):
    """One reading of the replicas' time, summed over them (and their CPU workers): when
    (wall-clock s), their CPU seconds so far, and the seconds they waited for a CPU."""

    t: float
    cpu_s: float
    wait_s: float


def replica_busy(
    readings: list[ReplicaTime], calls: list[dict[str, Any]], begin: float, end: float
) -> dict[str, Any] | None:
    """The replicas' time between the first and last readings inside [begin, end): their
    CPU and busy seconds (CPU plus the wait for one), the rounds of the calls that ended
    there, and the busy share of that span (None without two readings or a round)."""
    inside = [r for r in readings if begin <= r.t < end]
    if len(inside) < 2:
        return None
    first, last = inside[0], inside[-1]
    rounds = sum(
        c.get("rounds", 0)
        for c in calls
        if first.t <= c["ended"] < last.t and c["outcome"] != "abandoned"
    )
    if rounds <= 0:
        return None
    cpu_s = last.cpu_s - first.cpu_s
    busy_s = cpu_s + last.wait_s - first.wait_s
    return {"span_s": last.t - first.t, "rounds": rounds, "cpu_s": cpu_s, "busy_s": busy_s}


def _per_round_ms(busy: dict[str, Any] | None) -> dict[str, float | None]:
    """A stretch's figures per round served, in ms, and its busy share."""
    if busy is None:
        return {"replica_cpu_ms_per_round": None, "replica_busy_ms_per_round": None,
                "replica_busy_share": None}  # fmt: skip
    return {
        "replica_cpu_ms_per_round": round(1e3 * busy["cpu_s"] / busy["rounds"], 3),
        "replica_busy_ms_per_round": round(1e3 * busy["busy_s"] / busy["rounds"], 3),
        "replica_busy_share": round(busy["busy_s"] / busy["span_s"], 3),
    }


def ceiling_search(config: LoadTestConfig, plan: SwarmPlan) -> CeilingSearch:
    """The ceiling's search: steps of `--rate` calls per second each from `--start-rate`,
    and the SLO."""
    if not config.rate_per_s:
        raise LoadTestError("--find-ceiling needs --rate: the calls per second each step adds")
    first_streams = 1
    if plan.start_rate is not None:
        first_streams = round(plan.start_rate / config.rate_per_s)
        whole = abs(first_streams * config.rate_per_s - plan.start_rate) <= 1e-6 * plan.start_rate
        if first_streams < 1 or not whole:
            raise LoadTestError(
                f"--start-rate {plan.start_rate:g} is not a whole number of --rate "
                f"{config.rate_per_s:g}: each step's arrivals are streams of --rate"
            )
    return CeilingSearch(
        rate_step_per_s=config.rate_per_s,
        step_s=plan.step_s,
        max_steps=plan.max_steps,
        slo_p95_ms=plan.slo_p95_ms,
        max_error_share=plan.max_error_share,
        first_streams=first_streams,
        confirm_breaks=plan.confirm_breaks,
    )


class RateSteps(Schedule):
    """Arrival streams of `rate_step_per_s` each, one more every `step_s`: `tick()` gives
    the streams of the current step, None after the last or once `broken()` says a step
    broke the SLO (with `confirm_breaks`, once a step and its repeat at the same rate both
    broke). A step is judged `settle_s` after its end, the rate held until then. `streams`
    holds each step's streams, the first step's first; `last_step` is the step the search
    ended with (the one that broke, or the last begun), `stopped_on_break` whether a break
    ended it."""

    def __init__(self, search: CeilingSearch, broken: Any = None) -> None:
        super().__init__()
        self.search = search
        self.broken = broken or (lambda step: False)
        self.judged = 0
        self.streams = [search.first_streams]
        self.last_step = 1
        self.stopped_on_break = False

    def step_at(self, t_s: float) -> int:
        return 1 + int(t_s // self.search.step_s)

    def tick(self) -> tuple[int, float] | None:
        now = self.get_run_time()
        settled = self.step_at(now - self.search.settle_s) - 1  # steps judged by now
        while not self.stopped_on_break and self.judged < settled:
            self._judge_next()
        step = self.step_at(now)
        if self.stopped_on_break or step > self.search.max_steps:
            return None
        self.last_step = step
        streams = self.streams[min(step, self.judged + 1) - 1]
        return streams, float(streams)

    def next_tick_s(self) -> float:
        """Seconds to the next step's start or the next judgement, whichever comes first."""
        now, step_s = self.get_run_time(), self.search.step_s
        to_step = step_s - now % step_s
        to_judgement = step_s - (now - self.search.settle_s) % step_s
        return min(to_step, to_judgement)

    def _judge_next(self) -> None:
        """Judge the step after the last judged, and choose the streams of the one after."""
        self.judged += 1
        ended = self.streams[self.judged - 1]
        if not self.broken(self.judged):
            self.streams.append(ended + 1)
            return
        repeat = self.judged >= 2 and self.streams[self.judged - 2] == ended
        if self.search.confirm_breaks and not repeat:
            self.streams.append(ended)  # once more at the same rate
        else:
            self.stopped_on_break = True
            self.last_step = self.judged


def step_figures(
    search: CeilingSearch,
    calls: list[dict[str, Any]],
    started: float,
    step: int,
    readings: list[ReplicaTime] | None = None,
    streams: int | None = None,
) -> dict[str, Any]:
    """One step's figures: its rate (of `streams` arrival streams, by default the step's
    without repeats), the calls that started in it and how they ended, their p95 latency
    and error share, and whether it held; with the replicas' `readings`, their CPU and busy
    time per round served in the step and their busy share."""
    begin = started + (step - 1) * search.step_s
    mine = [c for c in calls if begin <= c["started"] < begin + search.step_s]
    answered = [c for c in mine if c["outcome"] != "abandoned"]
    completed = [c for c in answered if c["outcome"] == "completed"]
    failed = sum(c["outcome"] == "failed" for c in answered)
    lost = sum(c["outcome"] == "lost" for c in answered)
    p95 = percentiles_ms([c["latency_ms"] for c in completed])["p95"]
    share = error_share(failed, lost, len(answered))
    row = {
        "step": step,
        "rate_per_s": search.rate_of(step)
        if streams is None
        else round(search.rate_step_per_s * streams, 6),
        "started": len(mine),
        "completed": len(completed),
        "failed": failed,
        "lost": lost,
        "p95_ms": p95,
        "error_share": share,
        # A step without a completed call holds on its errors alone: none was slow (a
        # low rate's few arrivals may all fall in the next step).
        "held": (p95 is None or p95 <= search.slo_p95_ms) and share <= search.max_error_share,
    }
    if readings is not None:
        end = begin + search.step_s
        row.update(_per_round_ms(replica_busy(readings, calls, begin, end)))
    return row


def known_broke(
    search: CeilingSearch, calls: list[dict[str, Any]], started: float, step: int
) -> bool:
    """Whether step `step` broke the SLO by the calls answered so far: the report's rule
    (`step_figures`) on what is known while the run goes on."""
    return not step_figures(search, calls, started, step)["held"]


def ceiling(
    search: CeilingSearch,
    calls: list[dict[str, Any]],
    started: float,
    steps: int,
    readings: list[ReplicaTime] | None = None,
    streams: list[int] | None = None,
    stopped_at_step: int | None = None,
) -> dict[str, Any]:
    """The search's outcome: each step run with its figures, and the ceiling, the rate of
    the last step that held before the first that broke (None when the first broke); with
    `confirm_breaks`, a step that broke and whose repeat at the same rate held
    (`unconfirmed_breaks`) does not end the search. `streams` are the steps' arrival
    streams as `RateSteps` ran them (by default one more each step), `stopped_at_step` the
    step whose break, as judged while the run went on, ended the search (None: it ran on).
    With the replicas' `readings`, the service time of a round on them: their busy time
    per round near the knee, over the step that broke and the `KNEE_STEPS` - 1 before it
    (the last steps, when none broke). A round's CPU drifts as a shared machine's other
    work comes and goes (22 to 37 ms within one search, seen): the ceiling is decided by
    what a round takes there, not by what it took at the first steps."""
    rows = [
        step_figures(search, calls, started, k, readings, streams[k - 1] if streams else None)
        for k in range(1, steps + 1)
    ]
    held = None
    before_break = len(rows)
    unconfirmed: list[int] = []
    for index, row in enumerate(rows):
        if row["held"]:
            held = row["rate_per_s"]
            continue
        if _repeat_held(search, rows, index):
            unconfirmed.append(row["step"])
            continue
        before_break = index
        break
    broke = rows[before_break]["step"] if before_break < len(rows) else None
    found: dict[str, Any] = {}
    if readings is not None:
        last = min(before_break, len(rows) - 1)
        first = max(last + 1 - KNEE_STEPS, 0)
        begin, end = (started + k * search.step_s for k in (first, last + 1))
        found = _per_round_ms(replica_busy(readings, calls, begin, end))
    return {
        **found,
        "ceiling_rate_per_s": held,
        "broke_at_step": broke,
        "search_stopped_at_step": stopped_at_step,
        "settle_s": search.settle_s,
        "unconfirmed_breaks": unconfirmed,
        "slo_p95_ms": search.slo_p95_ms,
        "max_error_share": search.max_error_share,
        "steps": rows,
    }


def _judgement_lines(found: dict[str, Any]) -> list[str]:
    """Where the search stopped, when that is not where the report finds the first break:
    the search judged each step by the answers it had `settle_s` after the step's end, and
    a call still running then may tip the step either way once it is answered."""
    broke, stopped = found.get("broke_at_step"), found.get("search_stopped_at_step")
    settle = f"{found.get('settle_s', 0):g} s"
    if broke is None and stopped is None:
        return ["no step broke the SLO: the ceiling is above the last rate tried (--max-steps)"]
    if broke is None:
        return [
            f"the search stopped at step {stopped}, broken by its calls answered within "
            f"{settle} of its end; with its later answers it held: the ceiling is at least "
            "the rate above"
        ]
    rows = found["steps"]
    repeated = broke < len(rows) and rows[broke]["rate_per_s"] == rows[broke - 1]["rate_per_s"]
    last = rows[-1]["step"]
    if last > broke + repeated:  # the break's repeat, when confirming, is the search's end
        return [
            f"step {broke} broke once its last calls were answered; judged {settle} after "
            f"its end it had held, and the search ran on to step {last}"
        ]
    return []


def _repeat_held(search: CeilingSearch, rows: list[dict[str, Any]], index: int) -> bool:
    """Whether the broken step `rows[index]` was run again at its rate to confirm the break
    (it was not itself such a repeat) and the repeat held: the break is not confirmed."""
    if not search.confirm_breaks or index + 1 >= len(rows):
        return False
    rate = rows[index]["rate_per_s"]
    itself_a_repeat = index >= 1 and rows[index - 1]["rate_per_s"] == rate
    repeat = rows[index + 1]
    return repeat["rate_per_s"] == rate and not itself_a_repeat and repeat["held"]


def ceiling_lines(found: dict[str, Any]) -> list[str]:
    """The search as lines to print: a row per step (with the replicas' busy time per round
    and busy share when they were read), then the ceiling and the simulation's."""
    metered = any(row.get("replica_busy_ms_per_round") is not None for row in found["steps"])
    head = f"{'step':>4} {'rate/s':>8} {'calls':>6} {'done':>6} {'errors':>7} {'p95 ms':>8}  held"
    lines = [head + ("  busy ms/round  busy share" if metered else "")]
    for row in found["steps"]:
        p95 = "-" if row["p95_ms"] is None else f"{row['p95_ms']:.1f}"
        line = (
            f"{row['step']:>4} {row['rate_per_s']:>8g} {row['started']:>6} {row['completed']:>6} "
            f"{row['error_share']:>7.3f} {p95:>8}  {'yes' if row['held'] else 'no ':<4}"
        )
        if metered:
            busy, share = row.get("replica_busy_ms_per_round"), row.get("replica_busy_share")
            line += f" {'-' if busy is None else f'{busy:.2f}':>14} "
            line += f"{'-' if share is None else f'{share:.2f}':>11}"
        lines.append(line.rstrip())
    if found.get("unconfirmed_breaks"):
        once = ", ".join(str(step) for step in found["unconfirmed_breaks"])
        lines.append(f"broke once and held when run again at its rate (not the ceiling): {once}")
    slo = f"p95 <= {found['slo_p95_ms']:g} ms, errors <= {found['max_error_share']:g}"
    rate = found["ceiling_rate_per_s"]
    lines.append(
        f"ceiling: {rate:g} calls/s ({slo})"
        if rate is not None
        else f"ceiling: none; the first step broke ({slo})"
    )
    lines += _judgement_lines(found)
    if found.get("replica_busy_ms_per_round") is not None:
        where = (
            f"the last {KNEE_STEPS} steps, none broke"
            if found.get("broke_at_step") is None
            else f"near the knee: the step that broke and the {KNEE_STEPS - 1} before it"
        )
        lines.append(
            f"replicas: {found['replica_busy_ms_per_round']:g} ms busy per round, "
            f"{found['replica_cpu_ms_per_round']:g} ms of it on a CPU ({where})"
        )
    if found.get("prediction_error"):
        lines.append(f"simulation: no ceiling: {found['prediction_error']}")
    elif found.get("predicted_steps") and found.get("predicted_ceiling_rate_per_s") is None:
        lines.append("simulation: the same replicas miss the SLO from the first rate")
    if found.get("predicted_ceiling_rate_per_s") is not None:
        round_ms = found.get("predicted_round_ms")
        lines.append(
            "simulation: the same replicas meet the SLO up to "
            f"{found['predicted_ceiling_rate_per_s']:g} calls/s"
            + (
                f" (a round of {round_ms:g} ms, {found['predicted_round_from']})"
                if round_ms
                else ""
            )
        )
    return lines
