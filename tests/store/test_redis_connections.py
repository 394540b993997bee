"""How the Redis store talks to the server: each call on a connection no other call uses
meanwhile (no reply read by the wrong thread), as many connections as calls in flight and
reused after, a forked child on its own sockets, and a server that forgot our scripts
(restarted, ``SCRIPT FLUSH``) loading them again on the next call."""

from __future__ import annotations

import gc
import multiprocessing
import threading

import pytest
from otel_loopguard_testing import run_in_threads
from otel_loopguard_testing.redis_server import RedisServer

from otel_loopguard.engine.store import CounterDelta
from otel_loopguard.engine.store.redis import RedisStore


def _connected_clients(server: RedisServer) -> int:
    return server.info("connected_clients") - 1  # the INFO connection itself


def test_threads_each_read_their_own_replies(redis_server: RedisServer) -> None:
    store = RedisStore(redis_server.url, timeout_ms=1000)
    seen: dict[int, list[int]] = {}

    def agent(index: int) -> None:
        own = seen.setdefault(index, [])
        for _ in range(200):
            answer = store.gate(f"run-{index}", CounterDelta(tool_calls=1), 1.0)
            assert answer is not None and answer.totals is not None
            own.append(answer.totals.tool_calls)

    run_in_threads(agent, range(6))
    store.close()
    # a reply meant for another thread's run would break some thread's count
    assert all(counts == list(range(1, 201)) for counts in seen.values()), seen


def _gate_counts(store: RedisStore, run_id: str, calls: int) -> list[int | None]:
    counts: list[int | None] = []
    for _ in range(calls):
        got = store.gate(run_id, CounterDelta(tool_calls=1), 1.0)
        counts.append(None if got is None or got.totals is None else got.totals.tool_calls)
    return counts


def test_a_forked_child_talks_to_the_server_on_its_own_connection(
    redis_server: RedisServer,
) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    store = RedisStore(redis_server.url, timeout_ms=1000)
    assert store.gate("parent", CounterDelta(tool_calls=1), 1.0) is not None  # connected
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    together = context.Barrier(2)

    def child() -> None:
        together.wait(timeout=30)
        results.put(_gate_counts(store, "child", 500))

    process = context.Process(target=child)
    process.start()
    together.wait(timeout=30)
    parent = _gate_counts(store, "parent", 500)
    child_counts = results.get(timeout=60)
    process.join(timeout=30)
    assert process.exitcode == 0
    # had they shared the socket, some replies would be the other run's counts
    assert parent == list(range(2, 502))
    assert child_counts == list(range(1, 501))
    store.close()


def test_connections_are_as_many_as_calls_at_once_and_reused(redis_server: RedisServer) -> None:
    store = RedisStore(redis_server.url, timeout_ms=1000)
    run_in_threads(
        lambda index: [store.gate(f"run-{index}", CounterDelta(steps=1), 1.0) for _ in range(50)],
        range(4),
    )
    at_once = _connected_clients(redis_server)
    assert 1 <= at_once <= 4
    for index in range(30):  # one thread per request, as some servers do
        thread = threading.Thread(
            target=store.gate, args=(f"run-{index}", CounterDelta(steps=1), 1.0)
        )
        thread.start()
        thread.join()
    gc.collect()
    assert _connected_clients(redis_server) == at_once  # reused, none left per thread
    store.close()
    assert _connected_clients(redis_server) == 0


def test_a_server_that_forgot_the_scripts_loads_them_again(redis_server: RedisServer) -> None:
    errors: list[str] = []
    store = RedisStore(redis_server.url, timeout_ms=1000, on_error=lambda k, e: errors.append(k))
    assert store.gate("run-1", CounterDelta(tool_calls=1), 1.0) is not None
    assert redis_server.command("SCRIPT", "FLUSH").startswith(b"+OK")
    answer = store.gate("run-1", CounterDelta(tool_calls=1), 2.0)
    assert answer is not None and answer.totals is not None and answer.totals.tool_calls == 2
    assert store.save_state("run-1", {"windows": [1]}, 0) == 1  # every script, not only the gate
    assert errors == []
    store.close()
