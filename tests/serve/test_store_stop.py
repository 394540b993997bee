"""With a real redis-server as the run store: after the service saw a conversation loop
(spans from an agent process), our gate in a third process vetoes the run's next call; a
conversation whose route moves to another replica goes on there from the stored state."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from otel_loopguard_testing import OTLPReceiver
from otel_loopguard_testing.redis_server import RedisServer, redis_server
from store.agent_processes import agent_env, run_turns

from .requests_helpers import looping_trace, post
from .service_process import ServeProcess, run_agent, wait_for

__all__ = ["redis_server"]


@pytest.fixture
def serve(redis_server: RedisServer) -> Iterator[ServeProcess]:
    with OTLPReceiver() as backend:
        service = ServeProcess(backend.endpoint, env={"OTEL_LOOPGUARD_STORE": redis_server.url})
        yield service
        service.stop()


def test_the_stop_serve_decided_vetoes_the_next_call_in_another_process(
    serve: ServeProcess, redis_server: RedisServer
) -> None:
    env = agent_env(redis_server.url)
    # before: the conversation's next call runs
    assert run_turns("conv-elsewhere", 1, env)[0]["executed"]

    run_agent("grpc", serve.grpc, "loop", "looping-agent", "--conversation", "conv-loop")
    wait_for(lambda: serve.metric("loopguard_decisions_total", action="stop"))

    vetoed = run_turns("conv-loop", 1, env)[0]
    assert not vetoed["executed"]
    assert vetoed["interrupted"]
    # a conversation serve did not stop still runs
    assert run_turns("conv-elsewhere", 1, env)[0]["executed"]


def test_a_conversation_whose_route_moved_goes_on_from_the_store(
    redis_server: RedisServer,
) -> None:
    env = {"OTEL_LOOPGUARD_STORE": redis_server.url}
    with OTLPReceiver() as backend:
        first, second = (
            ServeProcess(backend.endpoint, env=env),
            ServeProcess(backend.endpoint, env=env),
        )
        try:
            # turn 1 of the conversation on one replica: two identical calls, no STOP yet
            _, turn_1 = looping_trace(2, service="moved", conversation="conv-moved")
            assert post(first.http, turn_1.SerializeToString())[0] == 200
            first.idle()
            # turn 2 on the other replica (the route moved): two more make the loop
            _, turn_2 = looping_trace(
                2, service="moved", start_ns=5_000_000_000, conversation="conv-moved"
            )
            assert post(second.http, turn_2.SerializeToString())[0] == 200
            # the same two calls of a conversation the replica never had: no STOP alone
            _, alone = looping_trace(
                2, service="alone", start_ns=5_000_000_000, conversation="conv-alone"
            )
            assert post(second.http, alone.SerializeToString())[0] == 200
            second.idle()
            wait_for(
                lambda: second.metric(
                    "loopguard_decisions_total", action="stop", service_name="moved"
                )
            )
            assert first.metric("loopguard_decisions_total", action="stop") == 0
            assert (
                second.metric("loopguard_decisions_total", action="stop", service_name="alone") == 0
            )
        finally:
            first.stop()
            second.stop()
