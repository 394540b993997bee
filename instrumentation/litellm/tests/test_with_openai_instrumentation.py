"""Two instrumentations in one process: our OpenAI SDK package below LiteLLM.

A call must count once, or token budgets and ``max_steps`` trip at half their size:

- ``azure/...``: LiteLLM calls the OpenAI SDK's ``chat.completions.create``, which
  ``otel-loopguard-openai`` wraps; the LiteLLM span is current then, and that package takes
  it for the request's span (its instrumentation scope is a gateway's): it runs its
  pre-flight check only, makes no span and reports nothing, streamed or not;
- ``openai/...``: LiteLLM 1.110 posts with the SDK's low-level ``client.post``, which the
  OpenAI package does not wrap: only the LiteLLM span reports the turn.

``scripts/run_tests.py`` installs that package here (``install-also`` in pyproject.toml).
"""

from __future__ import annotations

import litellm
import pytest
from conftest import TRACER
from otel_loopguard_openai import OpenAIInstrumentor
from otel_loopguard_testing.scripted_openai import Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

MESSAGES = [{"role": "user", "content": "hi"}]
ROUTES = {
    "openai": lambda base: {"model": "openai/gpt-test", "api_base": base},
    "azure": lambda base: {
        "model": "azure/gpt-test",
        "api_base": base.removesuffix("/v1"),
        "api_version": "2024-10-21",
    },
}


def _call(request: dict, stream: bool) -> None:
    if not stream:
        litellm.completion(**request)
        return
    for _chunk in litellm.completion(
        **request, stream=True, stream_options={"include_usage": True}
    ):
        pass


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_call_through_the_openai_sdk_counts_once(make_loopguard, serve, route, stream):
    # 50 tokens a call, 3 calls: 150 under a 160 budget; counted twice the run stops early
    harness = make_loopguard(mode="enforce", token_budget=160, max_steps=3)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=harness.provider)
    api = serve([Turn(text="ok", input_tokens=40, output_tokens=10)] * 4)
    request = {**ROUTES[route](api.base), "messages": MESSAGES, "api_key": "test-key"}
    try:
        with get_guard().agent_run(TRACER, "assistant"):
            for _ in range(3):
                _call(request, stream)
            with pytest.raises(LoopGuardInterrupt):  # max_steps: the 4th is never sent
                _call(request, stream)
    finally:
        instrumentor.uninstrument()

    assert len(api.requests) == 3
    (run,) = harness.spans("invoke_agent")
    assert run.attributes["gen_ai.usage.input_tokens"] == 120
    assert run.attributes["gen_ai.usage.output_tokens"] == 30
    assert run.attributes["loopguard.run.state"] == "max_steps"
    ours = [s for s in harness.spans("chat ") if s.instrumentation_scope.name.endswith("litellm")]
    assert len(ours) == 4
    assert all(s.attributes["gen_ai.usage.input_tokens"] == 40 for s in ours[:3])
    below = [s for s in harness.spans("chat ") if s not in ours]
    assert below == []
    harness.assert_every_span_ended_once()
