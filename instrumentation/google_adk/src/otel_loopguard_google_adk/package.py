"""The google-adk versions this instrumentation supports (its ``instruments`` extra)."""

_instruments = ("google-adk >= 2.13, < 2.14",)
