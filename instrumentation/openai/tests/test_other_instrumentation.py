"""When another OpenAI instrumentation already makes the ``chat`` span, we make none.

These tests open the other instrumentation's span by hand, with the attributes it sets,
around the real SDK call: the same situation our wrapper meets, in this suite's venv.
compat/openai-v2 runs the real opentelemetry-instrumentation-openai-v2 2.4b0 beside us (it
imports httpx, which the httpx2-based SDK no longer brings: that suite pins it).
"""

from __future__ import annotations

import pytest
from conftest import TRACER
from opentelemetry.trace import SpanKind
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

THEIR_ATTRIBUTES = {
    "gen_ai.operation.name": "chat",
    "gen_ai.system": "openai",
    "gen_ai.request.model": "gpt-test",
}


def _call_inside_their_span(client):
    """What the other instrumentation does: its span around the call, usage set after."""
    with TRACER.start_as_current_span(
        "chat gpt-test", kind=SpanKind.CLIENT, attributes=THEIR_ATTRIBUTES
    ) as span:
        completion = client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "x"}]
        )
        span.set_attribute("gen_ai.usage.input_tokens", completion.usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", completion.usage.completion_tokens)
        span.set_attribute("gen_ai.response.finish_reasons", ["stop"])
        return completion


def test_no_second_span_inside_another_instrumentations_span(make_loopguard):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(text="hi")])

    with get_guard().agent_run(TRACER, "assistant"):
        _call_inside_their_span(api.client())

    assert len(lg.spans("chat ")) == 1
    assert len(api.requests) == 1


def test_preflight_still_enforced_inside_another_instrumentations_span(make_loopguard):
    make_loopguard(mode="enforce", token_budget=10)
    api = ScriptedAPI([Turn(text="hi", input_tokens=8, output_tokens=4), Turn(text="again")])
    client = api.client()

    with pytest.raises(LoopGuardInterrupt), get_guard().agent_run(TRACER, "assistant"):
        _call_inside_their_span(client)  # 12 tokens, fed to the monitor by the processor
        _call_inside_their_span(client)

    assert len(api.requests) == 1  # the second request never left
