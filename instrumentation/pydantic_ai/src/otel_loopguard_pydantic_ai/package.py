"""The framework versions this instrumentation supports (its ``instruments`` extra)."""

_instruments = ("pydantic-ai-slim >= 2.68, < 3",)
