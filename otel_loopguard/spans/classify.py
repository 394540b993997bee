"""What a span is: tool call, model call, agent, workflow, handoff or other, in any dialect.

The rules are the dialect table's (:mod:`otel_loopguard.spans.dialects`), applied by rule
kind, each kind in table order, first match wins: the kind attributes (``gen_ai.operation
.name``, ``openinference.span.kind``, ``traceloop.span.kind``, ``mcp.method.name``), then
the span-name rules, then the marker attributes, then the handoff span names. A tool span
named ``transfer_to_<agent>`` is a handoff (unless its dialect is a transport).

Cost: attribute lookups only; a span with none of :data:`CLASS_KEYS` is decided by its name.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

from otel_loopguard.spans import dialects
from otel_loopguard.spans.dialects import CLASS_KEYS, LOWER, UPPER
from otel_loopguard.spans.view import SpanView


class SpanClass(str, enum.Enum):
    """What a span describes, as far as loop detection cares."""

    TOOL = "tool"
    LLM = "llm"
    AGENT = "agent"
    WORKFLOW = "workflow"
    HANDOFF = "handoff"
    OTHER = "other"


RUN_ROOT_CLASSES = frozenset({SpanClass.AGENT, SpanClass.WORKFLOW})

# Enum members as module constants: on Python 3.11 reading ``SpanClass.TOOL`` costs
# about 15 times a global read (the enum metaclass), and the hot paths read several per span.
#: the classes as plain module constants, for the per-span code here and in the readers
#: (``SpanClass.TOOL`` goes through the enum's metaclass and costs several global reads)
AGENT, HANDOFF, LLM = SpanClass.AGENT, SpanClass.HANDOFF, SpanClass.LLM
OTHER, TOOL, WORKFLOW = SpanClass.OTHER, SpanClass.TOOL, SpanClass.WORKFLOW


def _handoff_class(transport: bool) -> SpanClass | None:
    """The class whose spans are handoffs when their tool is a handoff tool: TOOL, except
    for a transport's spans (None matches no class)."""
    return None if transport else TOOL


# how a kind value is converted before its second lookup: 0 not at all, else upper or lower
_CASE_CODES: Final = {UPPER: 1, LOWER: 2}

# The table's rules with their classes as SpanClass members, each with the class that is
# checked for a handoff tool (see _handoff_class).
_KIND_RULES: Final[tuple[tuple[str, int, dict[str, SpanClass], SpanClass | None], ...]] = tuple(
    (
        key,
        _CASE_CODES.get(case, 0),
        {value: SpanClass(cls) for value, cls in kinds.items()},
        _handoff_class(transport),
    )
    for key, case, kinds, transport in dialects.KIND_RULES
)
# The first kind attribute is read before anything else, compared as written (the table
# checks that): most GenAI spans are decided by it.
_LEAD_KEY: Final = _KIND_RULES[0][0]
_LEAD_KINDS: Final = _KIND_RULES[0][2]
_LEAD_HANDOFF: Final = _KIND_RULES[0][3]
_LATER_KIND_RULES: Final = _KIND_RULES[1:]
_NAME_RULES: Final[tuple[tuple[str, bool, str, SpanClass, SpanClass | None], ...]] = tuple(
    (rule.prefix, rule.whole, rule.requires, SpanClass(rule.span_class), _handoff_class(t))
    for rule, t in dialects.NAME_RULES
)
# the name rules a span without any of CLASS_KEYS can match
_BARE_NAME_RULES: Final = tuple(rule for rule in _NAME_RULES if not rule[2])
# every rule's name (prefix) at once: one test in C skips the rules for most names
_NAME_PREFIXES: Final = tuple(rule[0] for rule in _NAME_RULES)
_BARE_NAME_PREFIXES: Final = tuple(rule[0] for rule in _BARE_NAME_RULES)
_MARKER_RULES: Final[tuple[tuple[str, SpanClass], ...]] = tuple(
    (key, SpanClass(cls)) for key, cls in dialects.MARKER_RULES
)
_TRANSPORT_TOOL_KINDS: Final = dialects.TRANSPORT_TOOL_KINDS
_TOOL_NAME_KEYS: Final = dialects.TOOL_NAME_KEYS
_LEAD_TOOL_KEY: Final = _TOOL_NAME_KEYS[0]
_TOOL_NAME_PREFIXES: Final = dialects.TOOL_NAME_PREFIXES
_HANDOFF_TOOL_PREFIXES: Final = dialects.HANDOFF_TOOL_PREFIXES
_HANDOFF_TOOL: Final = dialects.HANDOFF_TOOL
_NON_HANDOFF_TOOLS: Final = dialects.NON_HANDOFF_TOOLS
_HANDOFF_SPAN_PREFIXES: Final = dialects.HANDOFF_SPAN_PREFIXES
# a name's first letters, lower-cased, start with a handoff span prefix: one slice, one test
_HANDOFF_SPAN_HEAD: Final = max((len(prefix) for prefix in _HANDOFF_SPAN_PREFIXES), default=0)
_HANDOFF_SPAN_PATTERNS: Final = dialects.HANDOFF_SPAN_PATTERNS
_HANDOFF_TARGET_KEYS: Final = dialects.HANDOFF_TARGET_KEYS


