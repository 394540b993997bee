"""A minimal agent loop over an MCP client, as a user without an agent framework writes it.

The "model" is a fixed plan of tool calls; the run is one ``invoke_agent`` span made with
otel-loopguard's own helper (any framework's agent span would do), so the MCP calls made
inside belong to one run.
"""

from __future__ import annotations

from typing import Any

import anyio
from kb_server import CATALOGUE
from mcp import Client
from opentelemetry.trace import Tracer

from otel_loopguard import LoopGuardInterrupt
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


def run_to_the_end(server: Any, plan: list[tuple[str, dict]], tracer: Tracer | None) -> Any:
    """:func:`run_agent` on a ``Client`` of ``server`` (an in-process server or the
    parameters of a server process) in an event loop of its own: its answer, or the
    ``LoopGuardInterrupt`` the agent run's caller received (caught at that call, inside
    ``async with Client``: leaving that block, anyio would wrap it in an exception group)."""

    async def main() -> str | LoopGuardInterrupt:
        async with Client(server) as client:
            try:
                return await run_agent(client, plan, tracer)
            except LoopGuardInterrupt as interrupt:
                return interrupt

    return anyio.run(main)
