"""Errors that cannot clear within the run (issue 28, family 4): a usage or quota limit
with a far reset, retried with backoff, is a permanent failure; a short 429 that clears
is not.

Cases from public reports: Codex CLI "You've hit your usage limit ... try again in 4 days",
Claude Code "Claude AI usage limit reached" / "5-hour limit reached ∙ resets 3pm", OpenAI's
429 ``insufficient_quota`` ("You exceeded your current quota, please check your plan and
billing details"), Anthropic's "Your credit balance is too low", agents retrying them with
a sleep in between; their twins: OpenAI's per-minute "Rate limit reached ... Please try
again in 2s" and Gemini's "Please retry in 27.9s", which clear.
"""

from __future__ import annotations

import pytest
from scripted_runs import RUN, exchange, failing
from span_agent import DIALECTS, SpanAgent

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.detectors import permanent_failure
from otel_loopguard.engine.detectors.permanent_failure import classify_error, quota_limited
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind
from otel_loopguard.engine.monitor import Monitor

WEEKLY = "429 Too Many Requests: weekly usage limit reached, resets Monday"
CODEX = "You've hit your usage limit. Upgrade to Pro or try again in 4 days 23 hours 10 minutes."
OPENAI_QUOTA = (
    "Error code: 429 - {'error': {'message': 'You exceeded your current quota, please check "
    "your plan and billing details.', 'type': 'insufficient_quota', 'code': 'insufficient_quota'}}"
)
OPENAI_TPM = (
    "Error code: 429 - Rate limit reached for gpt-4o in organization org-abc on tokens per "
    "min (TPM): Limit 30000, Used 29500, Requested 1800. Please try again in 2s."
)
QUERIES = ["flights LHR to JFK", "LHR JFK flights", "flights from London to New York"]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (429, WEEKLY),
        (None, CODEX),
        (429, OPENAI_QUOTA),
        (400, "Your credit balance is too low to access the Anthropic API."),
        (None, "Claude AI usage limit reached|1749924000"),
        (None, "5-hour limit reached ∙ resets 3pm"),
        (429, "rate limit exceeded, try again in 3 days"),
        (429, "Too Many Requests. Retry-After: 86400"),
        (402, "Payment Required"),
    ],
)
def test_limits_that_do_not_clear_within_the_run_are_permanent(
    status: int | None, message: str
) -> None:
    error = ErrorInfo("RateLimitError", message, status)
    assert quota_limited(error)
    assert classify_error(error) == "permanent"


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (429, OPENAI_TPM),
        (429, "Too Many Requests. Retry-After: 1"),
        (429, "Quota exceeded for metric requests per minute. Please retry in 27.9s"),
        (429, "Too many requests, please wait 6m0s"),
        (None, "Timed out; wait 3600 seconds before the job is reaped"),  # no limit
        (503, "Service Unavailable"),
    ],
)
def test_short_waits_and_other_errors_stay_as_they_were(status: int | None, message: str) -> None:
    error = ErrorInfo(None, message, status)
    assert not quota_limited(error)
    assert classify_error(error) == "retryable"


def test_a_remembered_classification_answers_as_the_first_did() -> None:
    """Answers are kept for the looping agent's next identical error: the second answer is
    the first one, the horizon and the status are part of what is remembered, and the
    memory stays bounded however many different errors pass."""
    weekly = ErrorInfo("RateLimitError", WEEKLY, 429)
    short = ErrorInfo("RateLimitError", OPENAI_TPM, 429)
    for _ in range(2):
        assert quota_limited(weekly) and classify_error(weekly) == "permanent"
        assert not quota_limited(weekly, 0.0) and classify_error(weekly, 0.0) == "retryable"
        assert not quota_limited(short) and classify_error(short) == "retryable"
        assert classify_error(ErrorInfo(None, "Not Found", 404)) == "permanent"
        assert classify_error(ErrorInfo(None, "Not Found", 503)) == "retryable"
    for n in range(5000):
        classify_error(ErrorInfo("ToolError", f"no such row {n}", None))
    assert len(permanent_failure._classified) <= permanent_failure._CLASSIFIED_CAP
    assert classify_error(weekly) == "permanent"


def _tool_run(steps: list[list[Event]], **settings: object) -> list[Action]:
    """The action the real monitor decides on each step's last event."""
    monitor = Monitor(LoopGuardConfig(**settings))
    actions = []
    for events in steps:
        decision = None
        for event in events:
            decision = monitor.observe(event)
        assert decision is not None
        actions.append(decision.action)
    return actions


def _backoff_attempts(message: str, status: int | None, attempts: int) -> list[list[Event]]:
    """A search reworded each attempt, failing with ``message``, a growing sleep between."""
    steps = []
    for attempt in range(attempts):
        if attempt:
            steps.append(exchange("sleep", {"seconds": 2**attempt * 30}, ""))
        query = QUERIES[attempt % len(QUERIES)]
        steps.append(failing("web_search", {"query": query}, message, status=status))
    return steps


def test_a_weekly_limit_retried_with_backoff_is_stopped_at_the_second_attempt() -> None:
    actions = _tool_run(_backoff_attempts(WEEKLY, 429, 3))
    # attempts are steps 0, 2, 4 (sleeps between)
    assert actions[0] is Action.CONTINUE
    assert actions[2] is Action.STOP  # before: a pause at the fourth, a stop at the eighth


