"""Another instrumentation applied before ours (issue 29): ``Pregel.stream`` / ``astream`` and
``BaseChatModel.stream`` / ``astream`` return its iterable-only proxies (``__iter__`` /
``__aiter__`` without ``__next__`` / ``__anext__``, as OpenInference's wrapt proxies are).
Nothing raises into the graph, observe or enforce, invoked or streamed, plain or async, and
their proxies are iterated, not bypassed."""

from __future__ import annotations

import asyncio

import pytest
from agents import (
    RUN_CONFIG,
    USER_INPUT,
    ToolCounter,
    build_react_graph,
    final_answer,
    looping_script,
    productive_script,
)
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.iterable_proxies import theirs_applied_first

from otel_loopguard import LoopGuardInterrupt

TARGETS = [
    ("langgraph.pregel.main", "Pregel.stream"),
    ("langgraph.pregel.main", "Pregel.astream"),
    ("langchain_core.language_models.chat_models", "BaseChatModel.stream"),
    ("langchain_core.language_models.chat_models", "BaseChatModel.astream"),
]


def _run(graph, entry: str):
    if entry == "invoke":
        return graph.invoke(USER_INPUT, RUN_CONFIG)
    if entry == "ainvoke":
        return asyncio.run(graph.ainvoke(USER_INPUT, RUN_CONFIG))
    if entry == "stream":
        return list(graph.stream(USER_INPUT, RUN_CONFIG, stream_mode="values"))[-1]

    async def streamed():
        return [
            state async for state in graph.astream(USER_INPUT, RUN_CONFIG, stream_mode="values")
        ]

    return asyncio.run(streamed())[-1]


ENTRIES = ["invoke", "ainvoke", "stream", "astream"]


@pytest.mark.parametrize("mode", ["observe", "enforce"])
@pytest.mark.parametrize("entry", ENTRIES)
def test_a_productive_graph_through_their_proxies_is_untouched(make_loopguard, mode, entry):
    harness = make_loopguard(mode=mode)
    count = metric_counter(harness)
    with theirs_applied_first(harness, TARGETS) as seen:
        state = _run(build_react_graph(productive_script(), ToolCounter()), entry)
    assert final_answer(state)
    assert seen  # their proxies were iterated
    assert not harness.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_looping_graph_through_their_proxies_is_interrupted(make_loopguard, entry):
    harness = make_loopguard(mode="enforce")
    counter = ToolCounter()
    with theirs_applied_first(harness, TARGETS), pytest.raises(LoopGuardInterrupt):
        _run(build_react_graph(looping_script(), counter), entry)
    assert 1 <= counter["search"] <= 4
