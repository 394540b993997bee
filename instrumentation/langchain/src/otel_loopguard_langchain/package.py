"""The framework versions this instrumentation supports, one extra each.

``_instruments`` is what ``opentelemetry-instrument`` requires before it loads the
instrumentor (the ``instruments`` extra, which it reads from the installed metadata, and
``instrumentation_dependencies()``, which a manual ``instrument()`` checks): langchain-core
only, so LangChain tools are guarded where LangGraph is not installed. LangGraph is
instrumented when it is importable; ``_supports_langgraph`` is its extra, ``langgraph``.
It is not in ``instruments``: the loader requires every requirement of that extra, and it
says so only at debug level, so a LangChain user without LangGraph would be left unguarded
without a word. ``'./instrumentation/langchain[instruments,langgraph]'`` installs both.
"""

_instruments = ("langchain-core >= 1.0, < 2",)
_supports_langgraph = ("langgraph >= 1.0, < 2",)
