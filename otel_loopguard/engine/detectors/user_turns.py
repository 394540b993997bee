"""New user messages: new information for the call-level detectors (issue 28, family 8).

A customer who changes something ("after 8am, please", "what would economy cost?") makes
the agent search the same flights again; that repeat was asked for, it is no loop. The
detectors see a new user message where it is recorded:

* a model request that ends with a user's message not seen before: the ``user_message``
  hash of an ``llm_response`` (:func:`otel_loopguard.spans.events.last_user_message`, read
  from ``gen_ai.input.messages``, OpenInference's ``llm.input_messages``, OpenLLMetry's
  ``gen_ai.prompt``). A user-role message after tool results, as a delivered
  recommendation is, does not count;
* where inputs are not recorded, a model turn that answered with text and is known to
  have asked for no tool (no requested tool calls recorded as such, or, where they are not
  recorded, a stop-like finish reason; not empty, not cut off, not failed): the end of the
  agent's turn, after which a run can only go on with new input. A turn whose tool calls
  and finish reason are both unrecorded is no evidence either way (an instrumentation that
  records only the answer's text would make every step look like a new user turn).

Only hashes are compared; O(1) per model event.
"""

from __future__ import annotations

from otel_loopguard.engine.detectors.finish_reasons import is_stop, is_truncation
from otel_loopguard.engine.events import Event


def new_user_turn(event: Event, last: int) -> tuple[bool, int]:
    """Whether the model turn ``event`` shows a new user message, and the hash of the last
    user message seen after it (``last`` when it carries none)."""
    details = event.details
    user = details.get("user_message") if details else None
    if isinstance(user, int) and user:
        return user != last, user
    requested = event.requested_tool_calls
    answered = (
        not requested
        and (requested is not None or is_stop(event.finish_reason))
        and not event.empty
        and bool(event.signature)
        and event.error is None
        and not is_truncation(event.finish_reason)
    )
    return answered, last
