"""The Redis store fails open: a paused server costs each call at most the timeout, a
killed one answers nothing (one warning per outage) until it is back, and a value under a
run's key that we did not write is ignored with one warning, never raised."""

from __future__ import annotations

import logging
import time

import pytest
from otel_loopguard_testing.redis_server import RedisServer

from otel_loopguard import LoopGuardConfig
from otel_loopguard.engine.store import CounterDelta, StopRecord
from otel_loopguard.engine.store import redis as redis_store
from otel_loopguard.engine.store.redis import RedisStore


def test_a_paused_server_costs_each_call_at_most_the_timeout(redis_server: RedisServer) -> None:
    errors: list[str] = []
    store = RedisStore(redis_server.url + "?timeout=40", on_error=lambda k, e: errors.append(k))
    assert store.timeout_ms == 40
    assert store.gate("run-1", CounterDelta(steps=1), 1.0) is not None
    redis_server.pause()
    try:
        waits = []
        for _ in range(3):
            started = time.perf_counter()
            assert store.gate("run-1", CounterDelta(steps=1), 2.0) is None
            waits.append(time.perf_counter() - started)
            time.sleep(redis_store.RETRY_AFTER + 0.05)  # let it try the server each time
    finally:
        redis_server.resume()
    # the timeout, and scheduling slack on a loaded 2-core CI machine (30 ms was seen
    # exceeded there); a call ignoring the timeout would wait for the resume, seconds on
    assert max(waits) < 0.040 + 0.150
    assert errors == ["unavailable"] * 3
    time.sleep(redis_store.RETRY_AFTER + 0.05)
    answer = store.gate("run-1", CounterDelta(), 3.0)
    assert answer is not None and answer.totals is not None


def test_a_killed_server_is_one_warning_and_shares_again_when_back(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisStore(redis_server.url, timeout_ms=50)
    assert store.write_stop("run-0", StopRecord(("x",), "y", 1.0)) is True
    redis_server.kill()
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.store"):
        for _ in range(20):  # many calls in one outage: at most a few reach the network
            assert store.read_stop("run-0") is None
            assert store.gate("run-1", CounterDelta(steps=1), 1.0) is None
        outage = [r for r in caplog.records if "does not answer" in r.getMessage()]
        assert len(outage) == 1
        redis_server.start()  # same port, empty data
        time.sleep(redis_store.RETRY_AFTER + 0.05)
        answer = store.gate("run-1", CounterDelta(steps=1), 2.0)
    assert answer is not None and answer.totals is not None and answer.totals.steps == 1
    assert any("answers again" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "plant",
    [
        ("SET", "loopguard:run:run-1", "not a hash"),  # a foreign string under the key
        ("HSET", "loopguard:run:run-1", "steps", "many"),  # a counter that is no number
        ("HSET", "loopguard:run:run-1", "state_version", "v2"),
        ("HSET", "loopguard:run:run-1", "state_version", "3", "state", "{not json"),
    ],
)
def test_a_foreign_value_is_ignored_with_one_warning(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture, plant: tuple[str, ...]
) -> None:
    redis_server.command(*plant)
    errors: list[str] = []
    store = RedisStore(redis_server.url, on_error=lambda k, e: errors.append(k))
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.store"):
        store.gate("run-1", CounterDelta(steps=1), 1.0)
        store.load_state("run-1")
        store.save_state("run-1", {"a": 1}, 3)
        store.read_stop("run-1")
    warnings = [r for r in caplog.records if "ignoring the value" in r.getMessage()]
    assert len(warnings) == 1 and "loopguard:run:run-1" in warnings[0].getMessage()
    assert errors and set(errors) == {"corrupt"}
    # another run's key is untouched by it
    other = store.gate("run-2", CounterDelta(steps=1), 1.0)
    assert other is not None and other.totals is not None and other.totals.steps == 1


def test_a_stop_written_by_another_program_is_a_stop(redis_server: RedisServer) -> None:
    redis_server.command("HSET", "loopguard:run:run-1", "stop", "1", "stop_decision", "{bad")
    store = RedisStore(redis_server.url)
    record = store.read_stop("run-1")
    assert record is not None and record.decision is None and record.detectors == ()
    answer = store.gate("run-1", CounterDelta(steps=1), 1.0)
    assert answer is not None and answer.stop is not None


def test_the_password_never_reaches_the_log() -> None:
    assert redis_store.redacted("redis://user:s3cret@host:6379/0") == "redis://user:***@host:6379/0"
    url, timeout = redis_store.split_timeout("rediss://:pw@h:1/0?timeout=25&ssl_cert_reqs=none")
    assert timeout == 25.0 and "timeout" not in url and "ssl_cert_reqs=none" in url


def test_a_mistyped_store_url_is_one_warning_without_its_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        config = LoopGuardConfig.from_env({"OTEL_LOOPGUARD_STORE": "redis//:s3cret@cache:6379"})
    assert config.store == "memory"
    warnings = [r.getMessage() for r in caplog.records if "OTEL_LOOPGUARD_STORE" in r.getMessage()]
    assert len(warnings) == 1 and "s3cret" not in warnings[0] and "cache:6379" in warnings[0]
