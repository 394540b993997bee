"""A minimal agent loop over an MCP client, as a user without an agent framework writes it.

The "model" is a fixed plan of tool calls; the run is one ``invoke_agent`` span made with
otel-loopguard's own helper (any framework's agent span would do), so the MCP calls made
inside belong to one run.
"""

from __future__ import annotations

from typing import Any

from kb_server import CATALOGUE
from opentelemetry.trace import Tracer

from otel_loopguard.guard import get_guard

LOOP_STEPS = 8
LOOPING_PLAN = [("search", {"query": "pricing"})] * LOOP_STEPS
PRODUCTIVE_PLAN = [("search", {"query": query}) for query in CATALOGUE]
FAILING_PLAN = [("fetch", {"url": "/admin"})] * LOOP_STEPS


async def run_agent(session: Any, plan: list[tuple[str, dict]], tracer: Tracer | None) -> str:
    """Call the plan's tools in order; the answer is built from the last result."""
    last = ""
    with get_guard().agent_run(tracer, "researcher"):
        for name, arguments in plan:
            result = await session.call_tool(name, arguments)
            last = " ".join(getattr(part, "text", "") for part in result.content)
    return f"answer: {last}"
