"""The conversation id a framework's own settings carry, read the way spans are read.

A framework package that opens a run for an invocation keys it by the conversation id the
program gave the framework (Strands' ``trace_attributes`` / ``baggage_attributes``, say), so
that the run is the same one the span processor keys the framework's own spans by. The
attribute names are the span side's (``gen_ai.conversation.id``, OpenInference's
``session.id``, traceloop's association properties): one list, read in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_loopguard.spans.identity import conversation_in as _conversation_in


def conversation_in(attributes: Mapping[str, Any]) -> str | None:
    """The conversation id among ``attributes`` (span attributes, or a framework's mapping
    of them), as the span processor would key a span carrying them; None when there is none."""
    return _conversation_in(attributes)


__all__ = ["conversation_in"]
