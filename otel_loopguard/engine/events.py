"""Events: the observations a run is made of.

The core never sees a span. Adapters (the span processor, saved-trace replay, our
framework wrappers, direct Python use) turn what they see into :class:`Event` objects and
feed them to :class:`otel_loopguard.engine.monitor.Monitor`. A tool call and its result are two
events, so detectors can reason about "the same call again" separately from "the same
output again".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from otel_loopguard.engine.signatures import call_signature, output_exact_signature


class EventKind(str, enum.Enum):
    """What one observation in a run is."""

    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    TOOL_ERROR = "tool_error"
    LLM_RESPONSE = "llm_response"
    HANDOFF = "handoff"
    RUN_START = "run_start"
    RUN_END = "run_end"


# Enum members as module constants: on Python 3.11 ``EventKind.X`` goes through the enum
# metaclass's __getattr__ hook (the builders below run once per tool event)
_TOOL_CALL = EventKind.TOOL_CALL
_TOOL_RESULT = EventKind.TOOL_RESULT


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """A failed tool call, as much as the adapter could tell.

    ``retryable`` is left ``None`` by adapters; the permanent-failure detector classifies
    from type, status and message so every entry point classifies the same way.
    """

    type: str | None = None
    message: str | None = None
    status_code: int | None = None


@dataclass(slots=True, init=False)
class Event:
    """One observation in a run.

    ``signature`` is the canonical, hashed form of the call (``tool:search(query=pricing)``)
    or of the output (``result:no results``), and on an ``llm_response`` of the model's own
    text where it was recorded (with a word sketch in ``details["text_sketch"]``: hashes
    only); ``near_key`` is the cheap paraphrase-tolerant key of the same thing (of a call or
    a model's text; an answer or an error has its signature as its near key: answers are
    only ever compared exactly). Both are
    computed by :mod:`otel_loopguard.engine.signatures`; use the constructors below
    (:func:`tool_call`, :func:`tool_result`, ...) rather than filling them by hand.

    ``arguments`` / ``output`` hold raw content only so that content capture can export it
    when the user opted in; detectors must not copy them into signals unless
    ``capture_content`` is on.
    """

    kind: EventKind | str  # a plain string (from a plug-in) is understood too
    run_id: str
    actor: str | None = None
    tool_name: str | None = None
    signature: str = ""
    near_key: str = ""
    call_id: str | None = None
    # tool_error
    error: ErrorInfo | None = None
    # llm_response
    model: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    empty: bool = False
    # signatures of the tool calls the model asked for in this turn (order-free set)
    requested_tool_calls: tuple[str, ...] | None = None
    # handoff
    target_agent: str | None = None
    # where it came from, for reports and span events (never a metric label)
    trace_id: str | None = None
    span_id: str | None = None
    timestamp: float | None = None
    # raw content, exported only with content capture on
    arguments: Any = None
    output: Any = None
    details: dict[str, Any] = field(default_factory=dict)

    # Written out rather than generated: mypyc compiles this one, while the ``__init__``
    # that ``dataclass`` generates stays interpreted bytecode in the compiled build, and
    # two events are made per tool span (same parameters, order and defaults as the fields).
    def __init__(
        self,
        kind: EventKind | str,
        run_id: str,
        actor: str | None = None,
        tool_name: str | None = None,
        signature: str = "",
        near_key: str = "",
        call_id: str | None = None,
        error: ErrorInfo | None = None,
        model: str | None = None,
        finish_reason: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        empty: bool = False,
        requested_tool_calls: tuple[str, ...] | None = None,
        target_agent: str | None = None,
        trace_id: str | None = None,
        span_id: str | None = None,
        timestamp: float | None = None,
        arguments: Any = None,
        output: Any = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self.run_id = run_id
        self.actor = actor
        self.tool_name = tool_name
        self.signature = signature
        self.near_key = near_key
        self.call_id = call_id
        self.error = error
        self.model = model
        self.finish_reason = finish_reason
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.empty = empty
        self.requested_tool_calls = requested_tool_calls
        self.target_agent = target_agent
        self.trace_id = trace_id
        self.span_id = span_id
        self.timestamp = timestamp
        self.arguments = arguments
        self.output = output
        self.details = {} if details is None else details


def run_key(run_id: Any) -> str:
    """A run id as the monitor keys runs: a ``str`` as it is, anything else (a UUID, an int)
    as its text, so every entry point names the same run the same way and a compiled build
    accepts what a pure one does. Never raises."""
    if type(run_id) is str:
        return run_id  # type: ignore[no-any-return]
    try:
        return str(run_id)
    except Exception:
        return f"<{type(run_id).__name__}>"


def optional_text(value: Any) -> str | None:
    """``None`` or :func:`run_key` of ``value``: for names and ids an event may lack."""
    return None if value is None else run_key(value)


def tool_call(
    run_id: Any,
    tool_name: Any,
    arguments: Any = None,
    *,
    actor: Any = None,
    call_id: Any = None,
    max_chars: int = 200,
    **extra: Any,
) -> Event:
    """A tool invocation, with its call signature computed from name and arguments.

    Ids and names of any type are taken as their text (see :func:`run_key`).
    """
    tool_name = optional_text(tool_name)
    signed = call_signature(tool_name, arguments, max_chars)
    if extra:
        return _tool_event(
            _TOOL_CALL, run_id, tool_name, signed, actor, call_id, arguments=arguments, **extra
        )
    return tool_event(
        _TOOL_CALL,
        run_key(run_id),
        None if actor is None else run_key(actor),
        tool_name,
        signed[0],
        signed[1],
        None if call_id is None else run_key(call_id),
        None,
        None,
        None,
        arguments,
    )


def tool_result(
    run_id: Any,
    tool_name: Any,
    output: Any = None,
    *,
    actor: Any = None,
    call_id: Any = None,
    max_chars: int = 200,
    **extra: Any,
) -> Event:
    """A tool's successful output, with its output signature (its near key too: see
    :func:`~otel_loopguard.engine.signatures.output_exact_signature`)."""
    signature = output_exact_signature(output, max_chars)
    if extra:
        return _tool_event(
            _TOOL_RESULT,
            run_id,
            optional_text(tool_name),
            (signature, signature),
            actor,
            call_id,
            output=output,
            **extra,
        )
    return tool_event(
        _TOOL_RESULT,
        run_key(run_id),
        None if actor is None else run_key(actor),
        None if tool_name is None else run_key(tool_name),
        signature,
        signature,
        None if call_id is None else run_key(call_id),
        None,
        None,
        None,
        None,
        output,
    )


def tool_error(
    run_id: Any,
    tool_name: Any,
    error: ErrorInfo,
    *,
    actor: Any = None,
    call_id: Any = None,
    max_chars: int = 200,
    **extra: Any,
) -> Event:
    """A failed tool call; the signature is that of the error text, masked like outputs."""
    text = f"{error.type or ''}:{error.status_code or ''}:{error.message or ''}"
    signature = output_exact_signature(text, max_chars)
    signed = (signature, signature)
    return _tool_event(
        EventKind.TOOL_ERROR,
        run_id,
        optional_text(tool_name),
        signed,
        actor,
        call_id,
        error=error,
        **extra,
    )


def tool_event(
    kind: EventKind,
    run_id: str,
    actor: str | None,
    tool_name: str | None,
    signature: str,
    near_key: str,
    call_id: str | None,
    trace_id: str | None,
    span_id: str | None,
    timestamp: float | None,
    arguments: Any = None,
    output: Any = None,
) -> Event:
    """A tool event from fields already signed and in their final types, built
    positionally (keywords cost a name match each, and this runs twice per tool span:
    the builders above and the span mapping, :mod:`otel_loopguard.spans.events`)."""
    return Event(
        kind,
        run_id,
        actor,
        tool_name,
        signature,
        near_key,
        call_id,
        None,  # error
        None,  # model
        None,  # finish_reason
        None,  # input_tokens
        None,  # output_tokens
        False,  # empty
        None,  # requested_tool_calls
        None,  # target_agent
        trace_id,
        span_id,
        timestamp,
        arguments,
        output,
    )


def _tool_event(
    kind: EventKind,
    run_id: Any,
    tool_name: str | None,
    signed: tuple[str, str],
    actor: Any,
    call_id: Any,
    **fields: Any,
) -> Event:
    """What the three tool event builders share: ids as text, the (exact, near) signature."""
    return Event(
        kind,
        run_key(run_id),
        actor=optional_text(actor),
        tool_name=tool_name,
        signature=signed[0],
        near_key=signed[1],
        call_id=optional_text(call_id),
        **fields,
    )
