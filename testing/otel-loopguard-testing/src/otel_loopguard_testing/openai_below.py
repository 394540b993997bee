"""What the suites that test their framework on top of our OpenAI SDK package share (the
``with_openai_package`` fixture of :func:`~.harness.openai_package_fixture`): the scripted
two-turn price question, and the checks that each model turn counted once and that a token
budget still stops the run.

Both packages report a model call (the OpenAI package the SDK's request, the framework's
package the framework's turn, unless a package below already did): a turn must count once,
or token budgets and ``max_steps`` trip at half their size. It imports ``openai`` (through
:mod:`.scripted_openai`), so it is not imported by the package's top level:
``from otel_loopguard_testing.openai_below import ...``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .harness import Harness
from .scripted_openai import ScriptedAPI, Turn

#: the answer of the second turn
TEAM_PLAN_ANSWER = "The team plan costs 10 EUR per seat."
#: the usage of the two turns: a search, then the answer
TEAM_PLAN_USAGE = [(40, 10), (50, 10)]


def team_plan_api(query: str = "team plan", **options: Any) -> ScriptedAPI:
    """A scripted API of two turns: ``search(query)`` (40 + 10 tokens), then
    :data:`TEAM_PLAN_ANSWER` (50 + 10); ``options`` go to :class:`ScriptedAPI`."""
    return ScriptedAPI(
        [
            Turn(tool_calls=[("search", {"query": query})], input_tokens=40, output_tokens=10),
            Turn(text=TEAM_PLAN_ANSWER, input_tokens=50, output_tokens=10),
        ],
        **options,
    )


def served_team_plan_api_fixture() -> Any:
    """The ``api`` fixture: :func:`team_plan_api` served on a loopback port, as
    ``(scripted, url)``, stopped after the test. In a test module::

        api = served_team_plan_api_fixture()
    """
    import pytest

    @pytest.fixture(name="api")
    def api() -> Iterator[tuple[ScriptedAPI, str]]:
        scripted = team_plan_api()
        url, stop = scripted.serve()
        yield scripted, url
        stop()

    return api


def chat_spans(harness: Harness) -> list[Any]:
    """The ``chat`` spans (the OpenAI package's model calls)."""
    return [
        span
        for span in harness.spans()
        if (span.attributes or {}).get("gen_ai.operation.name") == "chat"
    ]


def assert_each_turn_counted_once(
    harness: Harness,
    scripted: ScriptedAPI,
    *,
    agent: str = "researcher",
    usage: list[tuple[int, int]] = TEAM_PLAN_USAGE,
) -> None:
    """Both packages were at work, and each turn counted once: one request and one
    ``chat`` span per turn, the run of ``agent`` ``completed`` with the sum of the turns'
    usage (each counted twice would have tripped the test's budget), no STOP; every span
    ended once."""
    assert len(scripted.requests) == len(usage)
    assert len(chat_spans(harness)) == len(usage)  # both packages were at work
    (run,) = harness.named(f"invoke_agent {agent}")
    assert run.attributes["gen_ai.usage.input_tokens"] == sum(i for i, _ in usage)
    assert run.attributes["gen_ai.usage.output_tokens"] == sum(o for _, o in usage)
    assert run.attributes["loopguard.run.state"] == "completed"
    assert not harness.decision_events("stop")
    harness.assert_every_span_ended_once()


def assert_stopped_by_the_budget_before_the_tool(
    harness: Harness,
    scripted: ScriptedAPI,
    stopped: Any,
    executions: list[str],
    *,
    agent: str = "researcher",
) -> None:
    """A budget under the first turn's usage: the budget stopped the run (``stopped``, the
    ``pytest.raises(LoopGuardInterrupt)`` info) after that one request, before its tool
    ran; the run ended ``budget_exceeded``."""
    assert stopped.value.decision.detectors == ("budget",)
    assert executions == []
    assert len(scripted.requests) == 1
    assert harness.run_state(agent) == "budget_exceeded"


#: ``run_agent(url, executions)``: the test's framework agent on the served API at ``url``,
#: its ``search`` tool appending each query to ``executions``; returns what the run returns
RunAgent = Callable[[str, list[str]], Any]


def check_each_turn_counted_once(with_openai_package: Any, api: Any, run_agent: RunAgent) -> Any:
    """The test of a turn the OpenAI package reported: 110 tokens in two turns, under a
    150-token budget and ``max_steps=2`` (counted twice, 220 tokens and four steps, the run
    would stop): the run searched once and :func:`assert_each_turn_counted_once`. Returns
    what ``run_agent`` returned, for the test to check its answer."""
    harness = with_openai_package(mode="enforce", token_budget=150, max_steps=2)
    scripted, url = api
    executions: list[str] = []
    result = run_agent(url, executions)
    assert executions == ["team plan"]
    assert_each_turn_counted_once(harness, scripted)
    return result


def check_the_budget_stops_before_the_tool(
    with_openai_package: Any, api: Any, run_agent: RunAgent
) -> None:
    """The test of a budget of 40: the first turn (50 tokens) goes over it and the run
    stops before its tool runs (:func:`assert_stopped_by_the_budget_before_the_tool`)."""
    import pytest

    from otel_loopguard.engine.decisions import LoopGuardInterrupt

    harness = with_openai_package(mode="enforce", token_budget=40)
    scripted, url = api
    executions: list[str] = []
    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_agent(url, executions)
    assert_stopped_by_the_budget_before_the_tool(harness, scripted, stopped, executions)
