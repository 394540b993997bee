"""otel-loopguard instrumentation for MCP clients (the ``mcp`` Python SDK, 2.x).

Every ``ClientSession.call_tool`` becomes an ``execute_tool {tool}`` span in the client
process, attributed to the enclosing agent run. A failing server tool does not raise on
the client: the SDK returns a result with ``is_error=True``, which we report as a tool
error so repeated failures are detected. In ``enforce`` mode a STOP decision raises
:class:`otel_loopguard.LoopGuardInterrupt` out of ``call_tool``, and a stopped run's next
call is vetoed before the request is sent.

Spans we do not duplicate:

* when the call already runs inside a GenAI tool span (an agent framework wrapping MCP
  tools as its own tools: OpenAI Agents SDK, pydantic-ai's MCP toolsets, ...), that span
  is the tool execution; we only enforce around the call;
* the SDK's own spans (``MCP send tools/call {tool}`` on the client, a transport span, and
  ``tools/call {tool}`` on the server, in the server's process) are left as they are.

Why ``ClientSession.call_tool``: ``mcp.Client.call_tool`` and
``ClientSessionGroup.call_tool`` both end there, and it is the last point before the
request is sent, where a veto costs nothing.
"""

from __future__ import annotations

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook
from otel_loopguard_mcp.package import _instruments
from otel_loopguard_mcp.tools import call_tool_wrapper
from otel_loopguard_mcp.version import __version__

__all__ = ["MCPInstrumentor", "__version__"]


class MCPInstrumentor(FrameworkInstrumentor):
    """Adds loop detection and enforcement to MCP tool calls made by a client."""

    instruments = _instruments
    version = __version__
    hooks = (Hook("mcp.client.session", "ClientSession.call_tool", make=call_tool_wrapper),)
