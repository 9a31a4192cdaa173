"""The Lab chart's series and the failures explained: which errors came during which fault,
and why, in words."""

from __future__ import annotations

from loadtest.labtab.series import REPORT_LAG_S, LabSeries, Load, Totals, error_text
from loadtest.labtab.tab import explain_errors
from loadtest.swarm.event_log import fault_spans
from loadtest.swarm.failure_reasons import UNEXPLAINED, explain, reason
from loadtest.swarm.locust_stats import ANSWER_POST, ROUND_1, SESSION, SSE_CALL, TASK_POLL

ANSWERS = (ANSWER_POST, "JSON-RPC -32600")
RESETS = (ROUND_1, "HTTP 0")


def totals(errors: dict[tuple[str, str], int], requests: int = 1000) -> Totals:
    return Totals({}, {}, errors, {ANSWER_POST: requests, ROUND_1: requests})


def test_locusts_error_reads_as_its_message() -> None:
    assert error_text("CatchResponseError('JSON-RPC -32600')") == "JSON-RPC -32600"
    assert error_text('CatchResponseError("HTTP 503")') == "HTTP 503"
    assert error_text("ConnectionResetError(104, 'reset')") == "ConnectionResetError(104, 'reset')"


def test_failures_are_explained_by_the_fault_they_came_in() -> None:
    events = [
        {"t": 100.0, "event": "upgrade start", "drain_timeout_s": 2.0},
        {"t": 110.0, "event": "upgrade done"},
    ]
    series = LabSeries()
    series.sample(99.0, totals({}), Load(held=20, in_flight=20))
    series.sample(104.0, totals({ANSWERS: 20}), Load(held=14, in_flight=15))
    # Reported by a worker a few seconds after the upgrade ended: still the upgrade's.
    series.sample(110.0 + REPORT_LAG_S - 1, totals({ANSWERS: 30, RESETS: 2}), None)
    series.sample(160.0, totals({ANSWERS: 30, RESETS: 5}), Load(held=20, in_flight=20))

    explained = series.failures_explained(totals({ANSWERS: 30, RESETS: 5}), fault_spans(events), 0)
    answers, resets = explained
    assert (answers["kind"], answers["count"], answers["requests"]) == (ANSWER_POST, 30, 1000)
    assert answers["why"].startswith("during the rolling upgrade (00:01:40-00:01:50): ")
    assert "drain timeout" in answers["why"]
    assert answers["sentence"].startswith(
        "3.0% of answer post requests failed (30 of 1,000) with JSON-RPC -32600 during"
    )
    # Two resets during the upgrade, three long after it: most came with no fault.
    assert resets["why"] == reason(ROUND_1, None, "HTTP 0")
    assert [held for _, held, _ in series.load_json()] == [20, 14, 20]


def test_a_reset_of_locusts_statistics_starts_the_errors_again() -> None:
    series = LabSeries()
    series.sample(1.0, totals({ANSWERS: 7}), None)
    series.sample(2.0, totals({}), None)
    series.sample(3.0, totals({ANSWERS: 1}), None)
    assert series.error_times == {ANSWERS: [(3.0, 1)]}


def test_traffic_is_each_whole_second_the_master_has_heard_of() -> None:
    counts = Totals({100: 40, 101: 55, 103: 38, 109: 60}, {101: 2}, {}, {})
    rows = LabSeries().traffic(counts, now_s=103.5 + REPORT_LAG_S)
    assert rows == [
        [100_000, 40, 0],
        [101_000, 55, 2],
        [102_000, 0, 0],
        [103_000, 38, 0],
    ]


def test_a_reason_follows_from_the_round_kind_and_the_fault() -> None:
    assert "drain timeout" in reason(ANSWER_POST, "rolling-upgrade")
    assert "crashed replica" in reason(ANSWER_POST, "crash")
    assert reason(SSE_CALL, "store-outage") == reason(SSE_CALL, "redis-outage")
    assert reason(TASK_POLL, "restart") == reason(TASK_POLL, "crash")
    assert "new session" in reason(SESSION, "rolling-upgrade")
    assert "per-principal cap" in reason(ROUND_1, None, "HTTP 429")
    assert reason(ROUND_1, None) == "with no fault under way: " + UNEXPLAINED
    assert reason("ping", "crash") == UNEXPLAINED
    assert explain(SSE_CALL, 3, 200, fault="crash", during="the r2 down") == (
        f"1.5% of sse call requests failed (3 of 200) during the r2 down: "
        f"{reason(SSE_CALL, 'crash')}"
    )


def test_locusts_failures_tab_shows_each_error_with_its_reason() -> None:
    errors = [
        {"method": "POST", "name": ANSWER_POST, "error": "CatchResponseError('JSON-RPC -32600')"},
        {"method": "POST", "name": ROUND_1, "error": "CatchResponseError('HTTP 418')"},
    ]
    explained = [{"kind": ANSWER_POST, "error": "JSON-RPC -32600", "why": "during x: y"}]
    explain_errors(errors, explained)
    assert [e["error"] for e in errors] == [
        "JSON-RPC -32600 (during x: y)",
        "CatchResponseError('HTTP 418')",  # no reason known: left as Locust said it
    ]
