"""The framework versions this instrumentation supports (the ``instruments`` extra).

The agent workflow internals we rely on (``BaseWorkflowAgent._call_tool``,
``AgentWorkflow._call_tool``, the ``handoff`` tool) are those of llama-index-core 0.14.
"""

_instruments = ("llama-index-core >= 0.14, < 0.15",)
