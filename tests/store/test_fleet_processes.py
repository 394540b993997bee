"""Runs that span processes, shared through a real redis-server: each agent below is a
separate Python process (``programs/agent_turns.py``: our public API, a scripted tool)."""

from __future__ import annotations

import sys
import time

import pytest
from otel_loopguard_testing.redis_server import RedisServer

from otel_loopguard.engine.store import redis as redis_store

from .agent_processes import AgentProcess, agent_env, run_turns, turns_in_fresh_processes

EXECUTED_THEN_VETOED = [True, True, True, False, False, False]


def test_six_turns_in_six_fresh_processes_stop_exactly_as_in_one(
    redis_server: RedisServer,
) -> None:
    in_one = run_turns("conv-1", 6, agent_env("memory"))
    shared = turns_in_fresh_processes("conv-2", 6, agent_env(redis_server.url))
    alone = turns_in_fresh_processes("conv-3", 6, agent_env("memory"))

    assert [turn["executed"] for turn in in_one] == EXECUTED_THEN_VETOED
    assert [turn["executed"] for turn in shared] == EXECUTED_THEN_VETOED
    # the same decisions, turn by turn: the third call is the last that runs
    assert [t["interrupted"] for t in shared] == [t["interrupted"] for t in in_one]
    assert shared[2]["interrupted"] is not None
    # without the store every process sees one call, and the loop runs on
    assert all(turn["executed"] and turn["interrupted"] is None for turn in alone)


def test_one_sub_agents_stop_vetoes_the_others_next_call(redis_server: RedisServer) -> None:
    env = agent_env(redis_server.url)
    with AgentProcess("run-1", env) as first, AgentProcess("run-1", env) as second:
        assert second.turn()["executed"]
        outcomes = [first.turn() for _ in range(3)]
        stopped = next(t for t in outcomes if t["interrupted"])
        vetoed = second.turn("another question")  # a call it never made before
        first.finish()
        second.finish()
    assert not vetoed["executed"]
    assert vetoed["interrupted"] == stopped["interrupted"]


def test_a_token_budget_is_tripped_by_the_sum_of_two_processes(
    redis_server: RedisServer,
) -> None:
    env = agent_env(redis_server.url, TOKEN_BUDGET="1000", LOOPGUARD_TEST_TOKENS="300")
    with AgentProcess("run-1", env) as first, AgentProcess("run-1", env) as second:
        turns = [
            first.turn("q1"),  # 300 in all
            second.turn("q2"),  # 600
            first.turn("q3"),  # 900: each process has seen 600 or less
            second.turn("q4"),  # its model call makes 1200: over the budget only in sum
            first.turn("q5"),
        ]
        first.finish()
        second.finish()
    assert [t["executed"] for t in turns] == [True, True, True, False, False]
    assert all((t["interrupted"], t["kind"]) == ("budget", "tokens") for t in turns[3:])
    # without the store neither process alone reaches the budget
    local = agent_env("memory", TOKEN_BUDGET="1000", LOOPGUARD_TEST_TOKENS="300")
    with AgentProcess("run-2", local) as first, AgentProcess("run-2", local) as second:
        alone = [first.turn("q1"), second.turn("q2"), first.turn("q3"), second.turn("q4")]
        alone.append(first.turn("q5"))
        first.finish()
        second.finish()
    assert all(t["executed"] for t in alone)


def test_a_killed_server_means_local_decisions_one_warning_then_sharing_again(
    redis_server: RedisServer,
) -> None:
    env = agent_env(redis_server.url)
    with AgentProcess("conv-1", env) as agent:
        first = agent.turn()  # shared
        redis_server.kill()
        during = [agent.turn(), agent.turn()]  # the 3rd identical call: stopped locally
        redis_server.start()  # back, empty
        time.sleep(redis_store.RETRY_AFTER + 0.1)
        after = agent.turn()  # vetoed; the STOP reaches the store now
        stderr = agent.finish()
    assert first["executed"] and [t["executed"] for t in during] == [True, True]
    assert during[0]["interrupted"] is None and during[1]["interrupted"] is not None
    assert not after["executed"]
    assert stderr.count("does not answer") == 1
    # shared again: a fresh process of the run is vetoed by the STOP made in the outage
    later = run_turns("conv-1", 1, env)[0]
    assert not later["executed"] and later["interrupted"] == during[1]["interrupted"]


