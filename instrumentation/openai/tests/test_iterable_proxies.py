"""Another instrumentation applied before ours (issue 29): ``create`` returns its
iterable-only proxy of the SDK's stream (``__iter__`` / ``__aiter__`` without ``__next__`` /
``__anext__``, as OpenInference's wrapt proxies are). Nothing raises into the caller, observe
or enforce, sync or async, their proxy is iterated, not bypassed, and a stream is judged."""

from __future__ import annotations

import asyncio

import pytest
from conftest import TRACER
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.iterable_proxies import theirs_applied_first
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

MODULE = "openai.resources.chat.completions.completions"
TARGETS = [(MODULE, "Completions.create"), (MODULE, "AsyncCompletions.create")]
REQUEST = {
    "model": "gpt-test",
    "messages": [{"role": "user", "content": "write the report"}],
    "stream": True,
    "stream_options": {"include_usage": True},
}


def _texts(api: ScriptedAPI, turns: int, client: str) -> list[str]:
    """``turns`` streamed answers inside one agent run."""

    def text_of(chunks: list) -> str:
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    async def streamed() -> list[str]:
        openai = api.async_client()
        texts = []
        with get_guard().agent_run(TRACER, "writer"):
            for _ in range(turns):
                stream = await openai.chat.completions.create(**REQUEST)
                texts.append(text_of([chunk async for chunk in stream]))
        return texts

    if client == "async":
        return asyncio.run(streamed())
    openai = api.client()
    with get_guard().agent_run(TRACER, "writer"):
        return [text_of(list(openai.chat.completions.create(**REQUEST))) for _ in range(turns)]


@pytest.mark.parametrize("mode", ["observe", "enforce"])
@pytest.mark.parametrize("client", ["sync", "async"])
def test_a_stream_through_their_proxy_is_untouched(make_loopguard, mode, client):
    harness = make_loopguard(mode=mode)
    count = metric_counter(harness)
    api = ScriptedAPI([Turn(text="the report"), Turn(text="the summary")])
    with theirs_applied_first(harness, TARGETS) as seen:
        texts = _texts(api, 2, client)
    assert texts == ["the report", "the summary"]
    assert seen  # their proxy was iterated
    assert len(harness.spans("chat ")) == 2  # each stream judged once, its span ended
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("client", ["sync", "async"])
def test_truncated_streams_through_their_proxy_are_stopped(make_loopguard, client):
    harness = make_loopguard(mode="enforce", max_tokens_recoveries=1, truncation_stops=True)
    api = ScriptedAPI([Turn(text="long text", finish_reason="length")] * 4)
    with theirs_applied_first(harness, TARGETS), pytest.raises(LoopGuardInterrupt):
        _texts(api, 4, client)
    assert len(api.requests) <= 4
