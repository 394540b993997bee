"""Scripted agents for ``otel-loopguard demo``: each one a loop users meet in production.

A scenario is what a model would have asked for, turn by turn, and what the tools would
have answered, written down so the demo runs offline with no API key. Each script runs to
its natural end (``max_turns``) when nothing stops it, which is what lets the demo say what
stopping early saved.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Turn:
    """One model turn: the agent that speaks, the tool it asks for, what the tool does."""

    agent: str
    tool: str | None  # None: the model answers and the run ends
    arguments: dict[str, Any] = field(default_factory=dict)
    result: str | None = None
    error: str | None = None  # the tool raises ToolFailure(error)
    input_tokens: int = 0
    output_tokens: int = 0
    answer: str | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    title: str
    story: str
    agent: str
    turns: tuple[Turn, ...]
    #: what the model does once a recommendation reaches it (``enforce`` mode delivers a
    #: replan's message into its next request): the rest of its script; None: it ignores it
    heeded: tuple[Turn, ...] | None = None


def _turn(turn_index: int, agent: str, tool: str | None, *args: Any, **kwargs: Any) -> Turn:
    """Turn ``turn_index`` of a script (``args`` and ``kwargs`` are the rest of
    :class:`Turn`'s fields): its context grows each turn, what a real agent's prompt does,
    and why loops get expensive."""
    return Turn(
        agent, tool, *args, input_tokens=1_400 + 380 * turn_index, output_tokens=90, **kwargs
    )


def _request_id(index: int) -> str:
    """A different request id on every answer, as real search APIs return."""
    return str(uuid.UUID(int=(index + 1) * 0x9E3779B97F4A7C15_F39CC0605CEDC834 % (1 << 128)))


def _stuck_search(max_turns: int = 30) -> Scenario:
    # the same query as a model re-types it: case and spacing differ, the call does not
    queries = ["export invoices csv", "Export invoices CSV", "export  invoices csv "]
    turns = [
        _turn(
            index,
            "support-agent",
            "search_kb",
            {"query": queries[index % len(queries)] if index < 3 else queries[0]},
            result=f"no results (request_id={_request_id(index)})",
        )
        for index in range(max_turns)
    ]
    return Scenario(
        "stuck-search",
        "A support agent stuck on an empty knowledge base",
        'The agent searches the knowledge base; every search answers "no results". '
        "Without a guard it keeps searching until its turn limit.",
        "support-agent",
        tuple(turns),
    )


def _ping_pong(max_turns: int = 24) -> Scenario:
    turns = []
    agents = ("triage-agent", "billing-agent")
    for index in range(max_turns):
        speaker, other = agents[index % 2], agents[(index + 1) % 2]
        turns.append(
            _turn(
                index,
                speaker,
                f"transfer_to_{other.replace('-', '_')}",
                {"reason": "this request belongs to the other team"},
                result=f"handed off to {other}",
            )
        )
    return Scenario(
        "ping-pong",
        "Two sub-agents handing a ticket back and forth",
        "Triage thinks it is a billing question, billing thinks it is a triage question. "
        "Neither ever answers the customer.",
        "triage-agent",
        tuple(turns),
    )


def _permanent_failure(max_turns: int = 20) -> Scenario:
    turns = [
        _turn(
            index,
            "order-agent",
            "fetch_order",
            {"order_id": "A-1042"},
            error="404 Not Found: order A-1042 does not exist",
        )
        for index in range(max_turns)
    ]
    return Scenario(
        "permanent-failure",
        "An agent retrying a 404 forever",
        "The order does not exist, so every fetch fails the same way; the agent retries anyway.",
        "order-agent",
        tuple(turns),
    )


_MISSING_MODULE = "ModuleNotFoundError: No module named 'requests'"
#: how the agent reruns the failing tests: different commands, the same missing module
_TEST_COMMANDS = (
    "pytest",
    "python -m pytest",
    "pytest -x tests",
    "python -m pytest -q",
    "pytest tests/test_export.py",
    "python -m pytest tests",
)


def _failing_tests(index: int) -> Turn:
    command = _TEST_COMMANDS[index % len(_TEST_COMMANDS)]
    return _turn(index, "coding-agent", "bash", {"command": command}, result=_MISSING_MODULE)


def _nudge_heeded() -> Scenario:
    failing = tuple(_failing_tests(index) for index in range(2))
    recovery = (
        _turn(
            2,
            "coding-agent",
            "bash",
            {"command": "pip install requests"},
            result="Successfully installed requests-2.32.3",
        ),
        _turn(3, "coding-agent", "bash", {"command": "pytest"}, result="12 passed in 0.41s"),
        _turn(4, "coding-agent", None, answer="Installed the missing module; all 12 tests pass."),
    )
    never = tuple(_failing_tests(index) for index in range(2, 12))
    return Scenario(
        "nudge-heeded",
        "A coding agent nudged out of a rut (it listens)",
        "Its tests fail on a missing module and it runs them again. otel-loopguard answers "
        "with a replan: in enforce mode the shell hint goes into the model's next request, "
        "and this model acts on it.",
        "coding-agent",
        failing + never,
        heeded=recovery,
    )


def _nudge_ignored() -> Scenario:
    return Scenario(
        "nudge-ignored",
        "The same rut, and a model that ignores the nudge",
        "The hint reaches the model too, but it keeps rerunning the tests. The same evidence "
        "after a delivered nudge is a stop: the nudge did not help.",
        "coding-agent",
        tuple(_failing_tests(index) for index in range(12)),
    )


def _healthy() -> Scenario:
    script = [
        ("search_kb", {"query": "refund policy"}, "Refunds within 30 days of purchase."),
        ("fetch_order", {"order_id": "B-2210"}, "order B-2210: placed 12 days ago, 49.00 EUR"),
        ("check_status", {"job": "refund-B-2210"}, "status: pending"),
        ("check_status", {"job": "refund-B-2210"}, "status: processing"),
        ("check_status", {"job": "refund-B-2210"}, "status: done"),
    ]
    turns = [
        _turn(index, "support-agent", tool, arguments, result)
        for index, (tool, arguments, result) in enumerate(script)
    ]
    turns.append(
        _turn(len(script), "support-agent", None, answer="Your refund for order B-2210 is done.")
    )
    return Scenario(
        "healthy",
        "A healthy run that is left alone",
        "Distinct searches, a lookup, and polling whose answer changes: iteration, not a "
        "loop. The guard watches and lets it finish.",
        "support-agent",
        tuple(turns),
    )


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "stuck-search": _stuck_search,
    "ping-pong": _ping_pong,
    "permanent-failure": _permanent_failure,
    "nudge-heeded": _nudge_heeded,
    "nudge-ignored": _nudge_ignored,
    "healthy": _healthy,
}
