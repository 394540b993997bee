"""Saved-trace analysis: replay exported traces through the monitor, offline.

``readers`` turns OTLP JSON, JSON lines and Jaeger JSON into span views; ``replay`` feeds
them, trace by trace in end-time order, through the same mapping, monitor, detectors and
policy as the on-line span processor; ``report`` prints what happened per run.
"""
