"""kit.conversation: a framework's attributes keyed as the span processor keys its spans."""

from __future__ import annotations

from otel_loopguard.kit.conversation import conversation_in
from otel_loopguard.spans.identity import conversation_in as spans_conversation_in


def test_the_conversation_id_and_the_session_id_are_read() -> None:
    assert conversation_in({"gen_ai.conversation.id": "c-1"}) == "c-1"
    assert conversation_in({"session.id": "s-1", "user.id": "u"}) == "s-1"


def test_an_integer_id_is_a_string_and_empty_or_other_values_are_none() -> None:
    assert conversation_in({"session.id": 42}) == "42"
    assert conversation_in({"session.id": ""}) is None
    assert conversation_in({"session.id": True}) is None
    assert conversation_in({"user.id": "u"}) is None
    assert conversation_in({}) is None


def test_it_agrees_with_the_span_side() -> None:
    for attributes in (
        {"gen_ai.conversation.id": "a", "session.id": "b"},
        {"traceloop.association.properties.thread_id": "t"},
        {"session.id": 7},
        {"other": "x"},
    ):
        assert conversation_in(attributes) == spans_conversation_in(attributes)
