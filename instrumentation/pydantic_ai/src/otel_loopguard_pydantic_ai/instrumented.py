"""Does pydantic-ai make its own GenAI spans for this agent or tool manager?"""

from __future__ import annotations

from typing import Any


def agent_makes_own_spans(agent: Any, run_model: Any = None) -> bool:
    """True when ``Agent.iter`` will open pydantic-ai's own ``invoke_agent`` span.

    That is when the agent is instrumented (``instrument=``, ``Agent.instrument_all()``, the
    ``Instrumentation`` capability) or the model the run uses is an ``InstrumentedModel``
    (``logfire.instrument_pydantic_ai(model)``, ``Agent(InstrumentedModel(...))`` or one
    passed as the run's ``model=``): pydantic-ai unwraps it into that capability.
    """
    try:
        if agent._resolve_instrumentation_settings() is not None:
            return True
        from pydantic_ai.models.instrumented import InstrumentedModel

        if isinstance(agent._pick_raw_model(run_model), InstrumentedModel):
            return True
        return _has_instrumentation(agent.root_capability)
    except Exception:  # private API moved, or no model: assume not, we make our own span
        return False


def tool_manager_makes_own_spans(tool_manager: Any) -> bool:
    """True when this run step's capabilities include pydantic-ai's ``Instrumentation``."""
    try:
        return _has_instrumentation(tool_manager.root_capability)
    except Exception:
        return False


def tool_spans_record_content(tool_manager: Any) -> bool:
    """True when pydantic-ai's own tool spans of this run step record the arguments and
    results (``InstrumentationSettings(include_content=True)``, the default). Without them
    its spans are no evidence of a repeated call: our gate then spans the call itself."""
    try:
        return any(
            getattr(leaf.settings, "include_content", True) is not False
            for leaf in _instrumentations(tool_manager.root_capability)
        )
    except Exception:
        return True  # private API moved: as before, leave the spans to pydantic-ai


def _has_instrumentation(capability: Any) -> bool:
    return bool(_instrumentations(capability))


def _instrumentations(capability: Any) -> list[Any]:
    if capability is None:
        return []
    from pydantic_ai.capabilities._ordering import collect_leaves
    from pydantic_ai.capabilities.instrumentation import Instrumentation

    return [leaf for leaf in collect_leaves(capability) if isinstance(leaf, Instrumentation)]