def classify(view: SpanView) -> SpanClass:
    """The class of a span; first matching rule wins. Cheap: a handful of lookups."""
    return classify_parts(view.name, view.attributes)


def classify_parts(name: str, attrs: Mapping[str, Any]) -> SpanClass:
    """:func:`classify` for a name and attributes (no view needed, for ``on_start``)."""
    operation = attrs.get(_LEAD_KEY)
    if isinstance(operation, str):
        # GenAI semantic conventions, most GenAI spans: decided here
        found = _LEAD_KINDS.get(operation)
        if found is not None:
            if found is _LEAD_HANDOFF:  # a tool span: a transfer_to_<agent> tool hands off
                tool = attrs.get(_LEAD_TOOL_KEY)  # tool_name_in's first key, inlined
                if tool.__class__ is not str or not tool:
                    tool = tool_name_in(name, attrs)
                if tool and tool.startswith(_HANDOFF_TOOL_PREFIXES) and handoff_target(tool):
                    return HANDOFF
            return found
    elif attrs.keys().isdisjoint(CLASS_KEYS):
        # only the name rules that need no attribute, and handoff span names, can apply
        if name.startswith(_BARE_NAME_PREFIXES):
            for prefix, whole, _requires, cls, handoff_class in _BARE_NAME_RULES:
                if name == prefix if whole else name.startswith(prefix):
                    if cls is handoff_class and handoff_target(tool_name_in(name, attrs)):
                        return HANDOFF
                    return cls
        if name[:_HANDOFF_SPAN_HEAD].lower().startswith(_HANDOFF_SPAN_PREFIXES) and (
            _names_a_target(name, attrs)
        ):
            return HANDOFF
        return OTHER
    for key, case, kinds, handoff_class in _LATER_KIND_RULES:
        kind = attrs.get(key)
        if isinstance(kind, str):
            # the keys are in the rule's case: a value found as written needs no conversion
            found = kinds.get(kind)
            if found is None and case:
                found = kinds.get(kind.upper() if case == 1 else kind.lower())
            if found is not None:
                if found is handoff_class and handoff_target(tool_name_in(name, attrs)):
                    return HANDOFF
                return found
    if name.startswith(_NAME_PREFIXES):
        for prefix, whole, requires, cls, handoff_class in _NAME_RULES:
            if (name == prefix if whole else name.startswith(prefix)) and (
                not requires or requires in attrs
            ):
                if cls is handoff_class and handoff_target(tool_name_in(name, attrs)):
                    return HANDOFF
                return cls
    for key, cls in _MARKER_RULES:
        if isinstance(attrs.get(key), str):
            return cls
    if name[:_HANDOFF_SPAN_HEAD].lower().startswith(_HANDOFF_SPAN_PREFIXES) and (
        _names_a_target(name, attrs)
    ):
        return HANDOFF
    return OTHER


def is_mcp_tool_request(attrs: Mapping[str, Any]) -> bool:
    """An MCP ``tools/call`` request span (an MCP client library's, the SDK's ``MCP send``,
    or a server's): a transport's tool request. Inside another tool span it is that call
    seen from the transport, usually without its arguments: the enclosing tool span is the
    one to feed."""
    for key, value in _TRANSPORT_TOOL_KINDS:  # noqa: SIM110 (a loop: no generator per span)
        if attrs.get(key) == value:
            return True
    return False


def tool_name(view: SpanView) -> str | None:
    """The tool a tool span calls: its tool-name attribute, else from its span name."""
    return tool_name_in(view.name, view.attributes)


def tool_name_in(name: str, attrs: Mapping[str, Any]) -> str | None:
    """:func:`tool_name` for a name and attributes."""
    for key in _TOOL_NAME_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    for prefix in _TOOL_NAME_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return None


def handoff_target(name: str | None) -> str | None:
    """The agent a ``transfer_to_<agent>`` / ``handoff_to_<agent>`` tool hands off to.

    Google ADK's one transfer tool, ``transfer_to_agent``, and a Strands swarm's
    ``handoff_to_agent`` name no agent (the target is their ``agent_name`` argument): each is
    a plain tool call here, not a handoff to "agent"."""
    if not name or not name.startswith(_HANDOFF_TOOL_PREFIXES):
        return None
    if name in _NON_HANDOFF_TOOLS:
        return None
    match = _HANDOFF_TOOL.match(name)
    return match.group(1) if match else None


def _names_a_target(name: str, attrs: Mapping[str, Any]) -> bool:
    """A span named like a handoff span (``handoff...``) is one when its name or a
    handoff-target attribute names the target."""
    if handoff_span_match(name) is not None:
        return True
    return any(isinstance(attrs.get(key), str) for key in _HANDOFF_TARGET_KEYS)


def handoff_span_match(name: str) -> dict[str, str | None] | None:
    """The ``target`` (and ``source``, None when the name has none) a handoff span's name
    gives, or None when it matches no handoff span pattern."""
    for pattern in _HANDOFF_SPAN_PATTERNS:
        match = pattern.match(name)
        if match is not None:
            groups = match.groupdict()
            return {"target": groups.get("target"), "source": groups.get("source")}
    return None
