"""The cluster's event log read by people: events in words, faults as spans of time."""

from __future__ import annotations

from typing import Any

from loadtest.swarm.event_log import clock, fault_during, fault_spans, in_words


def event(t: float, name: str, **details: Any) -> dict[str, Any]:
    return {"t": t, "event": name, **details}


UPGRADE = [
    event(1.0, "cluster up", replicas=["r1", "r2"], lb_port=8080),
    event(10.0, "upgrade start", drain_timeout_s=2.0),
    event(10.0, "drain", replica="r1"),
    event(12.1, "stop", replica="r1", still_held=21, drained_s=2.1),
    event(14.0, "ready", replica="r1", tool_version=2),
    event(14.0, "drain", replica="r2"),
    event(14.04, "stop", replica="r2", still_held=0, drained_s=0.04),
    event(15.0, "ready", replica="r2", tool_version=2),
    event(15.0, "upgrade done"),
]


def test_a_rolling_upgrade_is_one_span_from_its_start_to_done_with_its_steps() -> None:
    (span,) = fault_spans(UPGRADE)
    assert (span.fault, span.label, span.start_s, span.end_s) == (
        "rolling-upgrade",
        "rolling upgrade",
        10.0,
        15.0,
    )
    assert [(s["event"], s.get("replica")) for s in span.steps] == [
        ("drain", "r1"),
        ("stop", "r1"),
        ("ready", "r1"),
        ("drain", "r2"),
        ("stop", "r2"),
        ("ready", "r2"),
    ]
    assert span.as_json()["steps"][1] == {"t_ms": 12100, "label": "r1 stop"}


def test_a_crash_lasts_until_its_replica_is_back_and_an_outage_until_the_store_is() -> None:
    log = [
        event(5.0, "crash", replica="r2"),
        event(5.5, "store down", persistent=True),
        event(6.0, "restarted", replica="r1"),  # another replica: the crash goes on
        event(7.0, "store up"),
        event(7.6, "restarted", replica="r2"),
        event(9.0, "crash", replica="r1"),
    ]
    spans = fault_spans(log)
    assert [(s.label, s.start_s, s.end_s) for s in spans] == [
        ("r2 down", 5.0, 7.6),
        ("Redis down", 5.5, 7.0),
        ("r1 down", 9.0, None),
    ]
    assert [s.said for s in spans[:2]] == ["the crash of r2", "the Redis outage"]


def test_a_setting_in_force_spans_the_rest_of_the_run_and_a_failed_fault_ends() -> None:
    log = [
        event(0.0, "idle timeout", timeout_s=1.0, keepalive="off"),
        event(3.0, "upgrade start", drain_timeout_s=2.0),
        event(4.0, "fault failed", fault="rolling-upgrade", error="TimeoutError: r1 not UP"),
    ]
    idle, upgrade = fault_spans(log)
    assert (idle.fault, idle.end_s) == ("idle-timeout", None)
    assert idle.covers(500.0)
    assert (upgrade.fault, upgrade.end_s) == ("rolling-upgrade", 4.0)


def test_events_read_as_sentences_with_what_a_drain_left_behind() -> None:
    said = [in_words(e) for e in UPGRADE]
    assert said[0] == "cluster up: r1, r2 behind HAProxy on port 8080"
    assert "drained for up to 2 s" in said[1]
    assert said[3].startswith("r1 stopped after 2.10 s of draining")
    assert "21 requests still being served" in said[3]
    assert said[6] == "r2 stopped after 0.04 s of draining: it held nothing"
    assert said[7] == "r2 back in rotation with tool version 2"
    assert in_words(event(0, "store down", persistent=False)).endswith("comes back empty")
    # An event the log does not know yet is still told, with its details.
    assert in_words(event(0, "attack", attack="slow-body", sockets=40)) == (
        "attack: attack slow-body, sockets 40"
    )


def test_the_clock_is_the_browsers_when_it_gives_its_offset() -> None:
    assert clock(0.0, 0) == "00:00:00"
    assert clock(0.0, 90) == "01:30:00"
    assert clock(3600.0, -75) == "23:45:00"


def test_errors_belong_to_the_fault_most_of_them_came_in_or_just_after() -> None:
    spans = fault_spans([*UPGRADE, event(30.0, "crash", replica="r1")])
    # Two errors during the upgrade, three reported within the lag after it ended.
    assert fault_during(spans, [(11.0, 2), (18.0, 3)], after_s=5.0) is spans[0]
    assert fault_during(spans, [(11.0, 1), (31.0, 4)], after_s=5.0) is spans[1]
    assert fault_during(spans, [(25.0, 9)], after_s=5.0) is None
