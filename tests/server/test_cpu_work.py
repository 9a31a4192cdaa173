"""CPU-heavy tool work never blocks the event loop, and each caller's share of it is capped.

`quote`'s big `cpu_ms` and `crunch`'s many units run in the replica's worker processes,
slice by slice: the health check answers within HAProxy's check timeout meanwhile, the
answers are the same, sizes beyond the tools' caps are refused naming the cap, and one
principal runs only so many such calls at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from server.app import create_app
from server.client import Handlers, McpError, MrtrClient, accept
from server.harness.process import ServerProcess
from server.protocol.jsonrpc import INVALID_PARAMS
from server.tools.crunch import CRUNCH_MAX_UNITS, crunch_start, crunch_units
from server.tools.quote import QUOTE_MAX_CPU_MS
from tests.server.conftest import make_config
from tests.server.tasks_fixtures import start_replica, token
from tests.server.test_safe_defaults import DEFAULT

#: HAProxy's health-check timeout in the lab's cluster: a slower /healthz marks a replica down.
CHECK_TIMEOUT_S = 2.0
ANSWER = Handlers(elicit=lambda params: accept(name="octocat"))
#: The server's own bound on CPU work kept on the loop (the tests' configuration raises it).
DEFAULT_INLINE_MAX_MS = DEFAULT["cpu_inline_max_ms"]


@pytest.fixture(scope="module")
def replica() -> Iterator[ServerProcess]:
    process = start_replica("--max-cpu-calls-per-principal", "2", "--rate-per-principal", "0")
    yield process
    process.stop()


def quote_round(url: str, principal: str, cpu_ms: float = QUOTE_MAX_CPU_MS) -> MrtrClient:
    """A client of `principal` whose first quote round (the pricing) has been answered."""
    with MrtrClient(url, token=token(principal), handlers=ANSWER) as client:
        done = client.call_tool("quote", {"cpu_ms": cpu_ms})
        assert "octocat" in done.text
        return client


@pytest.mark.integration
def test_healthz_answers_within_the_check_timeout_while_four_big_quotes_run(
    replica: ServerProcess,
) -> None:
    with ThreadPoolExecutor(4) as pool:
        quotes = [pool.submit(quote_round, replica.url, f"buyer-{i % 2}") for i in range(4)]
        checks_s: list[float] = []
        with httpx.Client(timeout=30) as http:
            while not all(q.done() for q in quotes):
                started = time.monotonic()
                assert http.get(f"{replica.base_url}/healthz").status_code == 200
                checks_s.append(time.monotonic() - started)
                time.sleep(0.02)
        for finished in quotes:
            finished.result()  # every quote priced both rounds and answered
    assert len(checks_s) > 20  # the checks ran while the quotes did (two rounds of 1 s)
    assert max(checks_s) < CHECK_TIMEOUT_S / 4


@pytest.mark.integration
def test_a_principal_beyond_its_cpu_cap_gets_429_and_others_are_served(
    replica: ServerProcess,
) -> None:
    with ThreadPoolExecutor(2) as pool:
        running = [pool.submit(quote_round, replica.url, "greedy") for _ in range(2)]
        time.sleep(0.3)  # both in the workers
        with (
            MrtrClient(replica.url, token=token("greedy"), handlers=ANSWER) as greedy,
            pytest.raises(McpError) as refused,
        ):
            greedy.call_tool("quote", {"cpu_ms": 500})
        assert "at most 2" in refused.value.message
        served = quote_round(replica.url, "modest", cpu_ms=200)
        assert served is not None
        for call in running:
            call.result()


@pytest.mark.integration
def test_sizes_beyond_the_caps_are_invalid_params_naming_the_cap(replica: ServerProcess) -> None:
    with MrtrClient(replica.url, token=token("big"), handlers=ANSWER) as client:
        for name, arguments, cap in [
            ("quote", {"cpu_ms": QUOTE_MAX_CPU_MS + 1}, QUOTE_MAX_CPU_MS),
            ("crunch", {"units": CRUNCH_MAX_UNITS + 1}, CRUNCH_MAX_UNITS),
        ]:
            with pytest.raises(McpError) as refused:
                client.call_tool(name, arguments)
            assert refused.value.code == INVALID_PARAMS
            assert f"maximum of {cap}" in refused.value.message


@pytest.mark.integration
def test_a_crunch_in_the_workers_keeps_its_digest(replica: ServerProcess) -> None:
    units = 100_000  # far more than the loop keeps for itself
    with MrtrClient(replica.url, token=token("hasher")) as client:
        done = client.call_tool("crunch", {"units": units})
    assert len(done.rounds) == 1
    assert done.result["structuredContent"]["digest"] == crunch_units(crunch_start(), 0, units)


@pytest.mark.integration
def test_a_crunch_in_the_workers_sheds_at_the_same_units_with_the_same_digest() -> None:
    units, every = 100_000, 30_000
    shedding = start_replica("--shed-every-units", str(every))
    try:
        with MrtrClient(shedding.url, token=token("hasher")) as client:
            done = client.call_tool("crunch", {"units": units})
    finally:
        shedding.stop()
    # Offloaded at 30k, 60k and 90k units, finished on the fourth round.
    assert len(done.rounds) == 4
    assert done.result["structuredContent"]["digest"] == crunch_units(crunch_start(), 0, units)


def test_a_small_quote_stays_on_the_loop() -> None:
    app = create_app(make_config(cpu_inline_max_ms=DEFAULT_INLINE_MAX_MS))
    with MrtrClient.for_app(app, handlers=ANSWER) as client:
        client.call_tool("quote", {"cpu_ms": 0.1})
    assert not app.state.server.cpu.started  # no worker process was needed


def test_a_crunch_shed_in_small_slices_hashes_each_slice_on_the_loop() -> None:
    # 2,000 units (about 1 ms, four times what the loop keeps), moved every 400: each
    # attempt hashes 400 units (0.2 ms), less than a worker's round trip would cost.
    app = create_app(make_config(cpu_inline_max_ms=DEFAULT_INLINE_MAX_MS, shed_every_units=400))
    try:
        with MrtrClient.for_app(app, handlers=ANSWER) as client:
            done = client.call_tool("crunch", {"units": 2000})
    finally:
        started = app.state.server.cpu.started
        app.state.server.cpu.close()
    assert not started
    assert len(done.rounds) == 5
    assert done.result["structuredContent"]["digest"] == crunch_units(crunch_start(), 0, 2000)


@pytest.mark.integration
def test_a_quote_of_ten_milliseconds_runs_in_the_workers() -> None:
    # Well above the quarter millisecond the loop keeps by default: at a caller's full
    # rate, 10 ms on the loop per call is time every other request waits.
    app = create_app(make_config(cpu_inline_max_ms=DEFAULT_INLINE_MAX_MS))
    try:
        with MrtrClient.for_app(app, handlers=ANSWER) as client:
            assert "octocat" in client.call_tool("quote", {"cpu_ms": 10}).text
            assert app.state.server.cpu.started
    finally:
        app.state.server.cpu.close()


@pytest.mark.parametrize(
    ("name", "arguments"), [("crunch", {"units": 100.0}), ("crunch", {"units": 1e3})]
)
def test_a_count_written_as_a_float_is_invalid_params_not_a_crash(
    name: str, arguments: dict
) -> None:
    app = create_app(make_config())
    with MrtrClient.for_app(app, handlers=ANSWER) as client:
        with pytest.raises(McpError) as refused:
            client.call_tool(name, arguments)
        assert refused.value.code == INVALID_PARAMS
        assert "arguments.units" in refused.value.message
        assert "is not an integer" in refused.value.message
        # The same count written as an integer is served.
        done = client.call_tool(name, {"units": 100})
        assert done.result["structuredContent"]["digest"] == crunch_units(crunch_start(), 0, 100)
