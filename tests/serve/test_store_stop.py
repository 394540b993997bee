"""With a real redis-server as the run store: after the service saw a conversation loop
(spans from an agent process), our gate in a third process vetoes the run's next call."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from otel_loopguard_testing import OTLPReceiver
from otel_loopguard_testing.redis_server import RedisServer, redis_server

from tests.serve.service_process import ServeProcess, run_agent, wait_for
from tests.store.agent_processes import agent_env, run_turns

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
