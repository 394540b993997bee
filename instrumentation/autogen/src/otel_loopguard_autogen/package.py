"""The AutoGen AgentChat versions this instrumentation supports (``instruments`` extra)."""

_instruments = ("autogen-agentchat >= 0.7, < 0.8",)
