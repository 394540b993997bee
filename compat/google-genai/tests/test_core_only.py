"""Our core alone beside the official Google GenAI instrumentation: a looping automatic
function calling loop is stopped within the fourth call (observe mode), a productive one is
left alone with content recorded or not, and two invocations under one application span
(each in an ``agent_run`` of the application) are two runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gemini_api import GeminiAPI, Reply, function_responses
from google import genai
from google.genai import types
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import executions_at_first_stop

from otel_loopguard.guard import get_guard

LOOP_TURNS = 6
QUERIES = ("pricing page", "team plan", "currency")


def looping(turns: int = LOOP_TURNS) -> Callable[[list[dict[str, Any]]], Reply]:
    """The same search on every turn (``turns`` times), then the model gives up."""

    def script(contents: list[dict[str, Any]]) -> Reply:
        if len(function_responses(contents)) >= turns:
            return Reply(text="gave up")
        return Reply(calls=[("search", {"query": "pricing"})])

    return script


def productive(contents: list[dict[str, Any]]) -> Reply:
    """A new search each turn, then the answer."""
    done = len(function_responses(contents))
    if done < len(QUERIES):
        return Reply(calls=[("search", {"query": QUERIES[done]})])
    return Reply(text="found it")


class Search:
    """The application's tool (automatic function calling runs it); counts its runs."""

    def __init__(self, answer: Callable[[str], str]) -> None:
        self.answer = answer
        self.executions: list[str] = []

    def __call__(self, query: str) -> str:
        """Search the documentation."""
        self.executions.append(query)
        return self.answer(query)


def ask(api: GeminiAPI, search: Search) -> str | None:
    """One question; the client's automatic function calling loops until a text answer."""
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=api.base_url))

    def tool(query: str) -> str:
        """Search the documentation."""
        return search(query)

    tool.__name__ = "search"
    response = client.models.generate_content(
        model="gemini-scripted",
        contents="Where is the pricing page?",
        config=types.GenerateContentConfig(
            tools=[tool],
            automatic_function_calling=types.AutomaticFunctionCallingConfig(
                maximum_remote_calls=LOOP_TURNS + 2
            ),
        ),
    )
    return response.text


def their_tool_spans(harness) -> list:
    return [
        s
        for s in harness.tool_spans("search")
        if s.instrumentation_scope.name.endswith("google_genai")
    ]


def test_a_looping_loop_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    search = Search(lambda query: "no results")
    at_stop = executions_at_first_stop(observe_loopguard, lambda: len(search.executions))
    with GeminiAPI(looping()) as api, observe_loopguard.app_tracer().start_as_current_span("app"):
        answer = ask(api, search)
    assert answer == "gave up"  # observe mode: it went on
    assert len(search.executions) == LOOP_TURNS
    assert at_stop() <= 4
    assert len(their_tool_spans(observe_loopguard)) == LOOP_TURNS
    assert count("loopguard.internal_errors") == 0


def test_a_productive_loop_gets_no_stop(observe_loopguard, hidden: bool) -> None:
    count = metric_counter(observe_loopguard)
    search = Search(lambda query: f"results for {query}")
    with GeminiAPI(productive) as api, observe_loopguard.app_tracer().start_as_current_span("app"):
        assert ask(api, search) == "found it"
    tools = their_tool_spans(observe_loopguard)
    assert len(tools) == len(QUERIES)
    assert ("gen_ai.tool.call.arguments" not in tools[0].attributes) is hidden
    assert not observe_loopguard.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard) -> None:
    """A looping question, then a productive one, each in an ``agent_run`` of the
    application, under its one request span: two runs, the second not stopped by the
    first one's STOP."""
    guard = get_guard()
    tracer = observe_loopguard.app_tracer()
    with observe_loopguard.app_tracer().start_as_current_span("handle request"):
        with GeminiAPI(looping()) as api, guard.agent_run(tracer, "researcher"):
            ask(api, Search(lambda query: "no results"))
        with GeminiAPI(productive) as api, guard.agent_run(tracer, "researcher"):
            assert ask(api, Search(lambda query: f"results for {query}")) == "found it"
    runs = observe_loopguard.named("invoke_agent researcher")
    assert [s.attributes["loopguard.run.state"] for s in runs] == ["stopped", "completed"]
    assert len({s.attributes["loopguard.run.id"] for s in runs}) == 2
