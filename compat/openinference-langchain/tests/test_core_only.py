"""Our core alone beside OpenInference's LangChain instrumentation, observe mode: its spans
are all the guard sees (tool spans parented to its own chain spans, the whole ToolMessage as
the result, ``openinference.span.kind`` set only when a span ends)."""

from __future__ import annotations

from agents import (
    CountingChatModel,
    final_answer,
    looping_script,
    priced_script,
    productive_script,
    run_react_graph,
)
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_no_stop_on_their_tools,
    assert_stopped_then_completed,
    executions_at_first_stop,
    openinference_spans,
)
from otel_loopguard_testing.scripted_models import ToolCounter


def test_a_looping_graph_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    counter = ToolCounter()
    at_stop = executions_at_first_stop(observe_loopguard, lambda: counter["search"])
    state = run_react_graph(looping_script(give_up_after=8), counter)

    assert counter["search"] == 8  # observe mode: the run goes on
    assert final_answer(state) == "I could not find the price."
    assert at_stop() <= 4
    # the STOP is on their agent span, still open when it was decided
    (agent,) = observe_loopguard.named("support_agent")
    assert observe_loopguard.decisions_on(agent, "stop")
    assert count("loopguard.internal_errors") == 0


def test_a_productive_graph_gets_no_stop(observe_loopguard, hidden: bool) -> None:
    count = metric_counter(observe_loopguard)
    counter = ToolCounter()
    state = run_react_graph(productive_script(), counter)

    assert counter["lookup"] == 3
    assert "20 EUR" in final_answer(state)
    tools = openinference_spans(observe_loopguard, "TOOL")
    assert_no_stop_on_their_tools(observe_loopguard, count, tools, 3, hidden)


def test_a_looping_graph_with_content_hidden_is_not_stopped_on_placeholders(
    observe_loopguard, content_hidden
) -> None:
    """Hidden content: every call reads ``__REDACTED__`` -> ``__REDACTED__``; that is not
    evidence of a loop (what is left: counts and budgets)."""
    count = metric_counter(observe_loopguard)
    counter = ToolCounter()
    run_react_graph(looping_script(give_up_after=8), counter)
    assert counter["search"] == 8
    assert not observe_loopguard.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    counter = ToolCounter()
    with observe_loopguard.app_tracer().start_as_current_span("handle_request"):
        run_react_graph(looping_script(give_up_after=8), counter)
        run_react_graph(productive_script(), counter)

    second = assert_stopped_then_completed(observe_loopguard, count)
    # the second run starts clean: the first one's STOP and counts are not its own
    assert second.attributes["loopguard.run.tool_calls"] == 3


def test_their_model_spans_count_the_tokens(make_loopguard) -> None:
    """A 120-token budget in observe mode: their model spans carry each turn's 40 + 10
    tokens, so the budget STOP comes with the third model call, and the run has 4 steps."""
    observe_loopguard = make_loopguard(mode="observe", token_budget=120)
    count = metric_counter(observe_loopguard)
    model = CountingChatModel(messages=priced_script())
    calls_at_stop: list[int] = []
    observe_loopguard.guard.on_decision(
        lambda d, _e: calls_at_stop.append(model.calls) if "budget" in d.detectors else None
    )
    run_react_graph(iter(()), ToolCounter(), model=model)

    assert model.calls == 4  # observe mode: the run goes on
    assert calls_at_stop[-1] == 3
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "budget_exceeded"
    assert run.attributes["loopguard.run.steps"] == 4
    assert count("loopguard.internal_errors") == 0


def test_replay_of_their_exported_spans_reaches_the_same_decisions(observe_loopguard, tmp_path):
    """Their spans saved (OTLP JSON) and replayed by ``otel-loopguard analyze``: the same
    runs and decisions as the processor reached live (their kinds are there from the start
    in a saved span; live, the follower held their graph span as the agent until it ended)."""
    import json

    from otel_loopguard.analyze.readers import read_spans
    from otel_loopguard.analyze.replay import Replayer
    from otel_loopguard.engine.config import LoopGuardConfig
    from otel_loopguard.spans.otlp_json import spans_to_otlp_json

    with observe_loopguard.app_tracer().start_as_current_span("handle_request"):
        run_react_graph(looping_script(give_up_after=8), ToolCounter())
        run_react_graph(productive_script(), ToolCounter())
    online = [(e.run_id, d.action.value, e.kind.value) for d, e in observe_loopguard.decided]
    theirs = [s for s in observe_loopguard.spans() if not s.name.startswith("loopguard.")]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(spans_to_otlp_json(theirs)), encoding="utf-8")
    runs: list = []
    replayer = Replayer(LoopGuardConfig(), runs.append)
    replayer.feed(read_spans([str(path)]))
    replayer.finish()
    replayed = [(run.run_id, d.action.value, d.event_kind) for run in runs for d in run.decisions]
    assert "stop" in [action for _, action, _ in online]
    assert replayed == online