def test_a_paused_server_never_holds_a_call_longer_than_the_timeout(
    redis_server: RedisServer,
) -> None:
    env = agent_env(redis_server.url, STORE_TIMEOUT="50", LOOPGUARD_TEST_TOKENS="10")
    with AgentProcess("conv-1", env) as agent:
        agent.turn()  # connected
        redis_server.pause()
        try:
            turns = [agent.turn() for _ in range(2)]
            time.sleep(redis_store.RETRY_AFTER + 0.1)  # the store is tried again
            turns.append(agent.turn())
        finally:
            redis_server.resume()
        stderr = agent.finish()
    gate_ms = [ms for turn in turns for ms in turn["gate_ms"]]
    # the timeout, plus scheduling slack on a busy machine; a call ignoring the timeout
    # would wait until the server is resumed, seconds later
    assert max(gate_ms) < 50 + 150
    # the loop is still stopped by this process's own detectors
    assert [t["executed"] for t in turns] == [True, True, False]
    assert stderr.count("does not answer") == 1


def test_a_foreign_value_under_the_runs_key_is_ignored_with_a_warning(
    redis_server: RedisServer,
) -> None:
    redis_server.command("SET", "loopguard:run:conv-1", "written by another program")
    env = agent_env(redis_server.url)
    with AgentProcess("conv-1", env) as agent:
        turns = [agent.turn() for _ in range(4)]
        stderr = agent.finish()
    assert [t["executed"] for t in turns] == [True, True, True, False]
    assert stderr.count("ignoring the value under 'loopguard:run:conv-1'") == 1
    assert "Traceback" not in stderr


def test_a_users_hourly_budget_is_the_sum_of_their_runs_in_two_processes(
    redis_server: RedisServer,
) -> None:
    budget = {"USER_TOKEN_BUDGET": "1000", "LOOPGUARD_TEST_TOKENS": "400"}
    alice = agent_env(redis_server.url, LOOPGUARD_TEST_USER="alice", **budget)
    bob = agent_env(redis_server.url, LOOPGUARD_TEST_USER="bob", **budget)
    with AgentProcess("alice-1", alice) as first, AgentProcess("alice-2", alice) as second:
        with AgentProcess("bob-1", bob) as other:
            turns = [first.turn("q1"), first.turn("q2")]  # alice: 800 in her first run
            turns.append(second.turn("q3"))  # her second run: 1200 in the hour
            turns.append(second.turn("q4"))
            bobs = [other.turn(f"b{n}") for n in range(2)]  # 800: under his budget
            for agent in (first, second, other):
                agent.finish()
    # each of alice's runs stays under 1000 tokens; their sum does not
    assert [t["executed"] for t in turns] == [True, True, False, False]
    assert all(
        (t["interrupted"], t["kind"], t["scope"]) == ("budget", "tokens", "user") for t in turns[2:]
    )
    assert all(t["executed"] and t["interrupted"] is None for t in bobs)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="genai-prices needs Python >= 3.11")
def test_a_users_cost_budget_priced_from_the_installed_table(redis_server: RedisServer) -> None:
    import genai_prices  # the [test] extra installs it on Python >= 3.11

    model, tokens = "gpt-4o", 100_000
    per_turn = float(
        genai_prices.calc_price(genai_prices.Usage(input_tokens=tokens), model).total_price
    )
    assert per_turn > 0
    env = agent_env(
        redis_server.url,
        # the third turn's model call goes over; its tool call and all after are vetoed
        USER_COST_LIMIT=repr(per_turn * 2.5),
        LOOPGUARD_TEST_USER="carol",
        LOOPGUARD_TEST_TOKENS=str(tokens),
        LOOPGUARD_TEST_MODEL=model,
    )
    assert "OTEL_LOOPGUARD_PRICES" not in env
    with AgentProcess("carol-1", env) as first, AgentProcess("carol-2", env) as second:
        turns = [first.turn("q1"), second.turn("q2"), first.turn("q3"), second.turn("q4")]
        first.finish()
        second.finish()
    assert [t["executed"] for t in turns] == [True, True, False, False]
    assert (turns[2]["interrupted"], turns[2]["kind"], turns[2]["scope"]) == (
        "budget",
        "cost",
        "user",
    )


def test_two_live_replicas_taking_turns_in_turn_keep_the_conversations_windows(
    redis_server: RedisServer,
) -> None:
    env = agent_env(redis_server.url)
    with AgentProcess("conv-1", env) as first, AgentProcess("conv-1", env) as second:
        # a load balancer's round robin: each replica resumes the run the other advanced
        turns = [first.turn(), second.turn(), first.turn(), second.turn(), first.turn()]
        first.finish()
        second.finish()
    in_one = run_turns("conv-2", 5, agent_env("memory"))
    assert [t["executed"] for t in turns] == [t["executed"] for t in in_one]
    assert [t["executed"] for t in turns] == [True, True, True, False, False]
    assert turns[2]["interrupted"] == in_one[2]["interrupted"] is not None  # the third call
