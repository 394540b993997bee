"""Another instrumentation applied before ours (issue 29): the SDK's ``request`` returns its
iterable-only proxy of the stream (``__iter__`` / ``__aiter__`` without ``__next__`` /
``__anext__``, as OpenInference's wrapt proxies are). Nothing raises into the agent, observe
or enforce, sync or async, and their proxy is iterated, not bypassed."""

from __future__ import annotations

import asyncio

import pytest
from agents import ToolBox, looping, productive, run_agent, run_agent_async
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.iterable_proxies import theirs_applied_first
from scripted_api import ScriptedMessagesAPI

from otel_loopguard import LoopGuardInterrupt

TARGETS = [
    ("anthropic._base_client", "SyncAPIClient.request"),
    ("anthropic._base_client", "AsyncAPIClient.request"),
]


def _run(api: ScriptedMessagesAPI, tools: ToolBox, client: str):
    if client == "sync":
        return run_agent(api.client(sdk_tracing=False), tools, stream=True)
    return asyncio.run(run_agent_async(api.async_client(sdk_tracing=False), tools, stream=True))


@pytest.mark.parametrize("mode", ["observe", "enforce"])
@pytest.mark.parametrize("client", ["sync", "async"])
def test_a_productive_stream_through_their_proxy_is_untouched(make_loopguard, mode, client):
    harness = make_loopguard(mode=mode)
    count = metric_counter(harness)
    with theirs_applied_first(harness, TARGETS) as seen:
        tools = ToolBox()
        result = _run(ScriptedMessagesAPI(productive()), tools, client)
    assert result
    assert seen  # their proxy was iterated
    assert not harness.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("client", ["sync", "async"])
def test_a_looping_stream_through_their_proxy_is_interrupted(make_loopguard, client):
    harness = make_loopguard(mode="enforce")
    tools = ToolBox()
    with theirs_applied_first(harness, TARGETS), pytest.raises(LoopGuardInterrupt):
        _run(ScriptedMessagesAPI(looping()), tools, client)
    assert 1 <= tools["search"] <= 4
