"""``otel-loopguard demo``: watch a stuck agent get stopped, offline, in a few seconds.

Runs scripted agents (no API key, no network) under the real plugin, in ``enforce`` mode
unless ``--mode``/``OTEL_LOOPGUARD_MODE`` says otherwise, prints a live timeline, writes the
trace as OTLP JSON for ``otel-loopguard analyze`` or Jaeger, exports over OTLP when
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (after a quick check that something listens there;
``--keep-exporting`` keeps the metrics going after the runs), and with ``--serve-metrics
PORT`` keeps a Prometheus ``/metrics`` endpoint up until interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

from otel_loopguard.demo.scenarios import SCENARIOS
from otel_loopguard.engine.extras import install_hint

DEFAULT_TRACE_FILE = "loopguard-demo-trace.json"

#: what ``otel-loopguard demo --help`` says first (plain text: argparse shows it as written)
DESCRIPTION = (
    "Watch a stuck agent get stopped, offline, in a few seconds: scripted agents (no API key, "
    "no network) run under the real plugin; the trace is written as OTLP JSON, and exported "
    "over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set."
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="watch a scripted agent loop get caught and stopped (offline)",
        description=DESCRIPTION,
    )
    parser.add_argument(
        "--scenario",
        choices=[*SCENARIOS, "all"],
        default="stuck-search",
        help="which loop to show (default: stuck-search; 'all' runs every scenario)",
    )
    parser.add_argument(
        "--mode",
        type=_mode_text,
        choices=["enforce", "observe"],
        default=None,
        help="enforce interrupts the agent, observe only records "
        "(default: OTEL_LOOPGUARD_MODE, else enforce)",
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=None,
        help="seconds between agent turns (default 0.15 on a terminal, else 0)",
    )
    parser.add_argument(
        "--trace-file",
        default=DEFAULT_TRACE_FILE,
        help=f"where to write the trace as OTLP JSON (default {DEFAULT_TRACE_FILE}; '' to skip)",
    )
    parser.add_argument(
        "--serve-metrics",
        type=int,
        metavar="PORT",
        default=None,
        help="serve Prometheus /metrics on this port and keep serving until Ctrl-C",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --serve-metrics or an OTLP endpoint: serve or export the metrics this long "
        "before the agents start, so Prometheus sees the counters rise (rate() needs two "
        "scrapes around a change)",
    )
    parser.add_argument(
        "--keep-exporting",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with an OTLP endpoint: keep exporting the metrics (every 2 s) this long after "
        "the agents end, before exiting (Ctrl-C ends it sooner)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource

    from otel_loopguard.demo.runner import (
        DecisionFeed,
        OtlpExport,
        build_tracer_provider,
        run_scenario,
    )
    from otel_loopguard.demo.timeline import Timeline
    from otel_loopguard.engine.config import LoopGuardConfig
    from otel_loopguard.guard import LoopGuard
    from otel_loopguard.processor import LoopGuardSpanProcessor
    from otel_loopguard.spans.otlp_json import write_otlp_json

    mode, environ = _demo_mode(args.mode)
    # the timeline shows each interrupt: the line an interrupt logs for a user's own agent
    # would only repeat it, out of place
    logging.getLogger("otel_loopguard").addFilter(
        lambda record: "STOP interrupted run" not in record.getMessage()
    )
    pace = args.pace if args.pace is not None else (0.15 if sys.stdout.isatty() else 0.0)
    if (args.pace is not None and args.pace < 0) or args.warmup < 0 or args.keep_exporting < 0:
        print(
            "otel-loopguard demo: --pace, --warmup and --keep-exporting must be >= 0",
            file=sys.stderr,
        )
        return 2

    service = os.environ.get("OTEL_SERVICE_NAME", "otel-loopguard-demo")
    readers = []
    if args.serve_metrics is not None:
        reader = _prometheus_reader(args.serve_metrics)
        if reader is None:
            return 2
        readers.append(reader)
    otlp = OtlpExport()
    unreachable = otlp.unreachable_line()
    if unreachable:
        print(unreachable, file=sys.stderr)
    otlp_reader = otlp.metric_reader()
    if otlp_reader is not None:
        readers.append(otlp_reader)
    elif args.keep_exporting > 0 and not unreachable:
        print(
            "otel-loopguard demo: --keep-exporting needs OTEL_EXPORTER_OTLP_ENDPOINT "
            "(or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT); ignored",
            file=sys.stderr,
        )
    meter_provider = MeterProvider(
        resource=Resource.create({"service.name": service}), metric_readers=readers
    )
    tracer_provider, collected = build_tracer_provider(service, otlp)
    guard = LoopGuard(
        LoopGuardConfig.from_env(environ, mode=mode),
        meter_provider=meter_provider,
        tracer_provider=tracer_provider,
    )
    tracer_provider.add_span_processor(
        LoopGuardSpanProcessor(guard, tracer_provider=tracer_provider)
    )
    tracer = tracer_provider.get_tracer("otel_loopguard.demo")
    if readers and args.warmup > 0:
        if otlp_reader is not None:
            meter_provider.force_flush()  # the zero series reach the collector at once
        print(f"warming up: metrics out for {args.warmup:g} s before the agents start")
        sys.stdout.flush()
        _wait(args.warmup)
    timeline = Timeline()
    feed = DecisionFeed(guard)

    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    outcomes = [
        run_scenario(SCENARIOS[name](), guard, tracer, timeline, feed, pace) for name in names
    ]
    tracer_provider.force_flush()
    trace_file = args.trace_file or None
    if trace_file:
        try:
            write_otlp_json(collected.spans, trace_file)
        except OSError as exc:
            print(f"otel-loopguard demo: cannot write {trace_file}: {exc}", file=sys.stderr)
            trace_file = None
    timeline.summary(outcomes, trace_file)
    meter_provider.force_flush()
    if args.serve_metrics is not None:
        print(f"serving metrics at http://127.0.0.1:{args.serve_metrics}/metrics (Ctrl-C stops)")
        sys.stdout.flush()
        _wait(None)
    elif otlp_reader is not None and args.keep_exporting > 0:
        print(
            f"exporting metrics to {otlp.endpoints['metrics']} for {args.keep_exporting:g} s "
            "more (Ctrl-C ends it sooner)"
        )
        sys.stdout.flush()
        _wait(args.keep_exporting)
    tracer_provider.shutdown()
    meter_provider.shutdown()
    report = otlp.report()
    if report:
        print(report)
    return 0


def _mode_text(value: str) -> str:
    """``--mode ENFORCE`` or ``--mode " Enforce "`` is ``enforce``, as the variable is read."""
    return value.strip().lower()


def _demo_mode(flag: str | None) -> tuple[str, dict[str, str]]:
    """The demo's mode (``--mode``, else ``OTEL_LOOPGUARD_MODE``, else ``enforce``) and the
    environment its settings are read from, without the mode variable: the demo's default is
    not the plugin's, so a bad value is reported here, once, with the mode the demo uses."""
    from otel_loopguard.engine.config import _accepted, _choice

    environ = dict(os.environ)
    raw = environ.pop("OTEL_LOOPGUARD_MODE", None)
    if flag is not None:
        return flag, environ
    if raw is None or not raw.strip():
        return "enforce", environ
    if _choice(raw) in ("enforce", "observe"):
        return _choice(raw), environ
    print(
        f"otel-loopguard demo: ignoring OTEL_LOOPGUARD_MODE={raw!r}: "
        f"{_accepted('mode', raw)}; the demo runs in enforce mode, its default",
        file=sys.stderr,
    )
    return "enforce", environ


def _prometheus_reader(port: int) -> Any:
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server
    except ImportError:
        print(
            "otel-loopguard demo: --serve-metrics needs the Prometheus exporter: "
            + install_hint("prometheus"),
            file=sys.stderr,
        )
        return None
    try:
        start_http_server(port, addr="127.0.0.1")
    except OSError as exc:
        print(f"otel-loopguard demo: cannot serve metrics on port {port}: {exc}", file=sys.stderr)
        return None
    return PrometheusMetricReader()


def _wait(seconds: float | None) -> None:
    """Sleep ``seconds`` (``None``: until a signal); Ctrl-C or SIGTERM ends it early."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    deadline = None if seconds is None else time.monotonic() + seconds
    try:
        while not stop.wait(0.5 if deadline is None else min(0.5, deadline - time.monotonic())):
            if deadline is not None and time.monotonic() >= deadline:
                break
    except KeyboardInterrupt:
        pass
