"""The CrewAI versions this instrumentation supports (``instruments`` extra)."""

_instruments = ("crewai >= 1.10, < 2",)
