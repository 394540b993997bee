"""The guard and its store in one process: nothing is shared (nor any work added) by
default, a Redis URL without the redis package is one log line and local runs, and no
tool argument or result reaches the store with content capture off."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from opentelemetry import baggage, context
from opentelemetry.sdk.trace import TracerProvider
from otel_loopguard_testing import run_in_threads
from otel_loopguard_testing.redis_server import RedisServer

from otel_loopguard import LoopGuard, LoopGuardConfig, LoopGuardInterrupt

SECRET = "card 4111-1111-1111-1111"


def test_the_default_shares_nothing() -> None:
    assert LoopGuard(LoopGuardConfig()).shared_runs is None
    assert LoopGuard(LoopGuardConfig(store="memory", max_steps=3)).shared_runs is None


def test_fleet_budgets_work_on_the_memory_store_within_a_process() -> None:
    guard = LoopGuard(LoopGuardConfig(user_token_budget=100, mode="enforce"))
    assert guard.shared_runs is not None and not guard.shared_runs.store.shared
    tracer = TracerProvider().get_tracer("test")
    token = context.attach(baggage.set_baggage("enduser.id", "dana"))
    try:
        for run in ("dana-1", "dana-2"):  # 60 tokens each: the second run's call is over
            with guard.agent_run(tracer, "agent", conversation_id=run):
                guard.preflight_llm()
                guard.observe_llm_response(model="m", input_tokens=60, output_tokens=0)
        with pytest.raises(LoopGuardInterrupt) as stopped:
            with guard.agent_run(tracer, "agent", conversation_id="dana-3"):
                guard.preflight_llm()
    finally:
        context.detach(token)
    assert stopped.value.decision.reasons[0].evidence["scope"] == "user"
    with guard.agent_run(tracer, "agent", conversation_id="erin-1"):  # no user: no budget
        assert guard.preflight_llm().action.value == "continue"


_NO_REDIS = r"""
import sys

class _NoRedis:
    def find_spec(self, name, path=None, target=None):
        if name == "redis" or name.startswith("redis."):
            raise ImportError("redis is not installed here")
        return None

sys.meta_path.insert(0, _NoRedis())
from opentelemetry.sdk.trace import TracerProvider
from otel_loopguard import LoopGuard, LoopGuardConfig, LoopGuardInterrupt

guard = LoopGuard(LoopGuardConfig(store="redis://127.0.0.1:1/0", mode="enforce"))
tracer = TracerProvider().get_tracer("test")
ran = 0
try:
    with guard.agent_run(tracer, "agent", conversation_id="c1"):
        for _ in range(5):
            with guard.tool_call(tracer, "lookup", {"q": "x"}) as call:
                ran += 1
                call.set_result("")
except LoopGuardInterrupt:
    pass
