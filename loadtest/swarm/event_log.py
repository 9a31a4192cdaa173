"""The cluster's event log as people read it: each event in words, each fault a span of time.

The cluster (`loadtest.harness.cluster`) and the rolling upgrade log what happened with its
wall-clock time (`time.time()`) and a few details, for programs: `{"event": "stop",
"replica": "r1", "still_held": 21, "drained_s": 2.102}`. The Lab tab, its chart and the
terminal summaries tell the same events in words ("r1 stopped after 2.10 s of draining:
the drain timeout ran out with 21 requests still being served there, cut") and draw each
fault as a span from its first event to its last (a rolling upgrade from `upgrade start` to
`upgrade done`, a crash until its replica is restarted, a store outage until the store is
up), on the wall clock Locust's charts use.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

#: Faults, by the event that starts them: (their name in `loadtest.config.FAULTS` or
#: `SCENARIOS`, the event that ends them).
_SPANS = {
    "upgrade start": ("rolling-upgrade", "upgrade done"),
    "crash": ("crash", "restarted"),
    "store down": ("redis-outage", "store up"),
}
#: Events marked inside a fault's span (a step of it), by the event that starts the span.
_STEPS = {"upgrade start": ("drain", "stop", "ready")}
#: Settings in force from an instant to the end of the run, by their event: their scenario.
_SETTINGS = {"overload": "overload", "idle timeout": "idle-timeout"}


def clock(t_s: float, utc_offset_min: int | None = None) -> str:
    """`t_s` (seconds since the epoch) as HH:MM:SS, the way Locust's charts label time.

    The charts show the browser's local time; `utc_offset_min` is the browser's offset
    from UTC (what JavaScript's `-getTimezoneOffset()` gives); without it, this machine's.
    """
    if utc_offset_min is None:
        return time.strftime("%H:%M:%S", time.localtime(t_s))
    return time.strftime("%H:%M:%S", time.gmtime(t_s + 60 * utc_offset_min))


def _seconds(value: Any) -> str:
    return f"{float(value):.2f} s" if value is not None else "? s"


def in_words(event: dict[str, Any]) -> str:
    """One event of the cluster's log as a sentence."""
    name = event.get("event", "?")
    replica = event.get("replica", "a replica")
    if name == "cluster up":
        replicas = ", ".join(event.get("replicas", []))
        return f"cluster up: {replicas} behind HAProxy on port {event.get('lb_port')}"
    if name == "redis up":
        kept = "with its append-only file" if event.get("persistent") else "without a file"
        return f"Redis up on port {event.get('port')}, {kept}"
    if name == "upgrade start":
        timeout = f"{float(event.get('drain_timeout_s') or 0):g} s"
        return (
            f"rolling upgrade started: each replica in turn drained for up to {timeout}, "
            "stopped, and replaced by the next tool version with rotated keys"
        )
    if name == "drain":
        return f"{replica} draining: HAProxy sends it no new sessions (sticky users still reach it)"
    if name == "stop":
        still = int(event.get("still_held") or 0)
        after = _seconds(event.get("drained_s"))
        if still:
            return (
                f"{replica} stopped after {after} of draining: the drain timeout ran out with "
                f"{still} requests still being served there (held streams among them), cut"
            )
        return f"{replica} stopped after {after} of draining: it held nothing"
    if name == "ready":
        return f"{replica} back in rotation with tool version {event.get('tool_version')}"
    if name == "upgrade done":
        return "rolling upgrade done: every replica runs the new version"
    if name == "crash":
        return f"{replica} killed (SIGKILL): its connections and whatever it held are gone"
    if name == "restarted":
        return f"{replica} started again"
    if name == "store down":
        kept = (
            "its append-only file keeps what it acknowledged"
            if event.get("persistent")
            else "without a file, it comes back empty"
        )
        return f"Redis killed (SIGKILL): {kept}"
    if name == "store up":
        return "Redis back up"
    if name == "fault failed":
        return f"the {event.get('fault')} failed: {event.get('error')}"
    if name == "overload":
        return (
            f"overload: {event.get('users')} users calling crunch; a replica sheds above "
            f"{event.get('shed_in_flight')} requests in flight"
        )
    if name == "idle timeout":
        return (
            f"HAProxy cuts connections idle for {_seconds(event.get('timeout_s'))} for the "
            "whole run; SSE keep-alive comments off"
        )
    if name == "target":
        return f"driving {event.get('url')}: faults come from its operator"
    details = ", ".join(f"{k} {v}" for k, v in event.items() if k not in ("t", "event"))
    return f"{name}: {details}" if details else str(name)


@dataclass
class FaultSpan:
    """A fault from its first event to its last (None while it lasts), with its steps."""

    fault: str
    #: What the chart writes on the span ("r2 down").
    label: str
    start_s: float
    end_s: float | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    #: The fault in a sentence ("the crash of r2").
    said: str = ""

    def covers(self, t_s: float, *, after_s: float = 0.0, now_s: float | None = None) -> bool:
        """Whether `t_s` falls in the span, or within `after_s` of its end."""
        end = self.end_s if self.end_s is not None else (now_s if now_s is not None else t_s)
        return self.start_s <= t_s <= end + after_s

    def as_json(self) -> dict[str, Any]:
        """For the Lab chart: times in epoch milliseconds, as JavaScript's `Date` takes them."""
        return {
            "fault": self.fault,
            "label": self.label,
            "start_ms": round(self.start_s * 1000),
            "end_ms": None if self.end_s is None else round(self.end_s * 1000),
            "steps": [
                {"t_ms": round(step["t"] * 1000), "label": _step_label(step)} for step in self.steps
            ],
        }


def _step_label(step: dict[str, Any]) -> str:
    return f"{step.get('replica', '')} {step['event']}".strip()


def _label(event: dict[str, Any]) -> tuple[str, str]:
    """What the chart writes on a fault's span, and the fault in a sentence."""
    if event["event"] == "upgrade start":
        return "rolling upgrade", "the rolling upgrade"
    if event["event"] == "crash":
        return f"{event.get('replica')} down", f"the crash of {event.get('replica')}"
    if event["event"] == "store down":
        return "Redis down", "the Redis outage"
    return str(event["event"]), f"the {event['event']}"


def fault_spans(events: list[dict[str, Any]]) -> list[FaultSpan]:
    """The faults of an event log, in order; a fault still going on has no end."""
    spans: list[FaultSpan] = []
    open_spans: dict[tuple[str, Any], tuple[FaultSpan, str]] = {}
    for event in events:
        name = str(event.get("event"))
        if name in _SPANS:
            fault, ender = _SPANS[name]
            label, said = _label(event)
            span = FaultSpan(fault, label, event["t"], said=said)
            spans.append(span)
            open_spans[(ender, event.get("replica"))] = (span, name)
        elif name in _SETTINGS:
            label, said = _label(event)
            spans.append(FaultSpan(_SETTINGS[name], label, event["t"], said=said))
        elif (name, event.get("replica")) in open_spans:
            span, _ = open_spans.pop((name, event.get("replica")))
            span.end_s = event["t"]
        elif name == "fault failed":
            for key, (span, _) in list(open_spans.items()):
                if span.fault == event.get("fault"):
                    span.end_s = event["t"]
                    del open_spans[key]
        for span, starter in open_spans.values():
            if name in _STEPS.get(starter, ()):
                span.steps.append(event)
    return spans


def fault_during(
    spans: list[FaultSpan], counts: list[tuple[float, int]], after_s: float
) -> FaultSpan | None:
    """The fault more than half of `counts` (`(time, how many)` pairs) fell in, or within
    `after_s` after its end; None when no fault had most of them."""
    best, most = None, 0
    for span in spans:
        hits = sum(n for t, n in counts if span.covers(t, after_s=after_s))
        if hits > most:
            best, most = span, hits
    return best if 2 * most > sum(n for _, n in counts) else None
