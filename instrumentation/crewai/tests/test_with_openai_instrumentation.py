"""Two instrumentations in one process: our OpenAI SDK package below CrewAI.

CrewAI's own OpenAI provider (``LLM(model="gpt-…")``) calls the OpenAI SDK, which
``otel-loopguard-openai`` instruments too: that package reports each model call. This
package reports each LLM call as well, unless a package below already did (the run's step
counter moved during the call). A call must count once, or token budgets and ``max_steps``
trip at half their size.

The OpenAI API is the OpenAI suite's scripted one (``instrumentation/openai/tests``) behind a
loopback HTTP server, since CrewAI makes its own client: the one stand-in, because the
network is out of reach. ``scripts/run_tests.py`` installs that package here
(``install-also`` in pyproject.toml).
"""

from __future__ import annotations

from crewai import LLM
from otel_loopguard_openai import OpenAIInstrumentor
from otel_loopguard_testing.openai_below import (
    TEAM_PLAN_ANSWER,
    assert_each_turn_counted_once,
    team_plan_api,
)
from otel_loopguard_testing.scripted_openai import ScriptedAPI
from scripted_crew import CountingSearch, make_crew


def _run_crew(harness, api: ScriptedAPI, search: CountingSearch) -> object:
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=harness.provider)
    base_url, stop = api.serve()
    try:
        llm = LLM(model="gpt-4o-mini", base_url=base_url, api_key="test-key", max_retries=0)
        return make_crew(search, None, llm=llm, max_iter=5).kickoff()
    finally:
        stop()
        instrumentor.uninstrument()


def test_a_model_call_the_openai_package_reported_counts_once(make_loopguard) -> None:
    # 110 tokens in two calls: under a 150 budget; counted twice (220) the crew would stop
    harness = make_loopguard(mode="enforce", token_budget=150, max_steps=2)
    api = team_plan_api("pricing", model="gpt-4o-mini")
    search = CountingSearch(lambda query, n: TEAM_PLAN_ANSWER)

    result = _run_crew(harness, api, search)

    assert TEAM_PLAN_ANSWER in str(result)
    assert search.executions == ["pricing"]
    assert_each_turn_counted_once(harness, api)