print("shared", guard.shared_runs is not None, "ran", ran)
"""


def test_a_redis_url_without_the_redis_package_is_one_line_and_local_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _NO_REDIS], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["shared", "False", "ran", "3"]  # stopped locally
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    # the store's one line; the interrupt's own line says what stopped the run
    interrupts = [line for line in lines if "STOP interrupted run" in line]
    lines = [line for line in lines if line not in interrupts]
    assert len(lines) == 1 and "'.[redis]'" in lines[0]
    assert len(interrupts) == 1


def test_no_tool_argument_or_result_reaches_the_store(redis_server: RedisServer) -> None:
    guard = LoopGuard(LoopGuardConfig(store=redis_server.url, mode="enforce"))
    tracer = TracerProvider().get_tracer("test")
    try:
        with guard.agent_run(tracer, "agent", conversation_id="c1"):
            for _ in range(4):
                with guard.tool_call(tracer, "charge", {"card": SECRET}) as call:
                    call.set_result(f"declined: {SECRET}")
    except LoopGuardInterrupt:
        pass
    stored = redis_server.command("HGETALL", "loopguard:run:c1")
    assert b"stop" in stored and b"state_version" in stored  # the run was shared
    assert b"4111" not in stored and b"declined" not in stored
    assert b"4111" not in redis_server.command("KEYS", "*")


def test_threads_of_one_run_count_each_call_once_in_the_store(redis_server: RedisServer) -> None:
    guard = LoopGuard(LoopGuardConfig(store=redis_server.url, store_timeout=1000))
    tracer = TracerProvider().get_tracer("test")
    threads, calls = 8, 60

    def agent(index: int) -> None:
        with guard.agent_run(tracer, "agent", conversation_id="shared"):
            for n in range(calls):
                with guard.tool_call(tracer, "lookup", {"q": n, "thread": index}) as call:
                    call.set_result(n)

    run_in_threads(agent, range(threads))
    reply = redis_server.command("HGET", "loopguard:run:shared", "tool_calls")
    assert reply.split(b"\r\n")[1] == str(threads * calls).encode()


def test_check_current_run_sees_a_stop_made_elsewhere(redis_server: RedisServer) -> None:
    guard = LoopGuard(LoopGuardConfig(store=redis_server.url, mode="enforce"))
    tracer = TracerProvider().get_tracer("test")
    with guard.agent_run(tracer, "agent", conversation_id="c9"):
        assert guard.check_current_run().action.value == "continue"
        # another program (another language's agent, an operator) stops the run
        redis_server.command("HSET", "loopguard:run:c9", "stop", "1", "stop_detectors", "operator")
        with pytest.raises(LoopGuardInterrupt) as stopped:
            guard.check_current_run()
    assert stopped.value.decision.run_id == "c9"


def test_store_latency_and_outages_are_metrics(redis_server: RedisServer) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    guard = LoopGuard(
        LoopGuardConfig(store=redis_server.url), meter_provider=MeterProvider([reader])
    )
    tracer = TracerProvider().get_tracer("test")

    def points(name: str) -> list[Any]:
        data = reader.get_metrics_data()
        return [
            point
            for resource in (data.resource_metrics if data else ())
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]

    with guard.agent_run(tracer, "agent", conversation_id="m1"):
        for n in range(3):
            with guard.tool_call(tracer, "lookup", {"q": n}) as call:
                call.set_result(n)
    by_operation = {p.attributes["operation"]: p.count for p in points("loopguard.store.duration")}
    assert by_operation["gate"] >= 3 and by_operation["load_state"] >= 1
    assert by_operation["save_state"] >= 1
    redis_server.kill()
    with guard.agent_run(tracer, "agent", conversation_id="m1"):
        with guard.tool_call(tracer, "lookup", {"q": "after"}) as call:
            call.set_result("")
    errors = [
        p for p in points("loopguard.internal_errors") if p.attributes.get("where") == "store"
    ]
    assert sum(p.value for p in errors) >= 1


def test_the_user_may_come_from_the_agent_spans_attribute() -> None:
    guard = LoopGuard(LoopGuardConfig(user_token_budget=100, mode="enforce"))
    tracer = TracerProvider().get_tracer("test")
    user = {"gen_ai.user.id": "frank"}
    with guard.agent_run(tracer, "agent", conversation_id="f1", attributes=user):
        guard.preflight_llm()
        guard.observe_llm_response(model="m", input_tokens=150, output_tokens=0)
    with pytest.raises(LoopGuardInterrupt):
        with guard.agent_run(tracer, "agent", conversation_id="f2", attributes=user):
            guard.preflight_llm()


def test_a_tool_call_that_lands_in_another_run_than_expected_keeps_the_store_in_step(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The gate sends the store's request for the run the current context belongs to
    before it makes the tool's span. A tracer that starts every span as a trace of its own
    (as some do for background work) puts the call in another run: that answer is read and
    dropped, the call is gated on its own run, and every later answer is still its own."""
    from opentelemetry.context import Context

    class RootTracer:
        def __init__(self, tracer: Any) -> None:
            self.tracer = tracer

        def start_span(self, name: str, context: Any = None, **options: Any) -> Any:
            return self.tracer.start_span(name, context=Context(), **options)

    guard = LoopGuard(LoopGuardConfig(store=redis_server.url, store_timeout=1000))
    tracer = TracerProvider().get_tracer("test")
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
    ran = []
    opened_before = redis_server.info("total_connections_received")
    with caplog.at_level("WARNING"):
        with tracer.start_as_current_span("invoke_agent planner", attributes=agent):
            for n in range(3):
                with guard.tool_call(RootTracer(tracer), "lookup", {"q": n}) as call:
                    ran.append(n)
                    call.set_result(n)
            with guard.tool_call(tracer, "lookup", {"q": 99}) as call:
                ran.append(99)
                call.set_result(99)
    assert ran == [0, 1, 2, 99]
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
    # the dropped answers were read: one connection served every call (and the INFO asking)
    assert redis_server.info("total_connections_received") - opened_before == 2
    store = guard.shared_runs.store  # type: ignore[union-attr]
    from otel_loopguard.engine.store import CounterDelta

    for expected in (1, 2, 3):  # in step: each answer is this call's, not an earlier one
        answer = store.gate("probe", CounterDelta(tool_calls=1), 1.0)
        assert answer is not None and answer.totals is not None
        assert answer.totals.tool_calls == expected
