"""The gated tool wrapper: a framework's tool execution inside ``guard.tool_call(...)``.

Every framework package wraps the one method its framework runs each tool through and does
the same around it: read the tool's name, the model's arguments, the call id and the agent
from the call (staying out of the way when the call has a shape it does not know), run the
call inside the gate (:meth:`LoopGuard.tool_call <otel_loopguard.LoopGuard.tool_call>`: a
vetoed call never runs, the span ends exactly once, a STOP decided on the outcome raises
once the tool has run), and hand the gate what the framework returned: the result, or the
failure the framework caught and returned as a value. :func:`tool_gate_wrapper` is that wrapper,
for a plain method and a coroutine method alike (see :mod:`.scoped_call`); a package writes
only how to read the call and how to read the outcome.

Never breaks the tool for our bookkeeping: a ``read`` that raises lets the call run
untouched (counted in ``loopguard.internal_errors`` as ``<package>.tool_call``), a
``report`` that raises is counted as ``<package>.tool_outcome`` and the tool's outcome goes
on to the framework. Only :class:`~otel_loopguard.LoopGuardInterrupt` (a ``BaseException``)
leaves them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from otel_loopguard.guard.global_guard import get_guard
from otel_loopguard.kit.scoped_call import PlainScope, Scope, Wrapper, scoped_wrapper

_KEEP: Any = object()


@dataclass(slots=True)
class GatedCall:
    """One tool call as the gate needs it (what a package's ``read`` returns)."""

    name: str
    arguments: Any = None
    call_id: str | None = None
    agent: str | None = None
    #: span attributes beyond the name and call id (``gen_ai.tool.description``...)
    attributes: Mapping[str, Any] | None = None
    #: anything of the package's own that its ``report`` needs (the framework's context)
    extra: Any = None


@dataclass(frozen=True, slots=True)
class CheckOnly:
    """What ``read`` returns for a call that another layer spans and reports (the
    framework's own instrumentation, an MCP call inside a tool span): no gate, only
    enforcement: ``check_current_run()`` before the call, and after it when ``after``."""

    after: bool


#: enforce only, before the call
CHECK_BEFORE = CheckOnly(after=False)
#: enforce only, before and after the call
CHECK_AROUND = CheckOnly(after=True)

#: ``read(instance, args, kwargs)``: the call to gate, a :class:`CheckOnly`, or ``None`` to
#: run the call untouched
ReadCall = Callable[[Any, tuple[Any, ...], dict[str, Any]], "GatedCall | CheckOnly | None"]
#: ``report(gate, outcome, call)``: hand the framework's return value to the gate
#: (``gate.set_result(...)`` / ``gate.set_error(...)``); may also report a handoff
Report = Callable[[Any, Any, GatedCall], None]
#: ``report_error(gate, exception, call)``: when the call raised an ``Exception``, before the
#: gate records it (e.g. ``gate.set_error`` with the tool's own error behind a framework's)
ReportError = Callable[[Any, Exception, GatedCall], None]


#: tool descriptions are prompts: a span keeps this much of one, whatever its length
DESCRIPTION_MAX_CHARS = 1024


def function_tool_attributes(description: Any, agent: str | None) -> dict[str, str]:
    """The GenAI attributes of a function tool's span beyond its name: its type, its
    description (cut to :data:`DESCRIPTION_MAX_CHARS`), and the agent it ran for (which
    sub-agent of a supervisor looped)."""
    attributes = {"gen_ai.tool.type": "function"}
    if isinstance(description, str) and description:
        attributes["gen_ai.tool.description"] = description[:DESCRIPTION_MAX_CHARS]
    if agent:
        attributes["gen_ai.agent.name"] = agent
    return attributes


def json_arguments(raw: Any, *, blank: Any = _KEEP, max_chars: int | None = None) -> Any:
    """The model's tool arguments as a value when they are JSON text, so signatures ignore
    key order and spacing; anything else (a value already, text that is no JSON, text
    longer than ``max_chars``) as it came. ``blank`` is what an empty or blank text stands
    for (default: the text itself, which is no JSON)."""
    if not isinstance(raw, str) or (max_chars is not None and len(raw) > max_chars):
        return raw
    if blank is not _KEEP and not raw.strip():
        return blank() if callable(blank) else blank
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw


def record_outcome(
    gate: Any, content: Any, error_text: str | None, error_type: str = "ToolError"
) -> bool:
    """Hand the gate a tool's outcome as the framework returned it: its content, or (with
    ``error_text``) a failure the framework caught and returned as a value, of
    ``error_type``. True when the call succeeded."""
    if error_text is None:
        gate.set_result(content)
        return True
    gate.set_error(error_type, error_text)
    return False


def report_result(gate: Any, outcome: Any, call: GatedCall) -> None:
    """The default ``report``: the return value is the tool's result."""
    gate.set_result(outcome)


def tool_gate_wrapper(
    tracer: Any,
    read: ReadCall,
    report: Report = report_result,
    *,
    package: str,
    report_error: ReportError | None = None,
    asynchronous: bool | None = None,
) -> Wrapper:
    """A wrapt wrapper gating each tool call ``read`` describes; see the module docstring.

    ``package`` names the package in internal-error counts (``<package>.tool_call``,
    ``<package>.tool_outcome``); ``asynchronous`` forces the coroutine (or plain) flavour
    instead of telling it from ``wrapped``.
    """

    def open_scope(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Scope | None:
        guard = get_guard()
        try:
            call = read(instance, args, kwargs)
        except Exception as exc:  # never break the tool call for our bookkeeping
            guard.telemetry.internal_error(f"{package}.tool_call", exc)
            return None
        if call is None:
            return None
        if isinstance(call, CheckOnly):
            return _Checked(guard, call.after)
        gate = guard.tool_call(
            tracer,
            call.name,
            call.arguments,
            call_id=call.call_id,
            agent_name=call.agent,
            attributes=call.attributes,
        )
        return _Gated(guard, gate, call, report, report_error, package)

    return scoped_wrapper(open_scope, asynchronous=asynchronous)


class _Gated:
    """The gate around one call (a :class:`~.scoped_call.Scope`)."""

    __slots__ = ("_call", "_gate", "_guard", "_package", "_report", "_report_error")

    def __init__(
        self,
        guard: Any,
        gate: Any,
        call: GatedCall,
        report: Report,
        report_error: ReportError | None,
        package: str,
    ) -> None:
        self._guard = guard
        self._gate = gate
        self._call = call
        self._report = report
        self._report_error = report_error
        self._package = package

    def __enter__(self) -> Any:
        return self._gate.__enter__()  # a vetoed call raises here: the tool never runs

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        if self._report_error is not None and isinstance(exc, Exception):
            self._safely(self._report_error, exc)
        return self._gate.__exit__(exc_type, exc, tb)

    def inside(self, outcome: Any) -> Any:
        self._safely(self._report, outcome)
        return outcome

    def after(self, outcome: Any) -> Any:
        return outcome

    def _safely(self, hook: Callable[[Any, Any, GatedCall], None], value: Any) -> None:
        """Run a report hook; our bookkeeping error inside the gate's block would look like
        the tool failing, so it is counted, never raised (our interrupt is)."""
        try:
            hook(self._gate, value, self._call)
        except Exception as exc:
            self._guard.telemetry.internal_error(f"{self._package}.tool_outcome", exc)


class _Checked(PlainScope):
    """Enforcement only (:class:`CheckOnly`)."""

    __slots__ = ("_after", "_guard")

    def __init__(self, guard: Any, after: bool) -> None:
        self._guard = guard
        self._after = after

    def __enter__(self) -> Any:
        self._guard.check_current_run()
        return self

    def after(self, result: Any) -> Any:
        if self._after:
            self._guard.check_current_run()
        return result
