"""A layer below LiteLLM that reports the turn itself: the turn still counts once.

LiteLLM's custom-provider interface (``CustomLLM`` in ``litellm.custom_provider_map``) is
how many in-house and vendor providers plug in; a provider SDK with its own OpenTelemetry
tracing makes a GenAI ``chat`` span per request, which the span processor reads as a
model turn. That span ends inside the LiteLLM call's ``model_turn`` (a stream: inside the
model turn of the chunk read during which it ended), so this package does not report the
turn again (and marks its own span managed, so the processor skips it too).
"""

from __future__ import annotations

import litellm
import pytest
from conftest import TESTBED, TRACER
from litellm import CustomLLM
from litellm.types.utils import ModelResponse
from opentelemetry.trace import SpanKind

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

MESSAGES = [{"role": "user", "content": "hi"}]
USAGE = {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50}


def _vendor_span():
    """The span a provider SDK with its own tracing makes per request."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "vendor",
        "gen_ai.request.model": "large",
        "gen_ai.usage.input_tokens": USAGE["prompt_tokens"],
        "gen_ai.usage.output_tokens": USAGE["completion_tokens"],
        "gen_ai.response.finish_reasons": ["stop"],
    }
    tracer = TESTBED.provider.get_tracer("vendor-sdk")
    return tracer.start_as_current_span("chat large", kind=SpanKind.CLIENT, attributes=attributes)


class TracedVendorModel(CustomLLM):
    """A provider whose SDK traces its own requests, plugged into LiteLLM."""

    def completion(self, *args, **kwargs):
        with _vendor_span():
            pass
        return ModelResponse(
            model="large",
            choices=[{"index": 0, "finish_reason": "stop", "message": {"content": "hello"}}],
            usage=USAGE,
        )

    def streaming(self, *args, **kwargs):
        # the SDK's span covers the whole stream and ends after its last chunk is read
        with _vendor_span():
            yield {
                "index": 0,
                "text": "hel",
                "is_finished": False,
                "finish_reason": "",
                "usage": None,
                "tool_use": None,
            }
            yield {
                "index": 0,
                "text": "lo",
                "is_finished": True,
                "finish_reason": "stop",
                "usage": USAGE,
                "tool_use": None,
            }


@pytest.fixture
def vendor_provider():
    previous = litellm.custom_provider_map
    litellm.custom_provider_map = [{"provider": "vendor", "custom_handler": TracedVendorModel()}]
    yield
    litellm.custom_provider_map = previous


def _call(stream: bool) -> str:
    if not stream:
        response = litellm.completion(model="vendor/large", messages=MESSAGES)
        return response.choices[0].message.content
    chunks = litellm.completion(model="vendor/large", messages=MESSAGES, stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_turn_the_provider_sdk_traced_counts_once(make_loopguard, vendor_provider, stream):
    # counted twice, the second call would already pass max_steps=3
    lg = make_loopguard(mode="enforce", max_steps=3)

    with get_guard().agent_run(TRACER, "assistant"):
        for _ in range(3):
            assert _call(stream) == "hello"
        with pytest.raises(LoopGuardInterrupt):
            _call(stream)

    (run,) = lg.spans("invoke_agent")
    assert run.attributes["gen_ai.usage.input_tokens"] == 120
    assert run.attributes["gen_ai.usage.output_tokens"] == 30
    assert run.attributes["loopguard.run.state"] == "max_steps"
    ours = [s for s in lg.spans("chat ") if s.instrumentation_scope.name.endswith("litellm")]
    assert len(ours) == 4  # three answered, the fourth vetoed before it was sent
    assert ours[0].attributes["gen_ai.provider.name"] == "vendor"
    assert ours[0].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert ours[-1].attributes["error.type"] == "LoopGuardInterrupt"
    lg.assert_every_span_ended_once()