def test_a_shell_sleep_or_other_work_between_attempts_stops_it_one_attempt_later() -> None:
    steps = []
    for attempt in range(4):
        steps.append(exchange("bash", {"command": f"sleep {30 * 2**attempt}"}, ""))
        steps.append(exchange("read_file", {"path": f"notes{attempt}.md"}, f"note {attempt}"))
        steps.append(failing("web_search", {"query": QUERIES[attempt % 3]}, CODEX))
    actions = _tool_run(steps)
    attempts = actions[2::3]
    assert attempts[:3] == [Action.CONTINUE, Action.CONTINUE, Action.STOP]  # the third


def test_a_success_of_the_limited_tool_clears_the_limit() -> None:
    steps = [failing("web_search", {"query": QUERIES[0]}, WEEKLY, status=429)]
    steps.append(exchange("web_search", {"query": QUERIES[1]}, "3 flights found"))
    steps.append(failing("web_search", {"query": QUERIES[2]}, WEEKLY, status=429))
    assert max(_tool_run(steps)) is Action.CONTINUE


def test_the_quota_rule_is_a_setting_and_off_it_is_a_retryable_429() -> None:
    actions = _tool_run(_backoff_attempts(WEEKLY, 429, 3), quota_reset_horizon=0)
    assert Action.STOP not in actions
    # a horizon beyond the stated wait: "try again in 3 days" is a wait the run can sit out
    far = "rate limit exceeded, try again in 3 days"
    actions = _tool_run(_backoff_attempts(far, 429, 3), quota_reset_horizon=7 * 86400)
    assert Action.STOP not in actions


def test_a_short_429_that_then_succeeds_passes() -> None:
    steps = _backoff_attempts(OPENAI_TPM, 429, 3)
    steps.append(exchange("web_search", {"query": QUERIES[0]}, "3 flights found"))
    steps += [exchange("book", {"flight": f"BA{n}"}, "booked") for n in (117, 175)]
    actions = _tool_run(steps)
    assert max(actions) is Action.CONTINUE


def _model_call(error: ErrorInfo | None) -> Event:
    event = Event(EventKind.LLM_RESPONSE, RUN, model="gpt-4o", finish_reason="stop")
    event.error = error
    return event


def test_a_model_call_failing_on_its_quota_is_stopped_at_the_second_attempt() -> None:
    quota = ErrorInfo("RateLimitError", OPENAI_QUOTA, 429)
    actions = _tool_run([[_model_call(quota)] for _ in range(3)])
    assert actions[:2] == [Action.CONTINUE, Action.STOP]
    monitor = Monitor(LoopGuardConfig())
    monitor.observe(_model_call(quota))
    decision = monitor.observe(_model_call(quota))
    (reason,) = decision.reasons
    assert reason.detector == "permanent_failure"
    assert reason.evidence["limit"] == "quota" and reason.evidence["model"] == "gpt-4o"
    assert "usage limit" in reason.message


def test_a_model_call_rate_limited_for_a_moment_then_answering_passes() -> None:
    short = ErrorInfo("RateLimitError", OPENAI_TPM, 429)
    steps = [[_model_call(short)], [_model_call(short)], [_model_call(None)]]
    steps += [[_model_call(short)], [_model_call(None)]]
    assert max(_tool_run(steps)) is Action.CONTINUE


def test_an_answer_between_two_quota_failures_of_a_model_restarts_the_count() -> None:
    quota = ErrorInfo("RateLimitError", OPENAI_QUOTA, 429)
    steps = [[_model_call(quota)], [_model_call(None)], [_model_call(quota)]]
    assert max(_tool_run(steps)) is Action.CONTINUE


# -- through the span processor, in two dialects --------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_spans_a_tool_at_its_weekly_limit_is_stopped_at_the_second_attempt(dialect: str) -> None:
    agent = SpanAgent(dialect)
    first = agent.failing_tool("web_search", {"query": QUERIES[0]}, WEEKLY)
    agent.tool("sleep", {"seconds": 60}, "")
    second = agent.failing_tool("web_search", {"query": QUERIES[1]}, WEEKLY)
    assert (first, second) == ("continue", "stop")
    assert "permanent_failure" in agent.last().detectors


@pytest.mark.parametrize("dialect", DIALECTS)
def test_spans_a_short_rate_limit_then_success_passes(dialect: str) -> None:
    agent = SpanAgent(dialect)
    actions = [agent.failing_tool("web_search", {"query": QUERIES[0]}, OPENAI_TPM)]
    actions.append(agent.tool("sleep", {"seconds": 2}, ""))
    actions.append(agent.failing_tool("web_search", {"query": QUERIES[0]}, OPENAI_TPM))
    actions.append(agent.tool("sleep", {"seconds": 4}, ""))
    actions.append(agent.tool("web_search", {"query": QUERIES[0]}, "3 flights found"))
    actions.append(agent.chat("BA117 leaves at 09:10."))
    # the third identical search is a repetition warning, as before; nothing more
    assert set(actions) <= {"continue", "warn"}
    assert {d for decision, _ in agent.decisions for d in decision.detectors} == {"repetition"}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_spans_a_model_out_of_quota_is_stopped_at_the_second_call(dialect: str) -> None:
    agent = SpanAgent(dialect)
    first = agent.failed_model_call(OPENAI_QUOTA)
    second = agent.failed_model_call(OPENAI_QUOTA)
    assert (first, second) == ("continue", "stop")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_spans_a_model_rate_limited_then_answering_passes(dialect: str) -> None:
    agent = SpanAgent(dialect)
    actions = [agent.failed_model_call(OPENAI_TPM), agent.failed_model_call(OPENAI_TPM)]
    actions.append(agent.chat("Here is the plan."))
    assert set(actions) == {"continue"}
