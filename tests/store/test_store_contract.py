"""Both stores keep the one contract the guard relies on: the first STOP wins and is read
back, the gate call sums every caller's counters and refuses to count for a stopped run,
saving state is a compare-and-set, and a user's window sums every run of that user."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from otel_loopguard_testing import run_in_threads
from otel_loopguard_testing.redis_server import RedisServer

from otel_loopguard.engine.store import (
    CounterDelta,
    MemoryStore,
    RunStore,
    StopRecord,
    UserWindow,
)
from otel_loopguard.engine.store.redis import RedisStore


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> Iterator[RunStore]:
    if request.param == "memory":
        yield MemoryStore()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    made = RedisStore(server.url, timeout_ms=500)
    yield made
    made.close()


def test_the_first_stop_wins_and_is_read_back(store: RunStore) -> None:
    assert store.read_stop("run-1") is None
    first = StopRecord(("repetition", "no_progress"), "same call three times", 1_700_000_000.5)
    assert store.write_stop("run-1", first) is True
    assert store.write_stop("run-1", StopRecord(("budget",), "later", 1.0)) is False
    read = store.read_stop("run-1")
    assert read is not None
    assert read.detectors == ("repetition", "no_progress")
    assert read.reason == "same call three times"
    assert read.time == pytest.approx(1_700_000_000.5)
    assert store.read_stop("run-2") is None


def test_the_gate_sums_every_caller_and_counts_nothing_once_stopped(store: RunStore) -> None:
    delta = CounterDelta(steps=1, tool_calls=2, input_tokens=100, output_tokens=10, cost=0.25)

    def call(_caller: int) -> None:
        for _ in range(50):
            assert store.gate("run-1", delta, 1_000.0) is not None

    run_in_threads(call, range(4))
    answer = store.gate("run-1", CounterDelta(), 2_000.0)
    assert answer is not None and answer.stop is None and answer.totals is not None
    totals = answer.totals
    assert (totals.steps, totals.tool_calls) == (200, 400)
    assert (totals.input_tokens, totals.output_tokens) == (20_000, 2_000)
    assert totals.cost == pytest.approx(50.0)
    assert totals.started == pytest.approx(1_000.0)  # the first call's time
    store.write_stop("run-1", StopRecord(("budget",), "tokens", 3_000.0))
    stopped = store.gate("run-1", delta, 3_001.0)
    assert stopped is not None and stopped.stop is not None and stopped.totals is None
    assert stopped.stop.detectors == ("budget",)


def test_an_unknown_cost_stays_unknown(store: RunStore) -> None:
    store.gate("run-1", CounterDelta(cost=1.0), 10.0)
    store.gate("run-1", CounterDelta(input_tokens=5, cost_unknown=True), 11.0)
    answer = store.gate("run-1", CounterDelta(cost=2.0), 12.0)
    assert answer is not None and answer.totals is not None
    assert answer.totals.cost is None
    assert answer.totals.input_tokens == 5


def test_saving_state_is_a_compare_and_set(store: RunStore) -> None:
    assert store.load_state("run-1") is None
    assert store.save_state("run-1", {"turn": 1}, 0) == 1
    assert store.save_state("run-1", {"turn": "stale"}, 0) == -1  # another replica saved
    assert store.save_state("run-1", {"turn": 2}, 1) == 2
    loaded = store.load_state("run-1")
    assert loaded is not None and loaded.version == 2 and loaded.data == {"turn": 2}
    same = store.load_state("run-1", newer_than=2)
    assert same is not None and same.version == 2 and same.data is None  # nothing newer


def test_a_users_window_sums_their_runs_and_forgets_old_buckets(store: RunStore) -> None:
    hour = UserWindow("alice", 3600.0)
    now = 1_700_000_000.0
    store.gate("run-a", CounterDelta(input_tokens=300, output_tokens=100, cost=0.5), now, hour)
    answer = store.gate("run-b", CounterDelta(input_tokens=50), now + 10, hour)
    assert answer is not None and answer.usage is not None
    assert answer.usage.tokens == 450
    assert answer.usage.cost == pytest.approx(0.5)
    bob = store.gate("run-c", CounterDelta(), now + 10, UserWindow("bob", 3600.0))
    assert bob is not None and bob.usage is not None and bob.usage.tokens == 0
    later = store.gate("run-b", CounterDelta(input_tokens=7), now + 3700, hour)
    assert later is not None and later.usage is not None
    assert later.usage.tokens == 7  # an hour on, the first hour's buckets are gone
