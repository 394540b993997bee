"""Series whose labels are known in advance exist at zero from the start.

Prometheus' ``increase()`` and ``rate()`` cannot count a counter series' first sample, so a
series born at 1 loses its first count (for a rare STOP, most of them). The run end states
and every built-in detector's signals and interrupts are created at zero when the guard is
made; decisions, labelled with agents and tools nobody knows in advance, are counted from
birth by the dashboard's queries instead (tests/viewing).
"""

from __future__ import annotations

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import RunEndState
from otel_loopguard.engine.detectors import DEFAULT_DETECTORS
from otel_loopguard.guard import LoopGuard


def _series(text: str, metric: str, label: str) -> dict[str, float]:
    return {
        line.split(f'{label}="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(metric + "{") and f'{label}="' in line
    }


def test_signals_interrupts_and_run_states_start_at_zero() -> None:
    registry = CollectorRegistry()
    LoopGuard(
        LoopGuardConfig(),
        meter_provider=MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)]),
    )
    text = generate_latest(registry).decode()
    detectors = {factory.name for factory in DEFAULT_DETECTORS}
    assert {"repetition", "no_progress", "permanent_failure", "handoff_cycle"} <= detectors
    for metric in ("loopguard_signals_total", "loopguard_interrupts_total"):
        assert _series(text, metric, "detector") == dict.fromkeys(detectors, 0.0), metric
    assert _series(text, "loopguard_runs_total", "state") == {
        state.value: 0.0 for state in RunEndState
    }
