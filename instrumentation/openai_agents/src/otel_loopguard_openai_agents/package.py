"""The framework versions this instrumentation supports (its ``instruments`` extra)."""

_instruments = ("openai-agents >= 0.24, < 0.25",)
