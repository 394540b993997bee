"""Spans per second end to end through the OpenTelemetry Collector (our distribution
running ``collector/serve-replicas.yaml``) to 1, 2 and 3 ``otel-loopguard serve`` replicas,
and how late a STOP is: from the end of an agent's looping tool span to the STOP being
readable from the run store by a gate in another process.

Usage::

    python benchmarks/collector_throughput.py [--spans N] [--senders S] [--runs R]

Builds (or reuses) the Collector and Jaeger with ``scripts/build-collector.sh`` and
``scripts/build-jaeger.sh``; needs ``redis-server``. For each replica count it starts the
replicas (source tree, default policy, one shared ``redis-server`` as the store), Jaeger as
the ``otlp/backend`` (every span goes there too, as shipped) and the Collector with
``serve-replicas.yaml`` given these addresses, then:

1. throughput: ``S`` threads POST the requests of ``benchmarks/serve_throughput.py`` (512
   spans each: agent runs with model and tool calls, one run in ten looping, keyed by trace
   and so spread by trace id) to the Collector's OTLP/HTTP receiver; the time runs until
   every replica's health says all spans were judged. Prints spans/s by wall time.
2. (with 3 replicas) the delay: ``R`` looping conversations, ten at a time, each an agent
   in this process with the real SDK (batch span processor at the 200 ms delay docs/serve.md
   recommends, OTLP/gRPC to the Collector) making the same search call every 2 s; after
   each call a reader polls the store every 5 ms with the gate's own call
   (``RunStore.read_stop``) until the STOP shows. Prints the median and p99 of the delay
   from the end of the call that made the loop to the STOP being readable.

On a machine with 2 cores everything (sender, Collector, replicas, Jaeger, Redis) shares them:
the figures are a floor.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from collector.processes import Background, free_port, wait_for  # noqa: E402
from collector.stack import start_jaeger, start_replica_collector  # noqa: E402
from otel_loopguard_testing.redis_server import running_redis_server  # noqa: E402
from serve_throughput import generate, post_all  # noqa: E402  (a sibling script)

from otel_loopguard.engine.config import LoopGuardConfig  # noqa: E402
from otel_loopguard.engine.store import open_store  # noqa: E402
from otel_loopguard.serve.decode import decode_protobuf  # noqa: E402

CALL_GAP = 2.0  # seconds between an agent's calls: longer than any delay measured


def build(script: str) -> Path:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / script)], capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"scripts/{script} failed:\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


class Replica:
    """``otel-loopguard serve`` from the source tree, its ports printed on stderr."""

    def __init__(self, store: str, log: Path):
        grpc, http_port = free_port(), free_port()
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "OTEL_LOOPGUARD_STORE": store,
            "OTEL_SERVICE_NAME": "loopguard-serve-replica",
        }
        self.grpc = f"127.0.0.1:{grpc}"
        self.http_port = http_port
        self.process = Background(
            [sys.executable, "-m", "otel_loopguard.cli", "serve", "--grpc-endpoint", self.grpc,
             "--http-endpoint", f"127.0.0.1:{http_port}", "--prometheus-endpoint", "none"],
            log, env=env,
        )  # fmt: skip
        self.process.wait_ready(f"http://127.0.0.1:{http_port}/health", timeout=60)

    def judged(self) -> int:
        import json

        connection = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=30)
        connection.request("GET", "/health")
        answer = json.loads(connection.getresponse().read())
        connection.close()
        return int(answer["judged_spans"])


@contextlib.contextmanager
def stack(replicas: int, store: str, directory: Path) -> Iterator[tuple[list[Replica], int, str]]:
    """N replicas, Jaeger and the Collector; yields (replicas, OTLP/HTTP port, OTLP/gRPC
    host:port)."""
    with contextlib.ExitStack() as running:
        jaeger = start_jaeger(build("build-jaeger.sh"), directory)
        running.callback(jaeger.process.stop)
        started = []
        for number in range(replicas):
            replica = Replica(store, directory / f"replica-{number}.log")
            running.callback(replica.process.stop)
            started.append(replica)
        collector = start_replica_collector(
            build("build-collector.sh"), [r.grpc for r in started], jaeger.otlp_grpc, directory
        )
        running.callback(collector.process.stop)
        yield started, int(collector.http.rsplit(":", 1)[1]), collector.grpc


def throughput(
    bodies: list[bytes], spans: int, port: int, replicas: list[Replica], senders: int
) -> float:
    """Spans/s from the first request sent to the Collector to the last span judged."""
    before = sum(r.judged() for r in replicas)
    started = time.perf_counter()
    # the Collector refuses (429 or 503) what its memory limiter will not take: sent again
    post_all(bodies, port, senders, retry=(429, 503))
    wait_for(lambda: sum(r.judged() for r in replicas) - before >= spans, 600, "all judged")
    return spans / (time.perf_counter() - started)


def stop_delay(grpc: str, store_url: str, conversation: str) -> float:
    """One looping conversation; seconds from the end of the call after which the STOP
    became readable to that moment."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    store = open_store(LoopGuardConfig(store=store_url))
    provider = TracerProvider(resource=Resource.create({"service.name": "delay-agent"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=grpc, insecure=True),
            schedule_delay_millis=200,
        )
    )
    tracer = provider.get_tracer("delay-agent")
    common = {"gen_ai.conversation.id": conversation}
    try:
        with tracer.start_as_current_span(
            "invoke_agent researcher",
            attributes={"gen_ai.operation.name": "invoke_agent",
                        "gen_ai.agent.name": "researcher", **common},
        ):  # fmt: skip
            for index in range(10):
                with tracer.start_as_current_span(
                    "execute_tool search",
                    attributes={"gen_ai.operation.name": "execute_tool",
                                "gen_ai.tool.name": "search",
                                "gen_ai.tool.call.id": f"call_{index}",
                                "gen_ai.tool.call.arguments": '{"query": "pricing"}',
                                "gen_ai.tool.call.result": "no results", **common},
                ):  # fmt: skip
                    pass
                ended = time.perf_counter()
                while time.perf_counter() - ended < CALL_GAP:
                    if store.read_stop(conversation) is not None:
                        return time.perf_counter() - ended
                    time.sleep(0.005)
        raise RuntimeError(f"{conversation}: no STOP after 10 calls")
    finally:
        provider.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--runs", type=int, default=100, help="conversations for the delay")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    bodies = generate(args.spans, 200)
    spans = sum(len(decode_protobuf(body).views) for body in bodies)
    print(
        f"{spans:,} spans in {len(bodies):,} OTLP protobuf requests, {args.senders} "
        "senders, Collector -> serve replicas (+ Jaeger as the backend)"
    )
    import tempfile

    with running_redis_server() as redis, tempfile.TemporaryDirectory() as temp:
        for count in args.replicas:
            directory = Path(temp) / f"replicas-{count}"
            directory.mkdir()
            with stack(count, redis.url, directory) as (replicas, http_port, grpc):
                rate = throughput(bodies, spans, http_port, replicas, args.senders)
                shares = [r.judged() for r in replicas]
                print(f"{count} replica(s): {rate:>8,.0f} spans/s end to end, judged: {shares}")
                if count == max(args.replicas) and args.runs:
                    with ThreadPoolExecutor(10) as pool:
                        delays = sorted(
                            pool.map(
                                lambda n, count=count: stop_delay(
                                    grpc, redis.url, f"delay-{count}-{n}"
                                ),
                                range(args.runs),
                            )
                        )
                    p99 = delays[min(len(delays) - 1, round(0.99 * (len(delays) - 1)))]
                    print(
                        f"span end -> STOP readable by a gate in another process, "
                        f"{len(delays)} runs: median {statistics.median(delays) * 1000:.0f} ms, "
                        f"p99 {p99 * 1000:.0f} ms"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
