"""Another instrumentation applied before ours (issue 29): Agno's run streams (``_run_stream``,
``_arun_stream``) and the model's response streams return its iterable-only proxies
(``__iter__`` / ``__aiter__`` without ``__next__`` / ``__anext__``, as OpenInference's wrapt
proxies are). Nothing raises into the agent, observe or enforce, however it is run, and their
proxies are iterated, not bypassed."""

from __future__ import annotations

import pytest
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.iterable_proxies import theirs_applied_first
from scripted_models import CountingSearch, looping_agent, productive_agent
from test_agent import RUNS, answer

from otel_loopguard.engine.decisions import LoopGuardInterrupt

TARGETS = [
    ("agno.agent._run", "_run_stream"),
    ("agno.agent._run", "_arun_stream"),
    ("agno.models.base", "Model.process_response_stream"),
    ("agno.models.base", "Model.aprocess_response_stream"),
]


@pytest.mark.parametrize("mode", ["observe", "enforce"])
@pytest.mark.parametrize("how", ["run-stream", "arun-stream"])
def test_a_productive_run_through_their_proxies_is_untouched(make_loopguard, mode, how):
    harness = make_loopguard(mode=mode)
    count = metric_counter(harness)
    with theirs_applied_first(harness, TARGETS) as seen:
        search = CountingSearch(lambda query, n: f"result {n} for {query}")
        outcome = RUNS[how](productive_agent(search))
    assert answer(outcome) == "found after 3 searches"
    assert seen  # their proxies were iterated
    assert not harness.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("how", ["run-stream", "arun-stream"])
def test_a_looping_run_through_their_proxies_is_interrupted(make_loopguard, how):
    harness = make_loopguard(mode="enforce")
    search = CountingSearch()
    with theirs_applied_first(harness, TARGETS), pytest.raises(LoopGuardInterrupt):
        RUNS[how](looping_agent(search))
    assert 1 <= len(search.executions) <= 4
