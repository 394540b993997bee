"""SIGTERM while busy: every span accepted before the signal is judged, its decisions (spans)
and metrics are flushed over OTLP, and only then does the process exit."""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from otel_loopguard_testing import OTLPReceiver

from .requests_helpers import looping_trace, merged, post
from .service_process import ServeProcess

TRACES_PER_REQUEST = 20
REQUESTS = 16
CALLS = 120  # tool spans per trace, + its agent span
MAX_ROUNDS = 6  # rounds of REQUESTS sent at most, until the engine is busy at the signal


def _last_sum(bodies: list[bytes], name: str, **labels: str) -> float:
    """The last cumulative value of counter ``name`` with ``labels`` (summed over series)."""
    last = 0.0
    for body in bodies:
        request = ExportMetricsServiceRequest.FromString(body)
        total = None
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.sum.data_points:
                        attrs = {kv.key: kv.value.string_value for kv in point.attributes}
                        if all(attrs.get(k) == v for k, v in labels.items()):
                            total = (total or 0.0) + (point.as_int or point.as_double)
        if total is not None:
            last = total
    return last


def _exemplar_traces(bodies: list[bytes], name: str) -> set[str]:
    """Trace ids of the exemplars on counter ``name``'s points."""
    found = set()
    for body in bodies:
        for resource in ExportMetricsServiceRequest.FromString(body).resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        for point in metric.sum.data_points:
                            found |= {exemplar.trace_id.hex() for exemplar in point.exemplars}
    return found


def test_sigterm_judges_and_flushes_everything_accepted_before_exiting() -> None:
    with OTLPReceiver() as traces_backend, OTLPReceiver() as metrics_backend:
        serve = ServeProcess(
            traces_backend.endpoint,
            "--max-pending-spans",
            "1000000",
            env={
                "OTEL_EXPORTER_OTLP_ENDPOINT": "",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{traces_backend.endpoint}/v1/traces",
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"{metrics_backend.endpoint}/v1/metrics",
                # no periodic export during the test: what arrives is the final flush
                "OTEL_METRIC_EXPORT_INTERVAL": "600000",
            },
        )
        try:
            trace_ids: list[str] = []
            pending = rounds = 0
            # rounds of requests until the engine is behind: a faster build or machine
            # judges one round before the signal could catch it busy
            while not pending and rounds < MAX_ROUNDS:
                rounds += 1
                bodies = []
                for _ in range(REQUESTS):
                    pairs = [looping_trace(CALLS) for _ in range(TRACES_PER_REQUEST)]
                    trace_ids += [trace_id for trace_id, _ in pairs]
                    bodies.append(merged([request for _, request in pairs]).SerializeToString())
                with ThreadPoolExecutor(4) as pool:
                    statuses = list(pool.map(lambda body: post(serve.http, body)[0], bodies))
                assert statuses == [200] * REQUESTS
                pending = serve.health()[1]["pending_spans"]
            serve.process.send_signal(signal.SIGTERM)
            assert serve.stop(timeout=120) == 0
        finally:
            serve.kill()
        sent = rounds * REQUESTS * TRACES_PER_REQUEST * (CALLS + 1)
        assert pending > 0, "the engine was not busy at SIGTERM: send more spans"
        stops = {
            span.trace_id
            for span in traces_backend.spans()
            if span.name == "loopguard.decision" and span.attributes["loopguard.action"] == "stop"
        }
        assert stops == set(trace_ids)
        assert (
            _last_sum(metrics_backend.bodies, "loopguard.serve.spans", outcome="accepted") == sent
        )
        assert _last_sum(metrics_backend.bodies, "loopguard.decisions", action="stop") == len(
            trace_ids
        )
        # the counts link to the traces that looped (exemplars), as in-process
        exemplars = _exemplar_traces(metrics_backend.bodies, "loopguard.decisions")
        assert exemplars and exemplars <= set(trace_ids)
