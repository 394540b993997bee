"""The OpenAI SDK versions this instrumentation supports (``instruments`` extra)."""

_instruments = ("openai >= 2.0, < 4",)
