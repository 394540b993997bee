"""Classification and the dialect table it reads: every entry well-formed, every key of
every entry in the lookups the readers use, in table order."""

from __future__ import annotations

import dataclasses
import re

import pytest

from otel_loopguard.spans import dialects
from otel_loopguard.spans.classify import SpanClass, classify
from otel_loopguard.spans.dialects import CASES, DIALECTS, LOWER, UPPER, Dialect
from otel_loopguard.spans.view import SpanView

TRACE = "0af7651916cd43dd8448eb211c80319c"


def view(name: str, attributes: dict, **kwargs) -> SpanView:
    return SpanView(
        name=name, trace_id=TRACE, span_id="b7ad6b7169203331", attributes=attributes, **kwargs
    )


@pytest.mark.parametrize(
    ("name", "attributes", "expected"),
    [
        ("execute_tool search", {"gen_ai.operation.name": "execute_tool"}, SpanClass.TOOL),
        ("invoke_agent planner", {"gen_ai.operation.name": "invoke_agent"}, SpanClass.AGENT),
        ("invoke_workflow w", {"gen_ai.operation.name": "invoke_workflow"}, SpanClass.WORKFLOW),
        ("chat gpt-4o", {"gen_ai.operation.name": "chat"}, SpanClass.LLM),
        ("generate_content g", {"gen_ai.operation.name": "generate_content"}, SpanClass.LLM),
        ("search", {"openinference.span.kind": "TOOL", "tool.name": "search"}, SpanClass.TOOL),
        ("ChatOpenAI", {"openinference.span.kind": "LLM"}, SpanClass.LLM),
        ("AgentExecutor", {"openinference.span.kind": "CHAIN"}, SpanClass.WORKFLOW),
        ("planner", {"openinference.span.kind": "AGENT"}, SpanClass.AGENT),
        ("search.tool", {"traceloop.span.kind": "tool"}, SpanClass.TOOL),
        ("research.agent", {"traceloop.span.kind": "agent"}, SpanClass.AGENT),
        ("pipeline.workflow", {"traceloop.span.kind": "workflow"}, SpanClass.WORKFLOW),
        ("step.task", {"traceloop.span.kind": "task"}, SpanClass.OTHER),
        ("openai.chat", {"llm.request.type": "chat"}, SpanClass.LLM),
        ("running tool", {"gen_ai.tool.name": "search", "tool_arguments": "{}"}, SpanClass.TOOL),
        ("agent run", {"agent_name": "support"}, SpanClass.AGENT),
        ("tools/call search", {"mcp.method.name": "tools/call"}, SpanClass.TOOL),
        ("tools/list", {"mcp.method.name": "tools/list"}, SpanClass.OTHER),
        (
            "execute_tool transfer_to_billing",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "transfer_to_billing"},
            SpanClass.HANDOFF,
        ),
        ("Handoff: triage → billing", {}, SpanClass.HANDOFF),
        ("GET /users", {"http.request.method": "GET"}, SpanClass.OTHER),
    ],
)
def test_classify_every_dialect(name: str, attributes: dict, expected: SpanClass) -> None:
    assert classify(view(name, attributes)) is expected


# Dialect fields that are not a plain tuple of keys, each read by its own lookup below;
# every other tuple field has the lookup named like it in capitals (tool_name_keys ->
# TOOL_NAME_KEYS): a new concept without its lookup fails here.
_SPECIAL = {
    "name",
    "kind_key",
    "kind_case",
    "kinds",
    "transport",
    "span_names",
    "marker_keys",
    "kind_argument_keys",
    "kind_result_keys",
    "agent_kinds",
    "output_message_prefix",
    "output_call_prefix",
    "input_message_prefix",
    "handoff_span_prefix",
    "handoff_span_patterns",
}
_KEY_FIELDS = [field.name for field in dataclasses.fields(Dialect) if field.name not in _SPECIAL]
_CLASSES = {cls.value for cls in SpanClass}


