"""The OpenAI SDK versions this instrumentation supports (``instruments`` extra)."""

_instruments = ("openai >= 3.0, < 4",)
