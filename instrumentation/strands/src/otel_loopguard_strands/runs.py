"""``invoke_agent {name}`` spans around Strands invocations: one otel-loopguard run each.

``Agent.stream_async`` is an invocation's one entry point: ``invoke_async`` drains it and
``Agent.__call__`` runs ``invoke_async`` on a thread of its own (``strands._async.run_async``,
in a copy of the caller's context, re-raising whatever it raised, our interrupt included).
A multi-agent ``Swarm`` or ``Graph`` runs its nodes through their agents' ``stream_async``;
their own ``stream_async`` is wrapped too, so the whole swarm is one run and a handoff
ping-pong between its agents is seen as one (each node's agent joins the enclosing run, as
does an agent called as a tool). Strands' own ``invoke_agent`` span, opened inside
``stream_async`` under the current span, nests in ours.

The run is keyed by the conversation id a program gives Strands to stamp on its spans: a
``session.id`` or ``gen_ai.conversation.id`` in the agent's (or swarm's, graph's)
``trace_attributes``, as Strands documents for Langfuse, or in its ``baggage_attributes``.
The span processor keys what it reads from Strands' own spans (under
``opentelemetry-instrument``, its ``chat`` spans report the model turns) by that
conversation; a run keyed otherwise would lose those turns to a run of its own. As DESIGN's
run identity says, a conversation's counters outlive one invocation: a conversation stopped
in ``enforce`` mode stays stopped (until idle past ``run_ttl``). An invocation inside a run
(a swarm's node, an agent called as a tool) is part of the enclosing run.

Strands lets a ``BaseException`` through on every level of an agent invocation (its event
loop, its tool executor's per-tool ``_stream``, the swarm's node loop catch ``Exception``),
except the concurrent tool executor's tasks: see :mod:`.tools`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import current_run, get_guard
from otel_loopguard.kit.conversation import conversation_in
from otel_loopguard.kit.run_streams import events_in_run
from otel_loopguard.kit.scoped_call import Wrapper


def _name(instance: Any, attribute: str) -> str:
    try:
        name = getattr(instance, attribute, None)
    except Exception as exc:  # a name property that fails: never our caller's problem
        get_guard().telemetry.internal_error("strands.run_name", exc)
        name = None
    return name if isinstance(name, str) and name else type(instance).__name__


def stream_async_wrapper(tracer: Tracer, name_attribute: str) -> Wrapper:
    """Wrap ``Agent.stream_async`` (``name_attribute`` ``"name"``) or a multi-agent
    ``stream_async`` (``"id"``), async generators of events."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        name = _name(instance, name_attribute)
        run = get_guard().agent_run(tracer, name, conversation_id=_conversation(instance))
        # the run current only while the next event is computed (kit.run_streams)
        return events_in_run(run, wrapped(*args, **kwargs))

    return wrapper


def _conversation(instance: Any) -> str | None:
    """The conversation id in the invocation's ``trace_attributes`` / ``baggage_attributes``,
    outside any run (see the module docstring)."""
    if current_run() is not None:
        return None
    try:
        for attribute in ("trace_attributes", "baggage_attributes"):
            attributes = getattr(instance, attribute, None)
            if isinstance(attributes, Mapping):
                conversation = conversation_in(attributes)
                if conversation:
                    return conversation
    except Exception as exc:  # attributes we cannot read: a run keyed by its own span
        get_guard().telemetry.internal_error("strands.run_conversation", exc)
    return None
