"""Does pydantic-ai make its own GenAI spans for this agent or tool manager?"""

from __future__ import annotations

from typing import Any


def agent_makes_own_spans(agent: Any) -> bool:
    """True when ``Agent.iter`` will open pydantic-ai's own ``invoke_agent`` span."""
    try:
        if agent._resolve_instrumentation_settings() is not None:
            return True
        return _has_instrumentation(agent.root_capability)
    except Exception:  # private API moved: assume not, we then make our own span
        return False


def tool_manager_makes_own_spans(tool_manager: Any) -> bool:
    """True when this run step's capabilities include pydantic-ai's ``Instrumentation``."""
    try:
        return _has_instrumentation(tool_manager.root_capability)
    except Exception:
        return False


def _has_instrumentation(capability: Any) -> bool:
    if capability is None:
        return False
    from pydantic_ai.capabilities._ordering import collect_leaves
    from pydantic_ai.capabilities.instrumentation import Instrumentation

    return any(isinstance(leaf, Instrumentation) for leaf in collect_leaves(capability))
