"""The framework versions this instrumentation supports (its ``instruments`` extra)."""

_instruments = ("mcp >= 2.3, < 3",)
