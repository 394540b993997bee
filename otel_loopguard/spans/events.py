"""Events from spans: the core events a tool, model or handoff span stands for.

:func:`span_to_events` turns a :class:`~otel_loopguard.spans.view.SpanView` of any dialect
(:mod:`otel_loopguard.spans.dialects`) into the engine's events: a tool span into its call
and its result or error, a model span into its response (finish reason, tokens, the tool
calls it asked for, empty or not), a handoff span or ``transfer_to_<agent>`` tool into a
handoff. It also names our own attributes: the signatures our gate records on its spans.

Cost: attribute lookups only. Arguments and results are handed to
:mod:`otel_loopguard.engine.signatures` untouched (it caps its own cost); a JSON-looking string
is decoded only when it is short. Output messages in one JSON string
(``gen_ai.output.messages``) are parsed only when small enough.

When a span does not record content (GenAI instrumentations leave arguments and results
out unless the user opts in), the event's signature is made unique to the span: without the
arguments we cannot claim that two calls were the same, and a false "loop" is worse than a
missed one. ``details["content_recorded"]`` is then ``False``; counts, budgets, tool-name
patterns and errors still work.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.detectors.fingerprint_table import fingerprint
from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind, tool_error, tool_event
from otel_loopguard.engine.signatures import (
    call_signature,
    output_exact_signature,
    text_signature,
    text_sketch,
)
from otel_loopguard.spans import dialects
from otel_loopguard.spans.classify import (
    HANDOFF,
    LLM,
    TOOL,
    SpanClass,
    classify,
    handoff_span_match,
    handoff_target,
    tool_name,
    tool_name_in,
)
from otel_loopguard.spans.identity import agent_name
from otel_loopguard.spans.payloads import (
    unwrap_arguments,
    unwrap_result,
    wrapped_failure,
    wrapped_tool_name,
)
from otel_loopguard.spans.view import SpanView

# Above these sizes a string is not decoded: its signature is computed from the text.
_JSON_DECODE_LIMIT = 16_384
_OUTPUT_MESSAGES_LIMIT = 262_144
# bounds on indexed attribute families (gen_ai.completion.N.tool_calls.M...)
_MAX_INDEXED = 64

# OpenTelemetry's general conventions, the same in every dialect
_STATUS_CODE_KEYS = ("http.response.status_code", "http.status_code", "rpc.grpc.status_code")

# the dialect table's lookups (module constants: read per span)
_CALL_ID_KEYS: Final = dialects.CALL_ID_KEYS
_LEAD_CALL_ID_KEY: Final = _CALL_ID_KEYS[0]
_ARGUMENT_KEYS: Final = dialects.ARGUMENT_KEYS
_RESULT_KEYS: Final = dialects.RESULT_KEYS
_KIND_ARGUMENT_KEYS: Final = dialects.KIND_ARGUMENT_KEYS
_KIND_RESULT_KEYS: Final = dialects.KIND_RESULT_KEYS
_MODEL_KEYS: Final = dialects.MODEL_KEYS
_INPUT_TOKEN_KEYS: Final = dialects.INPUT_TOKEN_KEYS
_OUTPUT_TOKEN_KEYS: Final = dialects.OUTPUT_TOKEN_KEYS
_LEGACY_INPUT_TOKEN_KEYS: Final = dialects.LEGACY_INPUT_TOKEN_KEYS
_LEGACY_OUTPUT_TOKEN_KEYS: Final = dialects.LEGACY_OUTPUT_TOKEN_KEYS
_FINISH_REASONS_KEYS: Final = dialects.FINISH_REASONS_KEYS
_FINISH_REASON_KEYS: Final = dialects.FINISH_REASON_KEYS
_OUTPUT_MESSAGES_KEYS: Final = dialects.OUTPUT_MESSAGES_KEYS
_USAGE_JSON_KEYS: Final = dialects.USAGE_JSON_KEYS
_USAGE_JSON_INPUT: Final = dialects.USAGE_JSON_INPUT
_USAGE_JSON_OUTPUT: Final = dialects.USAGE_JSON_OUTPUT
_CLASS_NAMED_TOOLS: Final = dialects.CLASS_NAMED_TOOLS
_INDEXED_OUTPUT_MESSAGES: Final = dialects.INDEXED_OUTPUT_MESSAGES
_INPUT_MESSAGES_KEYS: Final = dialects.INPUT_MESSAGES_KEYS
_INDEXED_INPUT_MESSAGES: Final = dialects.INDEXED_INPUT_MESSAGES
_HANDOFF_SOURCE_KEYS: Final = dialects.HANDOFF_SOURCE_KEYS
_HANDOFF_TARGET_KEYS: Final = dialects.HANDOFF_TARGET_KEYS
_HANDOFF_CALL_ID_KEYS: Final = dialects.HANDOFF_CALL_ID_KEYS
_PLACEHOLDERS: Final = dialects.PLACEHOLDERS
_EMPTY_WHEN_HIDDEN: Final = dialects.EMPTY_WHEN_HIDDEN_KEYS
_AGENT_KEYS: Final = dialects.AGENT_KEYS
_AGENT_NAME_PREFIXES: Final = dialects.AGENT_NAME_PREFIXES

# Enum members as module constants: on Python 3.11 reading ``SpanClass.TOOL`` costs
# about 15 times a global read (the enum metaclass), and the hot paths read several per span.
_KIND_HANDOFF = EventKind.HANDOFF
_KIND_LLM_RESPONSE = EventKind.LLM_RESPONSE
_KIND_TOOL_CALL = EventKind.TOOL_CALL
_KIND_TOOL_RESULT = EventKind.TOOL_RESULT


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
    if cls is TOOL:
        events = _tool_events(view, run_id, config, actor)
        cache = _DELEGATION  # delegation_tools(config), inlined: one dict lookup per span
        matcher = cache.matcher
        if config.delegation_tools is not cache.tools:
            matcher = delegation_tools(config)
        if matcher[events[0].tool_name]:
            delegation = delegation_event(events[0], events[1])
            if delegation is not None:
                events.append(delegation)
        return events
    if cls is LLM:
        if view.status_code == "error" and _vetoed(view):
            return []  # never sent: our pre-flight refused it (a STOP), no model turn
        return [_llm_event(view, run_id, config, actor)]
    if cls is HANDOFF:
        event = _handoff_event(view, run_id, actor)
        handoff = [event] if event is not None else []
        if tool_name(view) is not None and handoff_target(tool_name(view)):
            # a transfer_to_<agent> tool call is a tool call too, exactly as the gate feeds
            # it on-line: call, result, then the handoff
            return [*_tool_events(view, run_id, config, actor), *handoff]
        return handoff
    return []


#: ``error.type`` of a call our gate refused, and the end of the exception type another
#: instrumentation records (qualified: ``otel_loopguard.engine.interrupt.LoopGuardInterrupt``)
_INTERRUPT: Final = "LoopGuardInterrupt"
_INTERRUPT_SUFFIX: Final = "." + _INTERRUPT


def _vetoed(view: SpanView) -> bool:
    """A model span of a request our pre-flight refused (a STOP in enforce mode): never
    sent, so not a model turn. Our packages' span says so in ``error.type``; another
    instrumentation's span around or inside the call ends with our interrupt recorded as
    its exception (OpenInference's Anthropic and LiteLLM spans, Logfire's OpenAI span)."""
    error_type = view.attributes.get("error.type")
    if error_type == _INTERRUPT:
        return True
    for event in view.events:
        if event.name == "exception":
            found = event.attributes.get("exception.type")
            if found.__class__ is str and (
                found == _INTERRUPT or found.endswith(_INTERRUPT_SUFFIX)  # type: ignore[union-attr]
            ):
                return True
    return False


# -- tool spans ------------------------------------------------------------------------------

# Our gate writes the signatures (hashes, never content) on the tool spans it makes, so a
# saved trace replays with the same repetition and no-progress evidence even though the
# arguments and results themselves were not exported.
CALL_SIGNATURE_ATTRIBUTE = "loopguard.tool.call.signature"
CALL_NEAR_KEY_ATTRIBUTE = "loopguard.tool.call.near_key"
RESULT_SIGNATURE_ATTRIBUTE = "loopguard.tool.result.signature"
RESULT_NEAR_KEY_ATTRIBUTE = "loopguard.tool.result.near_key"


def tool_arguments(view: SpanView) -> Any:
    """A tool span's arguments (a short JSON string decoded), or the not-recorded marker
    (also for a hidden-content placeholder such as ``__REDACTED__``). Without an argument
    attribute, the content of its ``gen_ai.tool.message`` event (see :func:`_in_events`)."""
    found = _recorded(view.attributes, _ARGUMENT_KEYS, _KIND_ARGUMENT_KEYS)
    if found is _MISSING and view.events:
        return _in_events(view, _TOOL_INPUT_EVENT)
    return found


def tool_output(view: SpanView) -> Any:
    """A tool span's result (a short JSON string decoded), or the not-recorded marker
    (also for a hidden-content placeholder). Without a result attribute, the message of
    its ``gen_ai.choice`` event (see :func:`_in_events`)."""
    found = _recorded(view.attributes, _RESULT_KEYS, _KIND_RESULT_KEYS)
    if found is _MISSING and view.events:
        return _in_events(view, _TOOL_OUTPUT_EVENT)
    return found


# Content in span events, as the GenAI conventions had it before the opt-in attributes and
# as Strands still writes it by default (without ``gen_ai_latest_experimental`` in
# ``OTEL_SEMCONV_STABILITY_OPT_IN``): a tool span's input in a ``gen_ai.tool.message`` event
# (``content``), its output in a ``gen_ai.choice`` event (``message``). Read only when the
# span has no attribute of its own for it; a span without events costs one test.
_TOOL_INPUT_EVENT: Final = "gen_ai.tool.message"
_TOOL_OUTPUT_EVENT: Final = "gen_ai.choice"
_EVENT_CONTENT_KEYS: Final = ("content", "message")


def _in_events(view: SpanView, event_name: str) -> Any:
    """The content (``content``, else ``message``) of the span's last event named
    ``event_name``, decoded by :func:`_content`, else the not-recorded marker."""
    for event in reversed(view.events):
        if event.name == event_name:
            event_attrs = event.attributes
            for key in _EVENT_CONTENT_KEYS:
                if key in event_attrs:
                    return _content(event_attrs[key])
    return _MISSING


def _recorded(
    attrs: Mapping[str, Any],
    keys: tuple[str, ...],
    kind_keys: tuple[tuple[str, str, str], ...],
) -> Any:
    """The first of ``keys`` a span has, else the first key of its tool kind's dialect
    (``kind_keys``: kind attribute, its tool value, key), decoded by :func:`_content`."""
    for key in keys:
        if key in attrs:
            value = attrs[key]
            if value.__class__ is str:  # _content, inlined: two values of every tool span
                if value in _PLACEHOLDERS or (value == "{}" and key in _EMPTY_WHEN_HIDDEN):
                    return _MISSING  # written in place of content not recorded
                first = value[:1]  # only JSON-looking text is decoded (plain text: no call)
                if first == "{" or first == "[" or first.isspace():
                    return _decode(value)
                return value
            return _content(value)
    for kind_key, tool_kind, key in kind_keys:
        if attrs.get(kind_key) == tool_kind and key in attrs:
            return _content(attrs[key])
    return _MISSING


def _content(value: Any) -> Any:
    """A recorded value decoded, or the not-recorded marker for a placeholder."""
    if _hidden(value):
        return _MISSING
    return _decode(value)


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
    for key in _STATUS_CODE_KEYS:
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
    name = tool_name_in(view.name, attrs) or view.name or "unknown"
    output: Any = _NOT_READ
    if name in _CLASS_NAMED_TOOLS:  # named after the tool's class: the result names the tool
        output = tool_output(view)
        name = wrapped_tool_name(output) or name
    if not attrs.keys().isdisjoint(_AGENT_KEYS) or view.name.startswith(_AGENT_NAME_PREFIXES):
        actor = agent_name(view) or actor  # (most tool spans name no agent: no call)
    # a callback envelope (OpenLLMetry's LangChain spans) is unwrapped to what the tool
    # got, and the tool-call id it carries is the call's (spans.payloads)
    arguments, wrapped_call_id = unwrap_arguments(tool_arguments(view))
    call_id = attrs.get(_LEAD_CALL_ID_KEY)  # _first_text's first key, inlined
    if call_id.__class__ is not str or not call_id:
        call_id = _first_text(attrs, _CALL_ID_KEYS)
    call_id = call_id or wrapped_call_id
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
            if error.message is None:  # no exception message nor status description
                error = _with_result_as_message(view, error)
            return [call, _failed(view, run_id, name, error, actor, call_id, max_chars, timestamp)]
    if output is _NOT_READ:
        output = tool_output(view)
    if isinstance(output, dict):  # only a dict is an envelope or a message (spans.payloads)
        failure = wrapped_failure(output)
        if failure is not None:  # a ToolMessage with status "error": the tool failed
            error = ErrorInfo(type="ToolException", message=failure[:_ERROR_TEXT_CAP])
            return [call, _failed(view, run_id, name, error, actor, call_id, max_chars, timestamp)]
        output = unwrap_result(output)
    outcome = _signed_event(
        _KIND_TOOL_RESULT, view, run_id, actor, name, call_id, timestamp, output, max_chars
    )
    return [call, outcome]


_ERROR_TEXT_CAP = 4096  # characters of a failed call's result taken as its error message


def _failed(
    view: SpanView,
    run_id: str,
    tool: str,
    error: ErrorInfo,
    actor: str | None,
    call_id: str | None,
    max_chars: int,
    timestamp: float | None,
) -> Event:
    """A tool span's ``tool_error`` event (the error signed as its outcome)."""
    return tool_error(
        run_id,
        tool,
        error,
        actor=actor,
        call_id=call_id,
        max_chars=max_chars,
        trace_id=view.trace_id or None,
        span_id=view.span_id or None,
        timestamp=timestamp,
    )


