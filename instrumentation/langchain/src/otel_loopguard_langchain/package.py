"""The framework versions this instrumentation supports (the ``instruments`` extra).

``opentelemetry-instrument`` loads the instrumentor only when these are installed. LangGraph
is optional: its run boundary is wrapped when it is importable, tools work without it.
"""

_instruments = ("langchain-core >= 1.0, < 2",)
_supports_langgraph = ("langgraph >= 1.0, < 2",)
