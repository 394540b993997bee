"""Reading spans from any source: the neutral span view, the instrumentation dialects,
classification, events from spans, and the one span follower (span starts and ends into
runs, events and run ends) that the live processor and replay share."""
