"""The guard's own metrics, read from a real SDK meter provider."""

from __future__ import annotations

from collections.abc import Callable

from .harness import Harness


def metric_counter(harness: Harness) -> Callable[[str], float]:
    """Read the guard's own metrics: gives ``harness.guard`` a ``Telemetry`` on a real SDK
    ``MeterProvider`` with an in-memory reader; returns ``count(name)``, the sum of that
    metric's data points so far (e.g. ``count("loopguard.interrupts")``)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from otel_loopguard.telemetry import Telemetry

    reader = InMemoryMetricReader()
    guard = harness.guard
    guard.telemetry = Telemetry(
        guard.config,
        MeterProvider(metric_readers=[reader]),
        active_runs=lambda: guard.monitor.active_runs,
    )

    def count(name: str) -> float:
        data = reader.get_metrics_data()
        return sum(
            point.value
            for resource in (data.resource_metrics if data else ())
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        )

    return count
