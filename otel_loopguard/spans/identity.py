"""Who and which run a span belongs to, as the span says: its agent and its conversation.

The run identity itself (conversation, else root span, else trace) is
:func:`~otel_loopguard.engine.run_identity.run_identity`; these readers give it its inputs,
with the attribute names of the dialect table (:mod:`otel_loopguard.spans.dialects`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from otel_loopguard.spans import dialects
from otel_loopguard.spans.dialects import CONVERSATION_KEY_SET
from otel_loopguard.spans.view import SpanView

_AGENT_KEYS: Final = dialects.AGENT_KEYS
_AGENT_NAME_KEYS: Final = dialects.AGENT_NAME_KEYS
_AGENT_NAME_PREFIXES: Final = dialects.AGENT_NAME_PREFIXES
_AGENT_KINDS: Final = dialects.AGENT_KINDS
_ENTITY_NAME_KEYS: Final = dialects.ENTITY_NAME_KEYS
_CONVERSATION_KEYS: Final = dialects.CONVERSATION_KEYS


def agent_name(view: SpanView) -> str | None:
    """The agent a span belongs to or describes, when the span says so."""
    attrs = view.attributes
    name = view.name
    if attrs.keys().isdisjoint(_AGENT_KEYS):  # tool spans mostly: only the name can say
        return _agent_in_name(name) if name.startswith(_AGENT_NAME_PREFIXES) else None
    for key in _AGENT_NAME_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    for key, kinds in _AGENT_KINDS:
        if attrs.get(key) in kinds:
            for entity_key in _ENTITY_NAME_KEYS:
                value = attrs.get(entity_key)
                if isinstance(value, str) and value:
                    return value
            return name or None
    return _agent_in_name(name) if name.startswith(_AGENT_NAME_PREFIXES) else None


def _agent_in_name(name: str) -> str | None:
    """The agent's name after an agent span's name prefix (``invoke_agent <name>``)."""
    for prefix in _AGENT_NAME_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return None


def conversation_id(view: SpanView) -> str | None:
    """``gen_ai.conversation.id``, OpenInference ``session.id`` or a traceloop association."""
    return conversation_in(view.attributes)


def conversation_in(attrs: Mapping[str, Any]) -> str | None:
    """:func:`conversation_id` for bare attributes (no view needed, for ``on_start``)."""
    if attrs.keys().isdisjoint(CONVERSATION_KEY_SET):  # most spans: one set test in C
        return None
    for key in _CONVERSATION_KEYS:
        value = attrs.get(key)
        if value is None:
            continue
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None
