"""The smolagents versions this instrumentation supports (``instruments`` extra)."""

_instruments = ("smolagents >= 1.20, < 2",)
