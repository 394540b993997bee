"""Spans per second of ``otel-loopguard serve``, one process, from OTLP protobuf over loopback,
beside protobuf decode alone in the same run.

Usage::

    python benchmarks/serve_throughput.py [--spans N] [--concurrent C] [--senders S]
    .venvs/compiled/bin/python benchmarks/serve_throughput.py --installed  # compiled wheel

Generates OTLP export requests of 512 spans (as the SDK's batch processor sends them): the
traces of ``C`` concurrent agent runs interleaved, each an ``invoke_agent`` span with model
turns (``chat`` spans with token usage) and tool calls carrying arguments and results, one
run in ten looping. Then:

1. the baseline: every request parsed (``ExportTraceServiceRequest.FromString``) and read
   into span views (``otel_loopguard.serve.decode``), in this process: CPU spans/s;
2. the same requests decoded and judged by the service's engine in this process, one
   thread, no sockets (``Pipeline``): what the receivers add is the difference to 3;
3. a real ``otel-loopguard serve`` process (source tree, default policy and detectors) on
   loopback ports; ``S`` sender threads POST the requests over OTLP/HTTP keep-alive
   connections (a 429 is retried after a pause), and the run ends when the service's health
   says every span was judged. Prints spans/s by wall time and by the service process's
   own CPU time (``/proc/<pid>/stat``), and the ratio to the baseline.

Exit status 1 when the service is below the target of 20,000 spans/s (its CPU time).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from synthetic_runs import AgentRun, SyntheticSpan  # a sibling script, not a package

ROOT = Path(__file__).resolve().parent.parent
if "--installed" not in sys.argv:
    sys.path.insert(0, str(ROOT))

from otel_loopguard.serve.decode import decode_protobuf  # noqa: E402

TARGET_SPANS_PER_SECOND = 20_000
SPANS_PER_REQUEST = 512


def _kv(key: str, value: object) -> KeyValue:
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def _protobuf_span(span: SyntheticSpan) -> Span:
    parent = b"" if span.parent_id is None else span.parent_id.to_bytes(8, "big")
    return Span(
        trace_id=span.trace_id.to_bytes(16, "big"),
        span_id=span.span_id.to_bytes(8, "big"),
        parent_span_id=parent,
        name=span.name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=span.start_ns,
        end_time_unix_nano=span.end_ns,
        attributes=[_kv(key, value) for key, value in span.attributes.items()],
    )


def generate(spans: int, concurrent: int, seed: int = 7) -> list[bytes]:
    """Serialized export requests of SPANS_PER_REQUEST spans, runs interleaved."""
    rng = random.Random(seed)
    now = time.time_ns()
    number = 0
    live = []
    for _ in range(concurrent):
        live.append(AgentRun(rng, number, now))
        number += 1
    bodies: list[bytes] = []
    batch: list[Span] = []
    made = 0
    while made < spans:
        run = rng.choice(live)
        new = [_protobuf_span(span) for span in run.next_spans()]
        if run.turn >= run.turns and len(new) == 1:
            live[live.index(run)] = AgentRun(rng, number, run.clock_ns)
            number += 1
        batch += new
        made += len(new)
        if len(batch) >= SPANS_PER_REQUEST:
            bodies.append(_request(batch))
            batch = []
    if batch:
        bodies.append(_request(batch))
    return bodies


def _request(spans: list[Span]) -> bytes:
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[_kv("service.name", "benchmark-agent")]),
                scope_spans=[ScopeSpans(spans=spans)],
            )
        ]
    ).SerializeToString()


def decode_rate(bodies: list[bytes], spans: int) -> float:
    started = time.process_time()
    decoded = sum(len(decode_protobuf(body).views) for body in bodies)
    elapsed = time.process_time() - started
    assert decoded == spans, (decoded, spans)
    return spans / elapsed


def engine_rate(bodies: list[bytes], spans: int) -> float:
    """Decode and judge in this process, one thread, no sockets: what the service's engine
    costs without its receivers (CPU spans/s)."""
    from otel_loopguard.engine.config import LoopGuardConfig
    from otel_loopguard.serve.pipeline import Pipeline

    pipeline = Pipeline(
        LoopGuardConfig(),
        lambda *_: None,
        lambda _run: None,
        max_pending=spans + 1,
        on_error=lambda where, exc: print(f"{where}: {exc!r}", file=sys.stderr),
    )
    started = time.process_time()
    for body in bodies:
        pipeline._judge(decode_protobuf(body).views)
    return spans / (time.process_time() - started)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _health(port: int) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/health")
    answer = json.loads(connection.getresponse().read())
    connection.close()
    return answer


def post_all(bodies: list[bytes], port: int, senders: int, retry: tuple[int, ...] = (429,)) -> int:
    """POST every request to ``/v1/traces`` on ``port`` from ``senders`` threads over
    keep-alive connections, a refused one (``retry``) again after a pause; the refusals."""
    busy = [0]
    queue = list(reversed(bodies))
    lock = threading.Lock()

    def send() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Content-Type": "application/x-protobuf"}
        while True:
            with lock:
                if not queue:
                    break
                body = queue.pop()
            while True:
                connection.request("POST", "/v1/traces", body, headers)
                answer = connection.getresponse()
                answer.read()
                if answer.status not in retry:
                    assert answer.status == 200, answer.status
                    break
                with lock:
                    busy[0] += 1
                time.sleep(0.05)
        connection.close()

    threads = [threading.Thread(target=send) for _ in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return busy[0]


def serve_rate(
    bodies: list[bytes], spans: int, senders: int, installed: bool
) -> tuple[float, float, int]:
    """(spans/s by wall time, spans/s by the service's CPU time, 429 answers)."""
    # the source tree, or with --installed the package installed beside this Python (the
    # compiled wheel in .venvs/compiled, say) through its console script
    command = (
        [str(Path(sys.executable).with_name("otel-loopguard"))]
        if installed
        else [sys.executable, "-m", "otel_loopguard.cli"]
    )
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": ""}
    if not installed:
        env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [*command, "serve", "--grpc-endpoint", "none", "--http-endpoint", "127.0.0.1:0",
         "--prometheus-endpoint", "none"],
        cwd=ROOT if not installed else None, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    port = 0
    for line in process.stderr:
        found = re.search(r"http port (\d+)", line)
        if found:
            port = int(found.group(1))
            break
    if not port:
        raise SystemExit("serve did not start")
    # serve logs one line per STOP it decides: keep reading, or a full pipe stops the service
    drain = threading.Thread(target=lambda: sum(1 for _ in process.stderr or ()), daemon=True)
    drain.start()
    try:
        cpu_before = _cpu_seconds(process.pid)
        started = time.perf_counter()
        busy = post_all(bodies, port, senders)
        while _health(port)["judged_spans"] < spans:
            time.sleep(0.01)
        wall = time.perf_counter() - started
        cpu = _cpu_seconds(process.pid) - cpu_before
    finally:
        process.terminate()
        process.wait(60)
    return spans / wall, spans / cpu, busy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=200_000)
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument(
        "--installed",
        action="store_true",
        help="run the otel-loopguard installed beside this Python, not the source tree",
    )
    args = parser.parse_args()
    bodies = generate(args.spans, args.concurrent)
    spans = sum(len(decode_protobuf(body).views) for body in bodies)
    print(f"{spans:,} spans in {len(bodies):,} OTLP protobuf requests of {SPANS_PER_REQUEST}")
    decode = decode_rate(bodies, spans)
    print(f"protobuf decode alone (parse + span views):  {decode:>10,.0f} spans/s (CPU)")
    engine = engine_rate(bodies, spans)
    print(f"decode + engine in this process (no sockets):{engine:>10,.0f} spans/s (CPU)")
    wall, cpu, busy = serve_rate(bodies, spans, args.senders, args.installed)
    print(f"otel-loopguard serve, OTLP/HTTP loopback:    {cpu:>10,.0f} spans/s (its CPU)")
    print(
        f"                                             {wall:>10,.0f} spans/s (wall, {busy} x 429)"
    )
    print(f"decode / serve (CPU): {decode / cpu:.2f}x  (goal ≤ 2x)")
    ok = cpu >= TARGET_SPANS_PER_SECOND
    print(f"target ≥ {TARGET_SPANS_PER_SECOND:,} spans/s: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
