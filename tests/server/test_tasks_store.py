"""The task store: one behaviour in memory and in Redis; a failing store is an error, not a hang."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator

import pytest

from server.core.store import StoreUnavailable
from server.harness.process import free_port
from server.tasks.redis_store import STORE_CONNECTIONS, RedisTaskStore
from server.tasks.store import WORKING, TaskRecord, TaskStore, TooManyTasks, now_ms
from server.tasks.store_choice import open_task_store
from server.tasks.worker import sweep_periodically
from tests.server.probes import metric
from tests.server.tasks_fixtures import RpcFailed, Wire, redis_server, redis_url, running_replicas

__all__ = ["redis_url"]  # a fixture, used below


def record(task_id: str, principal: str = "alice", ttl_ms: int = 60_000) -> TaskRecord:
    created = now_ms()
    return TaskRecord(
        task_id=task_id,
        principal=principal,
        tool="echo",
        arguments={},
        client_capabilities={"tasks": {}},
        status=WORKING,
        created_at_ms=created,
        updated_at_ms=created,
        ttl_ms=ttl_ms,
        poll_interval_ms=100,
        status_message="Task created.",
    )


@pytest.fixture(params=["memory", "redis"])
def with_store(request: pytest.FixtureRequest) -> Callable[..., None]:
    """Run `scenario(store)` against a fresh store of each kind."""
    url = request.getfixturevalue("redis_url") if request.param == "redis" else None

    def run(scenario: Callable[[TaskStore], Awaitable[None]]) -> None:
        async def main() -> None:
            # A key prefix of its own, so tests sharing one Redis do not see each other.
            store = (
                RedisTaskStore(url, timeout_s=1.0, prefix=f"test-{uuid.uuid4()}")
                if url
                else open_task_store("memory", timeout_s=1.0, max_memory_bytes=1 << 24)
            )
            try:
                await scenario(store)
            finally:
                await store.close()

        asyncio.run(main())

    return run


def test_a_created_task_reads_back_as_it_was(with_store: Callable[..., None]) -> None:
    async def scenario(store: TaskStore) -> None:
        original = record("read-back")
        original.answers = {"echo_input": {"action": "accept", "content": {"input": "é ✓"}}}
        await store.create(original)
        assert await store.get("read-back") == original
        assert await store.get("never-created") is None

    with_store(scenario)


def test_an_update_saves_the_change_and_counts_the_version(
    with_store: Callable[..., None],
) -> None:
    async def scenario(store: TaskStore) -> None:
        await store.create(record("versioned"))

        def to_input_required(task: TaskRecord) -> bool:
            task.touch("input_required", "waiting")
            return True

        stored, saved = await store.update("versioned", to_input_required)
        assert saved and stored is not None and stored.version == 1
        again = await store.get("versioned")
        assert again is not None
        assert (again.status, again.status_message, again.version) == (
            "input_required",
            "waiting",
            1,
        )
        unchanged, saved = await store.update("versioned", lambda task: False)
        assert not saved and unchanged == again
        assert await store.update("never-created", to_input_required) == (None, False)

    with_store(scenario)


def test_concurrent_updates_are_all_kept(with_store: Callable[..., None]) -> None:
    async def scenario(store: TaskStore) -> None:
        await store.create(record("contended"))

        def add(mark: int) -> Callable[[TaskRecord], bool]:
            def change(task: TaskRecord) -> bool:
                task.tool_state.setdefault("marks", []).append(mark)
                return True

            return change

        await asyncio.gather(*(store.update("contended", add(i)) for i in range(25)))
        final = await store.get("contended")
        assert final is not None
        assert sorted(final.tool_state["marks"]) == list(range(25))  # no write was lost
        assert final.version == 25

    with_store(scenario)


def test_a_principals_list_holds_only_their_live_tasks_oldest_first(
    with_store: Callable[..., None],
) -> None:
    async def scenario(store: TaskStore) -> None:
        await store.create(record("alice-1"))
        await store.create(record("bob-1", principal="bob"))
        await store.create(record("alice-short", ttl_ms=50))
        await asyncio.sleep(0.002)
        await store.create(record("alice-2"))
        await asyncio.sleep(0.1)
        assert [r.task_id for r in await store.list_for("alice")] == ["alice-1", "alice-2"]
        assert [r.task_id for r in await store.list_for("bob")] == ["bob-1"]
        assert await store.list_for("nobody") == []

    with_store(scenario)


def test_an_expired_task_is_gone(with_store: Callable[..., None]) -> None:
    async def scenario(store: TaskStore) -> None:
        await store.create(record("brief", ttl_ms=100))
        assert await store.get("brief") is not None
        await asyncio.sleep(0.15)
        assert await store.get("brief") is None
        assert await store.update("brief", lambda task: True) == (None, False)

    with_store(scenario)


def test_the_background_sweep_removes_expired_tasks_from_memory() -> None:
    async def scenario() -> None:
        store = open_task_store("memory", timeout_s=1.0, max_memory_bytes=1 << 24)
        await store.create(record("short-1", ttl_ms=50))
        await store.create(record("short-2", ttl_ms=50))
        await store.create(record("long", ttl_ms=60_000))
        sweeper = asyncio.create_task(sweep_periodically(store, 0.05))
        await asyncio.sleep(0.3)
        sweeper.cancel()
        assert await store.sweep() == 0  # the background sweep already took both
        assert [r.task_id for r in await store.list_for("alice")] == ["long"]

    asyncio.run(scenario())


@pytest.mark.integration
def test_redis_expires_each_task_key_with_its_ttl(redis_url: str) -> None:
    async def scenario() -> None:
        store = RedisTaskStore(redis_url, timeout_s=1.0)
        try:
            await store.create(record("expiring", ttl_ms=30_000))
            pttl = await store._redis.pttl(store._task_key("expiring"))
            assert 25_000 < pttl <= 30_000
        finally:
            await store.close()

    asyncio.run(scenario())


@pytest.mark.integration
def test_many_reads_at_once_share_the_replicas_few_connections_to_redis(redis_url: str) -> None:
    """Hundreds of waits reading the store at once (the many principals' attack) are served
    over `STORE_CONNECTIONS` connections at most, each read answered."""

    async def scenario() -> None:
        store = RedisTaskStore(redis_url, timeout_s=2.0, prefix=f"test-{uuid.uuid4()}")
        try:
            await store.create(record("shared"))
            before = (await store._redis.info("clients"))["connected_clients"]
            found = await asyncio.gather(*(store.get("shared") for _ in range(400)))
            assert all(r is not None and r.task_id == "shared" for r in found)
            after = (await store._redis.info("clients"))["connected_clients"]
            assert after - before < STORE_CONNECTIONS, (before, after)
        finally:
            await store.close()
        # Closed, the store lets go of its connections (this client counts itself).
        onlooker = RedisTaskStore(redis_url, timeout_s=2.0)
        try:
            left = (await onlooker._redis.info("clients"))["connected_clients"]
            assert left <= before, (before, left)
        finally:
            await onlooker.close()

    asyncio.run(scenario())


def test_an_unreachable_redis_is_an_error_within_the_timeout() -> None:
    async def scenario() -> None:
        store = RedisTaskStore(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.3)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await store.get("anything")
        assert time.monotonic() - started < 1.0
        await store.close()

    asyncio.run(scenario())


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung store)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def test_a_redis_that_never_answers_is_an_error_within_the_timeout(silent_port: int) -> None:
    async def scenario() -> None:
        store = RedisTaskStore(f"redis://127.0.0.1:{silent_port}/0", timeout_s=0.3)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await store.create(record("into-the-void"))
        assert time.monotonic() - started < 1.5
        await store.close()

    asyncio.run(scenario())


@pytest.mark.integration
def test_a_store_outage_reaches_the_client_as_a_json_rpc_error() -> None:
    with (
        redis_server() as redis,
        running_replicas(1, "--task-store", redis.url) as (replica,),
    ):
        wire = Wire([replica.url])
        task_id = wire("tools/call", {"name": "echo", "task": {"ttl": 60000}})["task"]["taskId"]
        wire.poll(task_id, {"input_required"})
        redis.kill()
        for method, params in [
            ("tasks/get", {"taskId": task_id}),
            ("tools/call", {"name": "echo", "task": {"ttl": 60000}}),
        ]:
            started = time.monotonic()
            with pytest.raises(RpcFailed) as failed:
                wire(method, params)
            assert time.monotonic() - started < 3.0, method  # bounded by the store timeout
            assert failed.value.code == -32603, method
            assert failed.value.http_status == 503, method
            assert failed.value.message.startswith("Task store error"), method
        errors = 'mcp_task_store_errors_total{operation="%s"}'
        assert metric(replica.base_url, errors % "get") >= 1
        assert metric(replica.base_url, errors % "create") >= 1
        assert metric(replica.base_url, errors % "list") == 0


def test_a_list_page_parses_only_its_own_tasks_however_many_the_principal_has(
    with_store: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    from_json = TaskRecord.from_json.__func__  # type: ignore[attr-defined]

    def counting(cls: type[TaskRecord], text: str | bytes, version: int) -> TaskRecord:
        found = from_json(cls, text, version)
        parsed.append(found.task_id)
        return found

    async def scenario(store: TaskStore) -> None:
        same_ms = now_ms()
        for i in range(300):
            task = record(f"a-{i:03d}")
            task.created_at_ms = same_ms + i // 7  # runs of tasks created in the same ms
            await store.create(task)
        await store.create(record("a-brief", ttl_ms=20))
        await store.create(record("bob-1", principal="bob"))
        await asyncio.sleep(0.05)  # a-brief expires, its id still in the index
        monkeypatch.setattr(TaskRecord, "from_json", classmethod(counting))
        listed: list[str] = []
        after = None
        while True:
            parsed.clear()
            page, more = await store.list_page("alice", after, 25)
            assert len(parsed) <= 25, "a page parsed tasks beyond itself"
            listed += [r.task_id for r in page]
            if not more:
                break
            after = page[-1].list_key
        assert listed == [f"a-{i:03d}" for i in range(300)]  # oldest first, each once
        assert (await store.list_page("bob", None, 25))[0][0].task_id == "bob-1"

    with_store(scenario)


def test_a_principal_keeps_at_most_its_cap_of_live_tasks(with_store: Callable[..., None]) -> None:
    async def scenario(store: TaskStore) -> None:
        await store.create(record("brief", ttl_ms=100), max_live=3)
        for i in range(2):
            await store.create(record(f"long-{i}"), max_live=3)
        with pytest.raises(TooManyTasks):
            await store.create(record("over"), max_live=3)
        assert await store.get("over") is None
        await store.create(record("bob-1", principal="bob"), max_live=3)  # another principal
        await asyncio.sleep(0.15)  # the brief task expires: room for one more
        await store.create(record("after-expiry"), max_live=3)
        with pytest.raises(TooManyTasks):
            await store.create(record("over-again"), max_live=3)
        listed = [r.task_id for r in await store.list_for("alice")]
        assert listed == ["long-0", "long-1", "after-expiry"]

    with_store(scenario)
