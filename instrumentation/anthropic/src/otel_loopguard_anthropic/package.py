"""The SDK versions this instrumentation supports (the ``instruments`` extra).

2.14 is the release we read and test: its client ``request`` methods, the Messages stream
events, and its own OpenTelemetry spans (``start_api_call_span``), which we defer to.
"""

_instruments = ("anthropic >= 2.14, < 3",)
