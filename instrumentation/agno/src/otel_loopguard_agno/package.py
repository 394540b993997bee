"""The Agno versions this instrumentation supports (its ``instruments`` extra)."""

_instruments = ("agno >= 3.1.10, < 3.2",)
