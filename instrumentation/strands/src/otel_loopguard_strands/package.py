"""The strands-agents versions this instrumentation supports (its ``instruments`` extra)."""

_instruments = ("strands-agents >= 1.62, < 1.63",)