def _with_result_as_message(view: SpanView, error: ErrorInfo) -> ErrorInfo:
    """A failed tool span whose only account of the failure is its result attribute (the
    error text a tool returned, recorded with ``error.type``): that text is the error's
    message, so two different failures are two outcomes and the wording classifies it."""
    result = tool_output(view)
    if result is _MISSING or result is None:
        return error
    if isinstance(result, str):
        text = result[:_ERROR_TEXT_CAP]
    else:
        try:
            text = json.dumps(result, default=str)[:_ERROR_TEXT_CAP]
        except (TypeError, ValueError):
            return error
    if not text.strip():
        return error
    return ErrorInfo(type=error.type, message=text, status_code=error.status_code)


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
        else:  # an answer's near key is its signature (output_exact_signature)
            exact = near = output_exact_signature(content, max_chars=max_chars)
    else:
        content = None
        key = CALL_SIGNATURE_ATTRIBUTE if is_call else RESULT_SIGNATURE_ATTRIBUTE
        exact, near, recorded = _recorded_signature(view, key)
        if not recorded:
            if is_call:
                exact, near = call_signature(tool, None, max_chars=max_chars)
            else:
                exact = near = output_exact_signature(None, max_chars=max_chars)
            exact, near = _unique_to_span(view, exact, near)
    event = tool_event(
        kind,
        run_id,
        actor,
        tool,
        exact,
        near,
        call_id,
        view.trace_id or None,
        view.span_id or None,
        timestamp,
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


def _handoff_event(view: SpanView, run_id: str, actor: str | None) -> Event | None:
    attrs = view.attributes
    source = _first_text(attrs, _HANDOFF_SOURCE_KEYS) or actor
    target = _first_text(attrs, _HANDOFF_TARGET_KEYS) or handoff_target(tool_name(view))
    if target is None:
        match = handoff_span_match(view.name)
        if match is not None:
            target = match["target"]
            source = match["source"] or source
    if not target:
        return None
    tool = tool_name(view)
    return handoff_event(
        run_id,
        source,
        target,
        _first_text(attrs, _HANDOFF_CALL_ID_KEYS),
        tool_name=tool if handoff_target(tool) else None,
        **_origin(view),
    )


def handoff_event(
    run_id: str,
    source: str | None,
    target: str,
    call_id: str | None = None,
    tool_name: str | None = None,
    **origin: Any,
) -> Event:
    """A handoff from ``source`` to ``target``; shared by the mapping and the gate.

    ``tool_name``: the ``transfer_to_<agent>`` tool that made it, when a tool did (the
    decision's ``gen_ai.tool.name``, so a handoff cycle's STOP names the tool that looped).
    """
    return Event(
        _KIND_HANDOFF,
        run_id,
        actor=source,
        tool_name=tool_name,
        target_agent=target,
        signature=f"handoff:{source or '?'}->{target}",
        near_key=f"handoff:{source or '?'}->{target}",
        call_id=call_id,
        **origin,
    )


# -- delegations -----------------------------------------------------------------------------

#: argument keys that name the coworker a delegation tool hands its task to (CrewAI's
#: ``coworker``, Agno's ``member_id``, ...), first found wins
DELEGATION_TARGET_KEYS: Final = (
    "coworker",
    "co_worker",
    "agent",
    "agent_name",
    "member_id",
    "member",
    "recipient",
    "to_agent",
    "assignee",
)
_ANSWER_TEXT_CAP = 2048


class _DelegationMatcher:
    """The :class:`ToolNameMatcher` of the configured delegation tools, rebuilt only when
    another configuration asks (the list object is compared by identity)."""

    __slots__ = ("matcher", "tools")

    def __init__(self) -> None:
        self.tools: tuple[str, ...] | None = None
        self.matcher = ToolNameMatcher(())


_DELEGATION = _DelegationMatcher()


def delegation_tools(config: LoopGuardConfig) -> ToolNameMatcher:
    """``delegation_tools(config)[name]``: is a tool of that name a delegation tool
    (``OTEL_LOOPGUARD_DELEGATION_TOOLS``)."""
    tools = config.delegation_tools
    cache = _DELEGATION
    if tools is not cache.tools:
        cache.matcher = ToolNameMatcher(tools)
        cache.tools = tools
    return cache.matcher


def delegation_event(call: Event, outcome: Event) -> Event | None:
    """The handoff a delegation tool's call made (``actor`` → the coworker its arguments
    name), carrying the answer's signature, or None when no coworker is named.

    ``details``: ``delegation`` (the tool), ``answer`` (the outcome's signature: a
    result's, or a failure's), ``answer_words`` (the content words of a recorded result,
    up to 128; None for a failure or an unrecorded result), so the detector can tell an
    acknowledgement ("Done.") from an answer. ``tool_name`` stays None: the call itself is
    the tool event, and an action cycle over it stays the action-cycle detector's."""
    arguments = call.arguments
    if not isinstance(arguments, dict):
        return None
    target = None
    for key in DELEGATION_TARGET_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            target = value.strip()
            break
    if target is None:
        return None
    words = None
    if outcome.kind is _KIND_TOOL_RESULT and outcome.details.get("content_recorded", True):
        output = outcome.output
        if isinstance(output, str):
            text = output[:_ANSWER_TEXT_CAP]
        else:
            try:
                text = json.dumps(output, default=str)[:_ANSWER_TEXT_CAP]
            except (TypeError, ValueError):
                text = ""
        words = len(text_sketch(text))
    source = call.actor
    event = Event(
        _KIND_HANDOFF,
        call.run_id,
        actor=source,
        target_agent=target,
        signature=f"delegation:{source or '?'}->{target}",
        near_key=f"delegation:{source or '?'}->{target}",
        call_id=call.call_id,
        trace_id=call.trace_id,
        span_id=call.span_id,
        timestamp=call.timestamp,
    )
    details = event.details
    details["delegation"] = call.tool_name
    details["answer"] = outcome.signature
    details["answer_words"] = words
    return event


# -- model spans -----------------------------------------------------------------------------


def _llm_event(view: SpanView, run_id: str, config: LoopGuardConfig, actor: str | None) -> Event:
    attrs = view.attributes
    requested, text_seen, text_empty, text = _requested_calls(
        attrs, config.signature_max_chars, view.span_id
    )
    finish = _finish_reason(attrs)
    output_tokens = _int(attrs, _OUTPUT_TOKEN_KEYS)
    if output_tokens is None:  # (a recorded 0 is an answer: no `or` between the two)
        output_tokens = _int(attrs, _LEGACY_OUTPUT_TOKEN_KEYS)
    input_tokens = _int(attrs, _INPUT_TOKEN_KEYS) or _int(attrs, _LEGACY_INPUT_TOKEN_KEYS)
    if input_tokens is None and output_tokens is None:
        input_tokens, output_tokens = _usage_json(attrs)
    error = error_info(view)
    # empty: no tool call asked for and no text (an assistant message with no parts), or
    # no content recorded and zero output tokens; a failed model call is not an answer
    empty = not requested and error is None and (text_empty if text_seen else output_tokens == 0)
    event = Event(
        _KIND_LLM_RESPONSE,
        run_id,
        actor=agent_name(view) or actor,
        model=_first_text(attrs, _MODEL_KEYS),
        finish_reason=finish,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        empty=empty,
        requested_tool_calls=tuple(sorted(requested)) if requested else None,
        # _origin's fields, each by name: a ** mapping sends a compiled build's call
        # through the generic keyword path (about 6 % of `serve`'s work per span)
        trace_id=view.trace_id or None,
        span_id=view.span_id or None,
        timestamp=_timestamp(view),
    )
    if error is not None:
        event.error = error
    if text:  # the model's own words, as hashes only (the repeated-text detector's)
        event.signature, event.near_key = text_signature(text, config.signature_max_chars)
        event.details["text_sketch"] = text_sketch(text)
    user = last_user_message(attrs)
    if user is not None:  # a hash: which user message the request ends with
        event.details["user_message"] = user
    return event


_MAX_INPUT_INDEX = 1 << 20
#: parts of a user-role message that carry tool results (Anthropic's user turn)
_TOOL_RESULT_PARTS = frozenset({"tool_call_response", "tool_result", "function_response"})


def last_user_message(attrs: Mapping[str, Any]) -> int | None:
    """A fingerprint (position and text) of the model request's last message when a user
    wrote it, else None (input not recorded, or the request ends with anything else).

    A user-role message that holds tool results, or that follows a tool message, is not a
    user's: a delivered recommendation goes after the tool results the model asked for, and
    so is never taken for a new user message. Only the hash leaves this function.
    GenAI's ``gen_ai.input.messages`` is parsed when under the output-messages size limit;
    indexed families (OpenInference's ``llm.input_messages.{i}.message.*``, OpenLLMetry's
    ``gen_ai.prompt.{i}.*``) are searched for their last index in O(log n) lookups.
    """
    for key in _INPUT_MESSAGES_KEYS:
        messages = attrs.get(key)
        if not isinstance(messages, str) or len(messages) > _OUTPUT_MESSAGES_LIMIT:
            continue
        try:
            parsed = json.loads(messages)
        except ValueError:
            return None
        if not isinstance(parsed, list) or not parsed:
            return None
        last = parsed[-1]
        if not isinstance(last, dict) or str(last.get("role")).lower() != "user":
            return None
        if len(parsed) > 1:
            before = parsed[-2]
            if isinstance(before, dict) and str(before.get("role")).lower() == "tool":
                return None
        texts: list[str] = []
        parts = last.get("parts")
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                if part.get("type") in _TOOL_RESULT_PARTS:
                    return None
                content = part.get("content")
                if isinstance(content, str):
                    texts.append(content)
        content = last.get("content")
        if isinstance(content, str):
            texts.append(content)
        return fingerprint(f"{len(parsed)}:" + "\n".join(texts))
    for head, tail, first_role in _INDEXED_INPUT_MESSAGES:
        if attrs.get(first_role) is None:
            continue
        present, absent = 0, 1  # the last index: doubling, then halving
        while absent < _MAX_INPUT_INDEX and attrs.get(f"{head}{absent}{tail}role") is not None:
            present, absent = absent, absent * 2
        while absent - present > 1:
            middle = (present + absent) // 2
            if attrs.get(f"{head}{middle}{tail}role") is not None:
                present = middle
            else:
                absent = middle
        prefix = f"{head}{present}{tail}"
        if str(attrs.get(prefix + "role")).lower() != "user":
            return None
        if present and str(attrs.get(f"{head}{present - 1}{tail}role")).lower() == "tool":
            return None
        content = attrs.get(prefix + "content")
        return fingerprint(f"{present + 1}:" + (content if isinstance(content, str) else ""))
    return None


def _usage_json(attrs: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The (input, output) tokens of a usage JSON object attribute (Langfuse's
    ``usage_details``), or ``(None, None)``: most model spans have none of the keys."""
    for key in _USAGE_JSON_KEYS:
        usage = attrs.get(key)
        if isinstance(usage, str) and len(usage) <= _JSON_DECODE_LIMIT:
            decoded = _decode(usage)
            if isinstance(decoded, dict):
                return _int(decoded, _USAGE_JSON_INPUT), _int(decoded, _USAGE_JSON_OUTPUT)
    return None, None


def _finish_reason(attrs: Mapping[str, Any]) -> str | None:
    for key in _FINISH_REASONS_KEYS:
        reasons = attrs.get(key)
        if isinstance(reasons, str):
            return reasons or None
        if isinstance(reasons, (tuple, list)):
            for reason in reasons:
                if isinstance(reason, str) and reason:
                    return reason
    return _first_text(attrs, _FINISH_REASON_KEYS)


def _requested_calls(
    attrs: Mapping[str, Any], max_chars: int, span_id: str
) -> tuple[list[str], bool, bool, str]:
    """Signatures of the tool calls a model turn asked for, and whether its text was empty.

    Returns ``(signatures, text_seen, text_empty, text)``; ``text_seen`` is False when the
    span records no output content at all (then emptiness is unknown, not true); ``text``
    is the turn's recorded text parts joined (``""`` when none), for its signature.

    With content capture off some instrumentations still write the parts, without their
    content (pydantic-ai: a ``tool_call`` part with no ``arguments``, a ``text`` part with
    no ``content``). Such a part means "not recorded": the call's signature is made unique
    to this span (two turns asking for unknown arguments are not identical steps), and a
    text part without content leaves the emptiness of the answer unknown.
    """
    calls: list[tuple[str, Any]] = []
    unrecorded_calls: list[str] = []
    text_seen = False
    text_unrecorded = False
    text_parts: list[str] = []

    for key in _OUTPUT_MESSAGES_KEYS:
        messages = attrs.get(key)
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
                    kind = part.get("type")
                    if kind == "tool_call" and isinstance(part.get("name"), str):
                        if "arguments" in part and not _hidden(part["arguments"]):
                            calls.append((part["name"], part["arguments"]))
                        else:
                            unrecorded_calls.append(part["name"])
                    elif kind == "text":
                        text = part.get("content")
                        if isinstance(text, str) and text not in _PLACEHOLDERS:
                            text_parts.append(text)
                        else:
                            text_unrecorded = True

    # indexed families: llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.*
    # (OpenInference), gen_ai.completion.{i}.tool_calls.{j}.* (OpenLLMetry)
    for head, tail, call_head, call_tail, first_content, first_role in _INDEXED_OUTPUT_MESSAGES:
        if attrs.get(first_content) is None and attrs.get(first_role) is None:
            continue  # not this dialect's span: no key built
        for i in range(_MAX_INDEXED):
            prefix = f"{head}{i}{tail}"
            content = attrs.get(prefix + "content")
            role = attrs.get(prefix + "role")
            if content is None and role is None:
                break
            text_seen = True
            if isinstance(content, str):
                if content in _PLACEHOLDERS:
                    text_unrecorded = True  # hidden, not empty
                else:
                    text_parts.append(content)
            for j in range(_MAX_INDEXED):
                call_prefix = f"{prefix}{call_head}{j}{call_tail}"
                name = attrs.get(call_prefix + "name")
                if not isinstance(name, str):
                    break
                arguments = attrs.get(call_prefix + "arguments")
                if _hidden(arguments):
                    unrecorded_calls.append(name)
                else:
                    calls.append((name, _decode(arguments)))

    signatures = [call_signature(name, args, max_chars=max_chars)[0] for name, args in calls]
    for name in unrecorded_calls:
        signatures.append(
            f"{call_signature(name, None, max_chars=max_chars)[0]}#unrecorded:{span_id}"
        )
    text_empty = not any(part.strip() for part in text_parts)
    if text_unrecorded and text_empty:
        text_seen = False  # the text was left out, not empty
    return signatures, text_seen, text_empty, "" if text_empty else "\n".join(text_parts)


# -- helpers ---------------------------------------------------------------------------------


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<not recorded>"


_MISSING: Any = _Missing()
_NOT_READ: Any = object()  # a span's result not read yet


def _origin(view: SpanView) -> dict[str, Any]:
    return {
        "trace_id": view.trace_id or None,
        "span_id": view.span_id or None,
        "timestamp": _timestamp(view),
    }


def _timestamp(view: SpanView) -> float | None:
    """The span's end in Unix seconds, the time of the event it stands for."""
    end = view.end_time_unix_nano
    return end / 1e9 if isinstance(end, int) else None


def _hidden(value: Any) -> bool:
    """A hidden-content placeholder (``__REDACTED__``) in place of a value."""
    return value.__class__ is str and value in _PLACEHOLDERS


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


def _first_text(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` whose value has a text (:func:`_text`)."""
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str):
            if value:
                return value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    return None


def _int(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value == value and abs(value) < 1e15:
            return int(value)
    return None