def _strings(values: object) -> bool:
    return isinstance(values, tuple) and all(isinstance(v, str) and v for v in values)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_every_dialect_entry_is_consistent(dialect: Dialect) -> None:
    assert isinstance(dialect.name, str) and dialect.name
    for field in _KEY_FIELDS:
        assert _strings(getattr(dialect, field)), field
    for field in ("kind_argument_keys", "kind_result_keys", "agent_kinds"):
        assert _strings(getattr(dialect, field)), field
    for pattern in dialect.handoff_span_patterns:
        assert "(?P<target>" in pattern and re.compile(pattern)
    # what a span is: every value a known span class
    assert dialect.kind_case in CASES
    assert bool(dialect.kind_key) == bool(dialect.kinds)
    for value, cls in dialect.kinds.items():
        assert isinstance(value, str) and value and cls in _CLASSES
        assert value == {UPPER: value.upper(), LOWER: value.lower()}.get(dialect.kind_case, value)
    for key, cls in dialect.marker_keys.items():
        assert isinstance(key, str) and key and cls in _CLASSES
    for rule in dialect.span_names:
        assert isinstance(rule.prefix, str) and rule.prefix and rule.span_class in _CLASSES
        assert isinstance(rule.requires, str)
    # kind-scoped content and agent kinds need a kind attribute saying so
    if dialect.kind_argument_keys or dialect.kind_result_keys:
        assert "tool" in dialect.kinds.values()
    assert set(dialect.agent_kinds) <= set(dialect.kinds)
    if dialect.output_message_prefix or dialect.output_call_prefix:
        assert dialect.output_message_prefix.count("{i}") == 1
        assert dialect.output_call_prefix.count("{j}") == 1
    if dialect.input_message_prefix:
        assert dialect.input_message_prefix.count("{i}") == 1


def _in_table_order(field: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(key for d in DIALECTS for key in getattr(d, field)))


@pytest.mark.parametrize("field", _KEY_FIELDS)
def test_each_lookup_holds_every_key_of_every_entry_in_table_order(field: str) -> None:
    lookup = getattr(dialects, field.upper())
    if field == "placeholders":  # every entry's, and those of no dialect in particular
        assert lookup == set(_in_table_order(field)) | set(dialects.COMMON_PLACEHOLDERS)
    elif isinstance(lookup, frozenset):
        assert lookup == set(_in_table_order(field))
    else:
        assert lookup == _in_table_order(field)  # first match wins: the table's order


def test_the_rule_lookups_hold_every_rule_of_every_entry() -> None:
    kind_rules = [(d.kind_key, d.kind_case, dict(d.kinds), d.transport) for d in DIALECTS]
    assert list(dialects.KIND_RULES) == [rule for rule in kind_rules if rule[0]]
    assert [rule for rule, _ in dialects.NAME_RULES] == [r for d in DIALECTS for r in d.span_names]
    markers = [(key, cls) for d in DIALECTS for key, cls in d.marker_keys.items()]
    assert list(dialects.MARKER_RULES) == markers
    for d in DIALECTS:
        # every attribute a rule needs is in the one set test that skips other spans
        needed = {d.kind_key} - {""} | set(d.marker_keys)
        needed |= {rule.requires for rule in d.span_names if rule.requires}
        assert needed <= dialects.CLASS_KEYS
        for value, cls in d.kinds.items():
            if cls == "tool":
                for key in d.kind_argument_keys:
                    assert (d.kind_key, value, key) in dialects.KIND_ARGUMENT_KEYS
                for key in d.kind_result_keys:
                    assert (d.kind_key, value, key) in dialects.KIND_RESULT_KEYS
                if d.transport:
                    assert (d.kind_key, value) in dialects.TRANSPORT_TOOL_KINDS
        if d.agent_kinds:
            assert (d.kind_key, d.agent_kinds) in dialects.AGENT_KINDS
            assert d.kind_key in dialects.AGENT_KEYS
        assert set(d.agent_name_keys) <= dialects.AGENT_KEYS
        assert set(d.conversation_keys) <= dialects.CONVERSATION_KEY_SET
        if d.output_message_prefix:
            head, tail = d.output_message_prefix.split("{i}")
            assert any(e[:2] == (head, tail) for e in dialects.INDEXED_OUTPUT_MESSAGES)
        if d.handoff_span_prefix:
            assert d.handoff_span_prefix.lower() in dialects.HANDOFF_SPAN_PREFIXES
        patterns = [p.pattern for p in dialects.HANDOFF_SPAN_PATTERNS]
        assert all(pattern in patterns for pattern in d.handoff_span_patterns)
    # the lead kind attribute, read first on every span, is the first entry's, as written
    assert dialects.KIND_RULES[0][0] == DIALECTS[0].kind_key == "gen_ai.operation.name"
    assert dialects.KIND_RULES[0][1] == dialects.EXACT
