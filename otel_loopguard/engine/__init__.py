"""The detection core: events, signatures, detectors, policy, run identity and the monitor.

Nothing in this package imports OpenTelemetry: it is fed plain :class:`~.events.Event`
objects, so the same code serves the live span processor, saved-trace replay, the detection
service and direct use from Python (and it is what the compiled build compiles).
"""
