"""The one dialect mapping: which spans are tool calls, model calls, agents and handoffs.

Users run many GenAI instrumentations; this module reads the ones they actually run and
turns a :class:`~otel_loopguard.spans.view.SpanView` into core events:

* OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name`` = ``execute_tool``,
  ``invoke_agent``, ``invoke_workflow``, ``chat``, ``text_completion``,
  ``generate_content``; ``gen_ai.tool.call.arguments`` / ``.result``; ``error.type``);
* OpenInference (``openinference.span.kind`` TOOL / LLM / AGENT / CHAIN, ``tool.name``,
  ``input.value`` / ``output.value``, ``llm.token_count.*``, ``llm.output_messages.*``);
* OpenLLMetry (``traceloop.span.kind`` tool / agent / workflow / task,
  ``traceloop.entity.*``, ``gen_ai.completion.N.*``, ``llm.request.type``);
* pydantic-ai / Logfire (``running tool`` spans with ``tool_arguments`` /
  ``tool_response`` in instrumentation version 1, ``execute_tool`` in later versions);
* MCP (``mcp.method.name`` = ``tools/call``; a result with ``isError`` sets
  ``error.type=tool_error``);
* handoffs: ``transfer_to_<agent>`` / ``handoff_to_<agent>`` tool calls and the handoff
  spans of agent SDKs (``handoff to X`` / ``Handoff: A → B``).

Cost: attribute lookups only. Arguments and results are handed to
:mod:`otel_loopguard.engine.signatures` untouched (it caps its own cost); a JSON-looking string
is decoded only when it is short. Only ``gen_ai.output.messages`` is parsed, and only when
it is small enough and mentions a tool call.

When a span does not record content (GenAI instrumentations leave arguments and results
out unless the user opts in), the event's signature is made unique to the span: without the
arguments we cannot claim that two calls were the same, and a false "loop" is worse than a
missed one. ``details["content_recorded"]`` is then ``False``; counts, budgets, tool-name
patterns and errors still work.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from typing import Any

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind, tool_error
from otel_loopguard.engine.signatures import call_signature, output_signature
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

_GENAI_OPERATIONS = {
    "execute_tool": SpanClass.TOOL,
    "invoke_agent": SpanClass.AGENT,
    "invoke_workflow": SpanClass.WORKFLOW,
    "chat": SpanClass.LLM,
    "text_completion": SpanClass.LLM,
    "generate_content": SpanClass.LLM,
    "handoff": SpanClass.HANDOFF,  # not (yet) in the conventions; Sentry's agents SDK spans
}
_OPENINFERENCE_KINDS = {
    "TOOL": SpanClass.TOOL,
    "LLM": SpanClass.LLM,
    "AGENT": SpanClass.AGENT,
    "CHAIN": SpanClass.WORKFLOW,
}
_TRACELOOP_KINDS = {
    "tool": SpanClass.TOOL,
    "agent": SpanClass.AGENT,
    "workflow": SpanClass.WORKFLOW,
    "llm": SpanClass.LLM,
}
_HANDOFF_TOOL = re.compile(r"^(?:transfer|handoff)_to_(.+)$")
# tools that name no agent (the target is an argument): Google ADK's one transfer tool,
# Strands' swarm handoff tool
_GENERIC_HANDOFF_TOOLS = frozenset({"transfer_to_agent", "handoff_to_agent"})
# agent-SDK handoff spans: "Handoff: a → b" (Logfire), "handoff from a to b" (Sentry),
# "handoff to b"; a bare "Handoff" span (MLflow) carries from_agent / to_agent attributes
_HANDOFF_SPAN = re.compile(
    r"^handoff(?::\s*(?P<from>.+?)\s*(?:→|->)\s*(?P<to>.+)"
    r"|\s+from\s+(?P<source>.+?)\s+to\s+(?P<dest>.+)"
    r"|\s+to\s+(?P<target>.+))$",
    re.IGNORECASE,
)

# Above these sizes a string is not decoded: its signature is computed from the text.
_JSON_DECODE_LIMIT = 16_384
_OUTPUT_MESSAGES_LIMIT = 262_144
# bounds on indexed attribute families (gen_ai.completion.N.tool_calls.M...)
_MAX_INDEXED = 64


# Enum members as module constants: on Python 3.11 reading ``SpanClass.TOOL`` costs
# about 15 times a global read (the enum metaclass), and the hot paths read several per span.
_KIND_HANDOFF = EventKind.HANDOFF
_KIND_LLM_RESPONSE = EventKind.LLM_RESPONSE
_KIND_TOOL_CALL = EventKind.TOOL_CALL
_KIND_TOOL_RESULT = EventKind.TOOL_RESULT
_CLASS_AGENT = SpanClass.AGENT
_CLASS_HANDOFF = SpanClass.HANDOFF
_CLASS_LLM = SpanClass.LLM
_CLASS_OTHER = SpanClass.OTHER
_CLASS_TOOL = SpanClass.TOOL


def classify(view: SpanView) -> SpanClass:
    """The class of a span; first matching dialect wins. Cheap: a handful of lookups."""
    return classify_parts(view.name, view.attributes)


# Every attribute key a non-name rule below needs. Most spans of a service (HTTP, database,
# messaging) have none of them: one set operation in C then decides, instead of a dozen
# lookups and string tests per span, twice (start and end) for every span in the process.
CLASS_KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "openinference.span.kind",
        "traceloop.span.kind",
        "mcp.method.name",
        "gen_ai.tool.name",
        "llm.request.type",
    }
)


def classify_parts(name: str, attrs: Mapping[str, Any]) -> SpanClass:
    """:func:`classify` for a name and attributes (no view needed, for ``on_start``)."""
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str):
        # GenAI semantic conventions, most GenAI spans: decided here
        found = _GENAI_OPERATIONS.get(operation)
        if found is not None:
            if found is _CLASS_TOOL and handoff_target(_tool_name(name, attrs)):
                return _CLASS_HANDOFF
            return found
    elif attrs.keys().isdisjoint(CLASS_KEYS) and (
        name[:7].lower() != "handoff" and name != "agent run"
    ):
        # only the name rule of invoke_agent spans can still apply
        return _CLASS_AGENT if name.startswith("invoke_agent") else _CLASS_OTHER
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str):
        found = _OPENINFERENCE_KINDS.get(kind.upper())
        if found is not None:
            if found is _CLASS_TOOL and handoff_target(_tool_name(name, attrs)):
                return _CLASS_HANDOFF
            return found
    kind = attrs.get("traceloop.span.kind")
    if isinstance(kind, str):
        found = _TRACELOOP_KINDS.get(kind.lower())
        if found is not None:
            if found is _CLASS_TOOL and handoff_target(_tool_name(name, attrs)):
                return _CLASS_HANDOFF
            return found
    if attrs.get("mcp.method.name") == "tools/call":
        return _CLASS_TOOL
    if name.startswith(("running tool", "execute_tool")) and "gen_ai.tool.name" in attrs:
        if handoff_target(_tool_name(name, attrs)):
            return _CLASS_HANDOFF
        return _CLASS_TOOL
    if name.startswith("invoke_agent") or (name == "agent run" and "agent_name" in attrs):
        return _CLASS_AGENT
    if isinstance(attrs.get("llm.request.type"), str):
        return _CLASS_LLM
    if name[:7].lower() == "handoff" and (
        _HANDOFF_SPAN.match(name) or isinstance(attrs.get("to_agent"), str)
    ):
        return _CLASS_HANDOFF
    return _CLASS_OTHER


def is_mcp_tool_request(attrs: Mapping[str, Any]) -> bool:
    """An MCP ``tools/call`` request span (an MCP client library's, the SDK's ``MCP send``,
    or a server's). Inside another tool span it is that call seen from the transport,
    usually without its arguments: the enclosing tool span is the one to feed."""
    return attrs.get("mcp.method.name") == "tools/call"


def tool_name(view: SpanView) -> str | None:
    return _tool_name(view.name, view.attributes)


def _tool_name(name: str, attrs: Mapping[str, Any]) -> str | None:
    for key in ("gen_ai.tool.name", "tool.name", "traceloop.entity.name"):
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    for prefix in ("execute_tool ", "tools/call ", "running tool: "):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return None


_AGENT_KEYS = frozenset(
    {
        "gen_ai.agent.name",
        "agent_name",
        "agent.name",
        "openinference.span.kind",
        "traceloop.span.kind",
    }
)


def agent_name(view: SpanView) -> str | None:
    """The agent a span belongs to or describes, when the span says so."""
    attrs = view.attributes
    name = view.name
    if attrs.keys().isdisjoint(_AGENT_KEYS):  # tool spans mostly: only the name can say
        return name[13:] if name.startswith("invoke_agent ") and len(name) > 13 else None
    for key in ("gen_ai.agent.name", "agent_name", "agent.name"):
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    if attrs.get("openinference.span.kind") == "AGENT" or attrs.get("traceloop.span.kind") in (
        "agent",
        "workflow",
    ):
        value = attrs.get("traceloop.entity.name")
        if isinstance(value, str) and value:
            return value
        return view.name or None
    name = view.name
    if name.startswith("invoke_agent ") and len(name) > 13:
        return name[13:]
    return None


_CONVERSATION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",
    "traceloop.association.properties.conversation_id",
    "traceloop.association.properties.session_id",
    "traceloop.association.properties.thread_id",
    "traceloop.association.properties.chat_id",
)


def conversation_id(view: SpanView) -> str | None:
    """``gen_ai.conversation.id``, OpenInference ``session.id`` or a traceloop association."""
    return conversation_in(view.attributes)


CONVERSATION_KEY_SET = frozenset(_CONVERSATION_KEYS)


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


def span_to_events(
    view: SpanView,
    run_id: str,
    config: LoopGuardConfig,
    *,
    actor: str | None = None,
    span_class: SpanClass | None = None,
) -> list[Event]:
    """The core events a span stands for (empty for agents, workflows and other spans).

    ``actor`` is the enclosing agent's name when the span does not carry one (tool spans
    usually do not). Never raises for odd attribute values; unknown shapes are skipped.
    """
    cls = classify(view) if span_class is None else span_class
    if cls is _CLASS_TOOL:
        return _tool_events(view, run_id, config, actor)
    if cls is _CLASS_LLM:
        return [_llm_event(view, run_id, config, actor)]
    if cls is _CLASS_HANDOFF:
        event = _handoff_event(view, run_id, actor)
        handoff = [event] if event is not None else []
        if tool_name(view) is not None and handoff_target(tool_name(view)):
            # a transfer_to_<agent> tool call is a tool call too, exactly as the gate feeds
            # it on-line: call, result, then the handoff
            return [*_tool_events(view, run_id, config, actor), *handoff]
        return handoff
    return []


# -- tool spans ------------------------------------------------------------------------------

# Our gate writes the signatures (hashes, never content) on the tool spans it makes, so a
# saved trace replays with the same repetition and no-progress evidence even though the
# arguments and results themselves were not exported.
CALL_SIGNATURE_ATTRIBUTE = "loopguard.tool.call.signature"
CALL_NEAR_KEY_ATTRIBUTE = "loopguard.tool.call.near_key"
RESULT_SIGNATURE_ATTRIBUTE = "loopguard.tool.result.signature"
RESULT_NEAR_KEY_ATTRIBUTE = "loopguard.tool.result.near_key"

_ARGUMENT_KEYS = ("gen_ai.tool.call.arguments", "tool_arguments", "traceloop.entity.input")
_RESULT_KEYS = ("gen_ai.tool.call.result", "tool_response", "traceloop.entity.output")


def tool_arguments(view: SpanView) -> Any:
    attrs = view.attributes
    for key in _ARGUMENT_KEYS:
        if key in attrs:
            return _decode(attrs[key])
    if attrs.get("openinference.span.kind") == "TOOL" and "input.value" in attrs:
        return _decode(attrs["input.value"])
    return _MISSING


def tool_output(view: SpanView) -> Any:
    attrs = view.attributes
    for key in _RESULT_KEYS:
        if key in attrs:
            return _decode(attrs[key])
    if attrs.get("openinference.span.kind") == "TOOL" and "output.value" in attrs:
        return _decode(attrs["output.value"])
    return _MISSING


def error_info(view: SpanView) -> ErrorInfo | None:
    """The failure a span records: ``error.type``, status ERROR, ``exception`` events."""
    attrs = view.attributes
    error_type = attrs.get("error.type")
    exc_type: str | None = None
    exc_message: str | None = None
    for event in view.events:
        if event.name == "exception":
            event_attrs = event.attributes
            exc_type = _text(event_attrs.get("exception.type")) or exc_type
            exc_message = _text(event_attrs.get("exception.message")) or exc_message
    if error_type is None and not view.is_error and exc_type is None:
        return None
    status_code = None
    for key in ("http.response.status_code", "http.status_code", "rpc.grpc.status_code"):
        value = attrs.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            status_code = value
            break
    return ErrorInfo(
        type=_text(error_type) or exc_type or ("error" if view.is_error else None),
        message=exc_message or view.status_description,
        status_code=status_code,
    )


def _tool_events(
    view: SpanView, run_id: str, config: LoopGuardConfig, actor: str | None
) -> list[Event]:
    # Events are built directly rather than through events.tool_call/tool_result: this runs
    # for every tool span on the host's hot path, and the builders' keyword plumbing showed
    # up in benchmarks/span_overhead.py. The signatures are the same functions.
    attrs = view.attributes
    name = _tool_name(view.name, attrs) or view.name or "unknown"
    actor = agent_name(view) or actor
    call_id = _text(attrs.get("gen_ai.tool.call.id")) or _text(attrs.get("tool_call.id"))
    arguments = tool_arguments(view)
    end = view.end_time_unix_nano
    timestamp = end / 1e9 if isinstance(end, int) else None
    max_chars = config.signature_max_chars
    call = _signed_event(
        _KIND_TOOL_CALL, view, run_id, actor, name, call_id, timestamp, arguments, max_chars
    )
    # error_info's cheap part inline: most tool spans succeed (no error.type, status not
    # error, no span events)
    if view.events or view.status_code == "error" or "error.type" in attrs:
        error = error_info(view)
        if error is not None:
            outcome = tool_error(
                run_id,
                name,
                error,
                actor=actor,
                call_id=call_id,
                max_chars=max_chars,
                trace_id=view.trace_id or None,
                span_id=view.span_id or None,
                timestamp=timestamp,
            )
            return [call, outcome]
    outcome = _signed_event(
        _KIND_TOOL_RESULT,
        view,
        run_id,
        actor,
        name,
        call_id,
        timestamp,
        tool_output(view),
        max_chars,
    )
    return [call, outcome]


def _signed_event(
    kind: EventKind,
    view: SpanView,
    run_id: str,
    actor: str | None,
    tool: str,
    call_id: str | None,
    timestamp: float | None,
    content: Any,
    max_chars: int,
) -> Event:
    """A tool span's call (``content`` = its arguments) or result event, signed once.

    Content on the span is signed; else the signature our gate recorded on it is used;
    else the signature is made unique to this span (``details["content_recorded"]`` is
    then False), so two spans without content never count as the same call.
    """
    is_call = kind is _KIND_TOOL_CALL
    recorded = True
    if content is not _MISSING:
        if is_call:
            exact, near = call_signature(tool, content, max_chars=max_chars)
        else:
            exact, near = output_signature(content, max_chars=max_chars)
    else:
        content = None
        key = CALL_SIGNATURE_ATTRIBUTE if is_call else RESULT_SIGNATURE_ATTRIBUTE
        exact, near, recorded = _recorded_signature(view, key)
        if not recorded:
            if is_call:
                exact, near = call_signature(tool, None, max_chars=max_chars)
            else:
                exact, near = output_signature(None, max_chars=max_chars)
            exact, near = _unique_to_span(view, exact, near)
    # positional up to call_id, the rest by keyword (see the comment in _tool_events)
    event = Event(
        kind,
        run_id,
        actor,
        tool,
        exact,
        near,
        call_id,
        trace_id=view.trace_id or None,
        span_id=view.span_id or None,
        timestamp=timestamp,
    )
    if is_call:
        event.arguments = content
    else:
        event.output = content
    if not recorded:
        event.details["content_recorded"] = False
    return event


def _recorded_signature(view: SpanView, exact_key: str) -> tuple[str, str, bool]:
    """The signature our gate recorded on a span without content (``exact_key``, and the
    near key beside it): ``(exact, near, True)``, else ``("", "", False)``."""
    attrs = view.attributes
    recorded = attrs.get(exact_key)
    if isinstance(recorded, str) and recorded:
        near = attrs.get(_NEAR_KEYS[exact_key])
        return recorded, near if isinstance(near, str) and near else recorded, True
    return "", "", False


def _unique_to_span(view: SpanView, exact: str, near: str) -> tuple[str, str]:
    """A signature of unrecorded content made unique to this span: two spans without
    content never count as the same call."""
    suffix = f"#unrecorded:{view.span_id}"
    return exact + suffix, near + suffix


_NEAR_KEYS = {
    CALL_SIGNATURE_ATTRIBUTE: CALL_NEAR_KEY_ATTRIBUTE,
    RESULT_SIGNATURE_ATTRIBUTE: RESULT_NEAR_KEY_ATTRIBUTE,
}


# -- handoffs --------------------------------------------------------------------------------


def handoff_target(name: str | None) -> str | None:
    """The agent a ``transfer_to_<agent>`` / ``handoff_to_<agent>`` tool hands off to.

    Google ADK's one transfer tool, ``transfer_to_agent``, and a Strands swarm's
    ``handoff_to_agent`` name no agent (the target is their ``agent_name`` argument): each is
    a plain tool call here, not a handoff to "agent"."""
    if not name or not name.startswith(("transfer_to_", "handoff_to_")):
        return None
    if name in _GENERIC_HANDOFF_TOOLS:
        return None
    match = _HANDOFF_TOOL.match(name)
    return match.group(1) if match else None


def _handoff_event(view: SpanView, run_id: str, actor: str | None) -> Event | None:
    attrs = view.attributes
    source = _text(attrs.get("from_agent")) or _text(attrs.get("gen_ai.agent.name")) or actor
    target = _text(attrs.get("to_agent")) or handoff_target(tool_name(view))
    if target is None:
        match = _HANDOFF_SPAN.match(view.name)
        if match is not None:
            target = match.group("to") or match.group("dest") or match.group("target")
            source = match.group("from") or match.group("source") or source
    if not target:
        return None
    return handoff_event(
        run_id, source, target, _text(attrs.get("gen_ai.tool.call.id")), **_origin(view)
    )


def handoff_event(
    run_id: str, source: str | None, target: str, call_id: str | None = None, **origin: Any
) -> Event:
    """A handoff from ``source`` to ``target``; shared by the mapping and the gate."""
    return Event(
        _KIND_HANDOFF,
        run_id,
        actor=source,
        target_agent=target,
        signature=f"handoff:{source or '?'}->{target}",
        near_key=f"handoff:{source or '?'}->{target}",
        call_id=call_id,
        **origin,
    )


# -- model spans -----------------------------------------------------------------------------


def _llm_event(view: SpanView, run_id: str, config: LoopGuardConfig, actor: str | None) -> Event:
    attrs = view.attributes
    requested, text_seen, text_empty = _requested_calls(attrs, config.signature_max_chars)
    finish = _finish_reason(attrs)
    event = Event(
        _KIND_LLM_RESPONSE,
        run_id,
        actor=agent_name(view) or actor,
        model=_text(attrs.get("gen_ai.response.model"))
        or _text(attrs.get("gen_ai.request.model"))
        or _text(attrs.get("llm.model_name")),
        finish_reason=finish,
        input_tokens=_int(attrs, "gen_ai.usage.input_tokens", "llm.token_count.prompt")
        or _int(attrs, "gen_ai.usage.prompt_tokens"),
        output_tokens=_int(attrs, "gen_ai.usage.output_tokens", "llm.token_count.completion")
        or _int(attrs, "gen_ai.usage.completion_tokens"),
        empty=bool(text_seen and text_empty and not requested),
        requested_tool_calls=tuple(sorted(requested)) if requested else None,
        **_origin(view),
    )
    error = error_info(view)
    if error is not None:
        event.error = error
    return event


def _finish_reason(attrs: Mapping[str, Any]) -> str | None:
    reasons = attrs.get("gen_ai.response.finish_reasons")
    if isinstance(reasons, str):
        return reasons or None
    if isinstance(reasons, (tuple, list)):
        for reason in reasons:
            if isinstance(reason, str) and reason:
                return reason
    return _text(attrs.get("gen_ai.completion.0.finish_reason")) or _text(
        attrs.get("llm.response.finish_reason")
    )


def _requested_calls(attrs: Mapping[str, Any], max_chars: int) -> tuple[list[str], bool, bool]:
    """Signatures of the tool calls a model turn asked for, and whether its text was empty.

    Returns ``(signatures, text_seen, text_empty)``; ``text_seen`` is False when the span
    records no output content at all (then emptiness is unknown, not true).
    """
    calls: list[tuple[str, Any]] = []
    text_seen = False
    text_parts: list[str] = []

    messages = attrs.get("gen_ai.output.messages")
    if isinstance(messages, str) and len(messages) <= _OUTPUT_MESSAGES_LIMIT:
        text_seen = True
        try:
            parsed = json.loads(messages)
        except ValueError:
            parsed = None
        for message in parsed if isinstance(parsed, list) else ():
            parts = message.get("parts") if isinstance(message, dict) else None
            for part in parts if isinstance(parts, list) else ():
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "tool_call" and isinstance(part.get("name"), str):
                    calls.append((part["name"], part.get("arguments")))
                elif part.get("type") == "text" and isinstance(part.get("content"), str):
                    text_parts.append(part["content"])

    # OpenInference: llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.*
    for i in range(_MAX_INDEXED):
        prefix = f"llm.output_messages.{i}.message."
        content = attrs.get(prefix + "content")
        role = attrs.get(prefix + "role")
        if content is None and role is None:
            break
        text_seen = True
        if isinstance(content, str):
            text_parts.append(content)
        for j in range(_MAX_INDEXED):
            call_prefix = f"{prefix}tool_calls.{j}.tool_call.function."
            name = attrs.get(call_prefix + "name")
            if not isinstance(name, str):
                break
            calls.append((name, _decode(attrs.get(call_prefix + "arguments"))))

    # OpenLLMetry: gen_ai.completion.{i}.content / .tool_calls.{j}.name / .arguments
    for i in range(_MAX_INDEXED):
        prefix = f"gen_ai.completion.{i}."
        content = attrs.get(prefix + "content")
        role = attrs.get(prefix + "role")
        if content is None and role is None:
            break
        text_seen = True
        if isinstance(content, str):
            text_parts.append(content)
        for j in range(_MAX_INDEXED):
            name = attrs.get(f"{prefix}tool_calls.{j}.name")
            if not isinstance(name, str):
                break
            calls.append((name, _decode(attrs.get(f"{prefix}tool_calls.{j}.arguments"))))

    signatures = [call_signature(name, args, max_chars=max_chars)[0] for name, args in calls]
    text_empty = not any(part.strip() for part in text_parts)
    return signatures, text_seen, text_empty


# -- helpers ---------------------------------------------------------------------------------


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<not recorded>"


_MISSING: Any = _Missing()


def _origin(view: SpanView) -> dict[str, Any]:
    end = view.end_time_unix_nano
    return {
        "trace_id": view.trace_id or None,
        "span_id": view.span_id or None,
        "timestamp": end / 1e9 if isinstance(end, int) else None,
    }


def _decode(value: Any) -> Any:
    """Decode a short JSON object/array string; anything else is returned as it is."""
    if isinstance(value, str) and 1 < len(value) <= _JSON_DECODE_LIMIT:
        first = value[0]
        if (first == "{" or first == "[") and value[-1] in _CLOSERS:
            # no white space around it (what instrumentations write): the decoder's scanner
            # directly, without json.loads' wrapping (two regular expressions, an extra
            # call); anything it does not consume whole goes the long way below
            try:
                decoded, end = _scan_once(value, 0)
            except (StopIteration, ValueError):
                return value
            if end == len(value):
                return decoded
        first = value.lstrip()[:1]
        if first in ("{", "["):
            try:
                return json.loads(value)
            except ValueError:
                return value
    return value


_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # CPython API
_CLOSERS = frozenset("}]")


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _int(attrs: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value == value and abs(value) < 1e15:
            return int(value)
    return None
