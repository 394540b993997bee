"""Real-OpenTelemetry test helpers of the otel-loopguard suites (not shipped to users).

One module per job; every name a suite uses is importable from here too:

- :mod:`.lifecycle`: :class:`SpanLifecycle`, every span started ends exactly once.
- :mod:`.harness`: :class:`Testbed` (the process's pipeline), :class:`Harness` (one test's
  view of it), :func:`harness_fixtures`, :func:`instrumentor_fixture`,
  :func:`openai_package_fixture`, :func:`assert_expected_build`, :func:`wrappers_removed`.
- :mod:`.metrics`: :func:`metric_counter`, the guard's metrics on a real meter provider.
- :mod:`.receiver`: :class:`OTLPReceiver`, an OTLP/HTTP trace receiver on a loopback port.
- :mod:`.redis_server`: :class:`RedisServer`, a real ``redis-server`` on a free loopback
  port (kill, pause, resume, restart), the ``redis_server`` fixture.
- :mod:`.instrument_runner`: programs run under the real ``opentelemetry-instrument``.
- :mod:`.scripted_models`: what the framework suites' scripted models and tools share
  (``Answer``, :func:`always`, :class:`CountingSearch`, :func:`forbidden`,
  :func:`sdk_chat_attributes`).
- :mod:`.agent_checks`: what the agent-framework suites check alike after a run.
- :mod:`.program_checks`: what the suites check alike on a program run under
  ``opentelemetry-instrument`` (its outcome and console spans, or its process and the
  spans a receiver got); :func:`run_script_with_receiver`.
- :mod:`.threads`: :func:`run_in_threads`, one worker per argument on threads of its own.
- :mod:`.chat_loop`: the agent loop an application writes over an OpenAI-shaped chat API,
  and what the chat-loop suites check alike.
- :mod:`.scripted_openai`: a scripted OpenAI API behind the SDK's own HTTP client (or on a
  loopback port), the one stand-in of these tests. It imports ``openai``, so it is not
  imported here: ``from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn``.
"""

from __future__ import annotations

from .agent_checks import (
    assert_cancelled_by_the_consumer,
    assert_completed_without_stop,
    assert_genai_agent_and_tool_spans,
    assert_inner_agent_joined_the_run,
    assert_loop_interrupted,
    assert_productive_run,
    assert_ran_untouched_by_our_error,
    assert_runs_of_their_own,
    assert_stop_recorded_not_enforced,
    assert_stopped_on_a_permanent_failure,
    assert_stopped_on_the_third_result,
    assert_third_identical_call_vetoed,
    unreadable,
    unreadable_by,
    wrapped,
)
from .chat_loop import (
    CHAT_TOOL_SCHEMAS,
    ChatLoopOutcome,
    assert_genai_chat_span,
    assert_run_totals,
    assert_third_request_vetoed_by_the_budget,
    assert_truncated_streams_replanned_then_stopped,
    assert_vetoed_by_the_token_budget,
    close_a_stream_early,
    run_chat_tool_loop,
)
from .harness import (
    Harness,
    Testbed,
    assert_expected_build,
    harness_fixtures,
    instrumentor_fixture,
    openai_package_fixture,
    wrappers_removed,
)
from .instrument_runner import (
    console_decisions,
    console_spans,
    printed_count,
    program_outcome,
    reported_outcome,
    run_console_program,
    run_suite_app,
    run_under_opentelemetry_instrument,
)
from .lifecycle import SpanLifecycle
from .metrics import metric_counter
from .program_checks import (
    Spans,
    assert_console_budget_stopped,
    assert_console_handoff_cycle_stopped,
    assert_console_loop_observed,
    assert_console_loop_stopped,
    assert_console_search_loop_observed,
    assert_console_search_loop_stopped,
    assert_console_streamed_run_completed,
    assert_console_usage,
    assert_interrupted_process,
    console_actions,
    console_named,
    run_script_with_receiver,
)
from .receiver import OTLPReceiver, ReceivedSpan, received_decisions
from .redis_server import RedisServer, redis_server, running_redis_server
from .scripted_models import (
    QUESTION,
    Answer,
    CountingSearch,
    always,
    forbidden,
    sdk_chat_attributes,
)
from .threads import run_in_threads

__all__ = [
    "CHAT_TOOL_SCHEMAS",
    "QUESTION",
    "Answer",
    "ChatLoopOutcome",
    "CountingSearch",
    "Harness",
    "OTLPReceiver",
    "ReceivedSpan",
    "RedisServer",
    "SpanLifecycle",
    "Spans",
    "Testbed",
    "always",
    "assert_cancelled_by_the_consumer",
    "assert_completed_without_stop",
    "assert_console_budget_stopped",
    "assert_console_handoff_cycle_stopped",
    "assert_console_loop_observed",
    "assert_console_loop_stopped",
    "assert_console_search_loop_observed",
    "assert_console_search_loop_stopped",
    "assert_console_streamed_run_completed",
    "assert_console_usage",
    "assert_expected_build",
    "assert_genai_agent_and_tool_spans",
    "assert_genai_chat_span",
    "assert_inner_agent_joined_the_run",
    "assert_interrupted_process",
    "assert_loop_interrupted",
    "assert_productive_run",
    "assert_ran_untouched_by_our_error",
    "assert_run_totals",
    "assert_runs_of_their_own",
    "assert_stop_recorded_not_enforced",
    "assert_stopped_on_a_permanent_failure",
    "assert_stopped_on_the_third_result",
    "assert_third_identical_call_vetoed",
    "assert_third_request_vetoed_by_the_budget",
    "assert_truncated_streams_replanned_then_stopped",
    "assert_vetoed_by_the_token_budget",
    "close_a_stream_early",
    "console_actions",
    "console_decisions",
    "console_named",
    "console_spans",
    "forbidden",
    "harness_fixtures",
    "instrumentor_fixture",
    "metric_counter",
    "openai_package_fixture",
    "printed_count",
    "program_outcome",
    "received_decisions",
    "redis_server",
    "reported_outcome",
    "run_chat_tool_loop",
    "run_console_program",
    "run_in_threads",
    "run_script_with_receiver",
    "run_suite_app",
    "run_under_opentelemetry_instrument",
    "running_redis_server",
    "sdk_chat_attributes",
    "unreadable",
    "unreadable_by",
    "wrapped",
    "wrappers_removed",
]
