"""A real MCP server (``MCPServer``, mcp 2.x) used in-process and as a stdio subprocess.

``search`` answers from a small catalogue and says "no results" otherwise; ``fetch``
always fails on the server, which MCP reports as a result with ``is_error=True``. Every
execution is appended to ``executions`` and, when ``KB_EXECUTIONS_FILE`` is set (the
stdio subprocess), to that file, so tests count real executions across processes.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

CATALOGUE = {
    "pricing page": "pricing: see /pricing",
    "/pricing": "plans: basic, team",
    "team plan price": "team: 10 EUR per seat",
    "currency": "all prices in EUR",
}


def build_server(executions: list[str] | None = None) -> MCPServer:
    server = MCPServer("knowledge-base")
    log = os.environ.get("KB_EXECUTIONS_FILE")

    def record(entry: str) -> None:
        if executions is not None:
            executions.append(entry)
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(entry + "\n")

    @server.tool()
    def search(query: str) -> str:
        """Search the knowledge base."""
        record(f"search:{query}")
        return CATALOGUE.get(query, "no results")

    @server.tool()
    def fetch(url: str) -> str:
        """Fetch a page."""
        record(f"fetch:{url}")
        # a deliberate tool error: its text reaches the client (a crash's would not)
        raise ToolError(f"403 permission denied: {url}")

    return server


if __name__ == "__main__":
    build_server().run("stdio")
