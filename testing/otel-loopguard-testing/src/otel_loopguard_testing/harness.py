"""Real-OpenTelemetry test helpers for the instrumentation suites (see README.md here)."""

from __future__ import annotations

import gzip
import json
import logging
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor


class SpanLifecycle(SpanProcessor):
    """Counts ``on_start`` and ``on_end`` per span id, to assert that every span started
    ended exactly once. The SDK calls ``on_end`` once per span and only logs a second
    ``end()``; :meth:`Harness.assert_every_span_ended_once` checks that log too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started: Counter[int] = Counter()
        self.ended: Counter[int] = Counter()
        self.names: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        with self._lock:
            self.started[span.context.span_id] += 1
            self.names[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.ended[span.context.span_id] += 1

    def reset(self) -> None:
        with self._lock:
            self.started.clear()
            self.ended.clear()
            self.names.clear()

    def open_spans(self) -> list[str]:
        """Names of the spans started and not ended, sorted."""
        with self._lock:
            return sorted(self.names[sid] for sid in self.started if self.ended[sid] == 0)

    def not_ended_exactly_once(self) -> list[str]:
        """Names of the spans started since :meth:`reset` and not ended once, and of any
        span ended more than once."""
        with self._lock:
            wrong = {sid for sid, n in self.started.items() if n != 1 or self.ended[sid] != 1}
            wrong.update(sid for sid, n in self.ended.items() if n > 1)
            return sorted(self.names.get(sid, "?") for sid in wrong)


@dataclass
class ReceivedSpan:
    """One span as it arrived over OTLP, decoded to plain Python values."""

    name: str
    span_id: str
    parent_span_id: str
    trace_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int  # OTLP: 0 unset, 1 ok, 2 error
    scope: str = ""  # the instrumentation scope (tracer) name
    resource: dict[str, Any] = field(default_factory=dict)

    def event(self, name: str) -> dict[str, Any] | None:
        for event_name, attributes in self.events:
            if event_name == name:
                return attributes
        return None


def _any_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _any_value(kv.value) for kv in pairs}


class OTLPReceiver:
    """An OTLP/HTTP protobuf trace receiver on 127.0.0.1, run in a thread (``with`` block)."""

    def __init__(self) -> None:
        self._spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path.rstrip("/") == "/v1/traces":
                    receiver._store(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _store(self, body: bytes) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        decoded = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    decoded.append(
                        ReceivedSpan(
                            name=span.name,
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            trace_id=span.trace_id.hex(),
                            attributes=_attributes(span.attributes),
                            events=[(e.name, _attributes(e.attributes)) for e in span.events],
                            status_code=span.status.code,
                            scope=scope_spans.scope.name,
                            resource=resource,
                        )
                    )
        with self._lock:
            self._spans.extend(decoded)

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)


def received_decisions(spans: list[ReceivedSpan], action: str) -> list[dict[str, Any]]:
    """The ``loopguard.decision`` events with ``loopguard.action == action`` among ``spans``."""
    return [
        attributes
        for span in spans
        for name, attributes in span.events
        if name == "loopguard.decision" and attributes.get("loopguard.action") == action
    ]


def printed_count(stdout: str, label: str) -> int:
    """The number a test script printed as ``LABEL <n>`` on a line of its own."""
    for line in stdout.splitlines():
        if line.startswith(label + " ") and line[len(label) + 1 :].isdigit():
            return int(line[len(label) + 1 :])
    raise AssertionError(f"the script printed no {label!r} line:\n{stdout}")


def run_under_opentelemetry_instrument(
    script: Path,
    receiver: OTLPReceiver | None = None,
    *,
    extra_args: tuple[str, ...] = (),
    script_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``opentelemetry-instrument [extra_args] python script [script_args]`` from this
    test's venv, as a user would: the instrumentors are found through their entry points.

    Spans go to ``receiver`` over OTLP/HTTP, or, without one, to the console exporter on
    stdout (read them with :func:`console_spans`); metrics and logs are off. Only the
    ``OTEL_*`` variables given in ``env`` reach the child: a developer's own OpenTelemetry
    settings, pytest's and ``PYTHONPATH`` must not change the test.
    """
    bin_dir = Path(sys.executable).parent
    exporter = "otlp_proto_http" if receiver is not None else "console"
    command = [
        str(bin_dir / "opentelemetry-instrument"),
        "--traces_exporter",
        exporter,
        "--metrics_exporter",
        "none",
        "--logs_exporter",
        "none",
        *extra_args,
        str(bin_dir / "python"),
        str(script),
        *script_args,
    ]
    child_env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_", "PYTEST_", "PYTHONPATH"))
    }
    child_env.update({"OTEL_SERVICE_NAME": script.stem, "PYTHONUNBUFFERED": "1"})
    if receiver is not None:
        child_env.update(
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.endpoint}/v1/traces",
                "OTEL_BSP_SCHEDULE_DELAY": "100",
            }
        )
    child_env.update(env or {})
    return subprocess.run(
        command,
        cwd=script.parent,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def program_outcome(completed: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The outcome a test program reports as the last JSON line on stderr; it must exit 0."""
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stderr.strip().splitlines()[-1])


def run_console_program(
    script: Path,
    *script_args: str,
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """:func:`run_under_opentelemetry_instrument` with the console exporter: the program's
    outcome (:func:`program_outcome`) and the spans it exported (:func:`console_spans`)."""
    completed = run_under_opentelemetry_instrument(
        script, extra_args=extra_args, script_args=script_args, env=env, timeout=timeout
    )
    return program_outcome(completed), console_spans(completed.stdout)


def run_suite_app(
    tests: Path, *script_args: str, mode: str, app: str = "looping_agent.py", timeout: float = 180
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A suite's test program ``tests/apps/<app>`` under ``opentelemetry-instrument`` in
    ``mode`` (``OTEL_LOOPGUARD_MODE``), with ``tests`` on ``PYTHONPATH`` (for its scripted
    models): :func:`run_console_program`'s outcome and spans."""
    return run_console_program(
        tests / "apps" / app,
        *script_args,
        env={"PYTHONPATH": str(tests), "OTEL_LOOPGUARD_MODE": mode},
        timeout=timeout,
    )


def console_spans(text: str) -> list[dict[str, Any]]:
    """The JSON objects the SDK's console exporter printed, one per span, back to back."""
    decoder = json.JSONDecoder()
    spans: list[dict[str, Any]] = []
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            return spans
        span, index = decoder.raw_decode(text, start)
        spans.append(span)


def console_decisions(span: dict[str, Any], action: str) -> list[dict[str, Any]]:
    """The ``loopguard.decision`` events with ``loopguard.action == action`` on one console span."""
    return [
        event
        for event in span.get("events", [])
        if event["name"] == "loopguard.decision"
        and event["attributes"].get("loopguard.action") == action
    ]


class _CurrentGuardProcessor(SpanProcessor):
    """Forwards to the current test's ``LoopGuardSpanProcessor``: a provider cannot drop a
    processor, and each test gets a fresh guard and processor on the session's provider."""

    def __init__(self) -> None:
        self.inner: SpanProcessor | None = None

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.inner is not None:
            self.inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self.inner is not None:
            self.inner.on_end(span)


class Harness:
    """One test's view of the pipeline: its guard (in the mode and with the settings it
    asked for), the spans exported since it was installed, the span lifecycle, and the
    decisions the guard took."""

    def __init__(self, testbed: Testbed, guard: Any, caplog: Any = None) -> None:
        self.testbed = testbed
        self.provider = testbed.provider
        self.exporter = testbed.exporter
        self.lifecycle = testbed.lifecycle
        self.guard = guard
        self.caplog = caplog
        #: ``(Decision, Event)`` pairs, in the order the guard took them
        self.decided: list[tuple[Any, Any]] = []
        guard.on_decision(lambda decision, event: self.decided.append((decision, event)))

    # -- the instrumentation ---------------------------------------------------------------

    def uninstrument(self) -> None:
        """Run the next part of a test without the instrumentation (a baseline)."""
        self.testbed.instrumentor.uninstrument()

    def reinstrument(self) -> None:
        self.testbed.instrumentor.instrument(tracer_provider=self.provider)

    def app_tracer(self) -> Any:
        """A tracer for the application's own spans (a hand-written agent loop, say)."""
        return self.provider.get_tracer("application")

    # -- spans -----------------------------------------------------------------------------

    def spans(self, prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def tool_spans(self, tool: str | None = None) -> list[ReadableSpan]:
        """``execute_tool`` spans (of ``tool``), by their GenAI attributes."""
        return [
            s
            for s in self.spans()
            if s.attributes.get("gen_ai.operation.name") == "execute_tool"
            and (tool is None or s.attributes.get("gen_ai.tool.name") == tool)
        ]

    def executed_tool_spans(self, tool: str) -> list[ReadableSpan]:
        """Tool spans of calls that ran (a pre-call veto ends its span without running)."""
        return [
            span
            for span in self.tool_spans(tool)
            if span.attributes.get("error.type") != "LoopGuardInterrupt"
        ]

    @staticmethod
    def vetoed_calls(tool_spans: list[ReadableSpan]) -> int:
        """Tool spans whose tool never ran: the pre-call veto or the call-time STOP."""
        return sum(1 for s in tool_spans if s.attributes.get("error.type") == "LoopGuardInterrupt")

    def agent_spans(self) -> list[ReadableSpan]:
        return [
            s for s in self.spans() if s.attributes.get("gen_ai.operation.name") == "invoke_agent"
        ]

    def run_state(self, agent: str) -> str:
        """``loopguard.run.state`` of the one ``invoke_agent {agent}`` span."""
        (span,) = self.named(f"invoke_agent {agent}")
        return span.attributes["loopguard.run.state"]

    # -- exported decisions ----------------------------------------------------------------

    @staticmethod
    def decisions_on(span: ReadableSpan, action: str | None = None) -> list[dict[str, Any]]:
        """Attributes of the ``loopguard.decision`` events on one span (of ``action``)."""
        return [
            dict(e.attributes or {})
            for e in span.events
            if e.name == "loopguard.decision"
            and (action is None or (e.attributes or {}).get("loopguard.action") == action)
        ]

    def decision_events(
        self, action: str | None = None
    ) -> list[tuple[ReadableSpan, dict[str, Any]]]:
        """Every exported ``loopguard.decision`` event (of ``action``), with its span."""
        return [
            (span, attributes)
            for span in self.spans()
            for attributes in self.decisions_on(span, action)
        ]

    # -- span lifecycle --------------------------------------------------------------------

    def open_spans(self) -> list[str]:
        return self.lifecycle.open_spans()

    def assert_every_span_ended_once(self) -> None:
        wrong = self.lifecycle.not_ended_exactly_once()
        assert not wrong, f"spans not ended exactly once: {wrong}"
        if self.caplog is not None:
            twice = [r for r in self.caplog.records if "ended span" in r.getMessage()]
            assert not twice, f"a span was ended twice: {twice[0].getMessage()}"


class Testbed:
    """The process's OpenTelemetry pipeline: a real SDK ``TracerProvider`` with the span
    lifecycle recorder, the otel-loopguard span processor of the current test and an
    in-memory exporter. Instrumentors patch classes once per process, so the instrumentor
    is installed once per session and each test gets a fresh guard (:meth:`install`)."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        self.provider = TracerProvider()
        self.exporter = InMemorySpanExporter()
        self.lifecycle = SpanLifecycle()
        self._guard_processor = _CurrentGuardProcessor()
        self.provider.add_span_processor(self.lifecycle)
        self.provider.add_span_processor(self._guard_processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.instrumentor: Any = None

    def instrument(self, instrumentor: Any) -> None:
        self.instrumentor = instrumentor
        instrumentor.instrument(tracer_provider=self.provider)

    def install(self, caplog: Any = None, *, mode: str = "enforce", **settings: Any) -> Harness:
        """A fresh process-wide guard (``LoopGuardConfig(mode=mode, **settings)``), shared by
        the instrumentor's wrappers and the span processor; clears the exported spans."""
        from otel_loopguard.engine.config import LoopGuardConfig
        from otel_loopguard.guard import LoopGuard, set_guard
        from otel_loopguard.processor import LoopGuardSpanProcessor

        guard = LoopGuard(LoopGuardConfig(mode=mode, **settings), tracer_provider=self.provider)
        set_guard(guard)
        self._guard_processor.inner = LoopGuardSpanProcessor(guard, tracer_provider=self.provider)
        self.exporter.clear()
        self.lifecycle.reset()
        return Harness(self, guard, caplog)

    def uninstall(self) -> None:
        from otel_loopguard.guard import set_guard

        self._guard_processor.inner = None
        set_guard(None)
        if self.instrumentor is not None and not self.instrumentor.is_instrumented_by_opentelemetry:
            self.instrument(self.instrumentor)  # a test ran a part uninstrumented


def assert_expected_build() -> None:
    """The ``<framework>-compiled`` suites of ``scripts/run_tests.py`` (which set
    ``LOOPGUARD_EXPECT_COMPILED=1``) run on the compiled core, the others on the source:
    fail at once, rather than pass on the wrong build."""
    import otel_loopguard

    expected = os.environ.get("LOOPGUARD_EXPECT_COMPILED") == "1"
    if otel_loopguard.COMPILED is not expected:
        build = "compiled" if otel_loopguard.COMPILED else "pure Python"
        raise AssertionError(
            f"this suite expects the {'compiled' if expected else 'pure Python'} core "
            f"but imported the {build} one from {otel_loopguard.__file__}"
        )


def harness_fixtures(instrumentor_class: Any, testbed: Testbed | None = None) -> tuple[Any, ...]:
    """A suite's fixtures, in its conftest::

        instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(X)

    ``instrumented`` (session, autouse) installs ``X()`` on the testbed's provider;
    ``make_loopguard(mode="enforce", **settings)`` installs a fresh guard and returns its
    :class:`Harness`; ``loopguard`` and ``observe_loopguard`` are that harness in enforce
    and observe mode with default settings.
    """
    import pytest

    bed = testbed if testbed is not None else Testbed()

    @pytest.fixture(scope="session", autouse=True, name="instrumented")
    def instrumented() -> Iterator[Any]:
        assert_expected_build()
        bed.instrument(instrumentor_class())
        yield bed.instrumentor
        bed.instrumentor.uninstrument()

    @pytest.fixture(name="make_loopguard")
    def make_loopguard(caplog: Any) -> Iterator[Callable[..., Harness]]:
        caplog.set_level(logging.WARNING)
        yield lambda mode="enforce", **settings: bed.install(caplog, mode=mode, **settings)
        bed.uninstall()

    @pytest.fixture(name="loopguard")
    def loopguard(make_loopguard: Callable[..., Harness]) -> Harness:
        return make_loopguard(mode="enforce")

    @pytest.fixture(name="observe_loopguard")
    def observe_loopguard(make_loopguard: Callable[..., Harness]) -> Harness:
        return make_loopguard(mode="observe")

    return instrumented, make_loopguard, loopguard, observe_loopguard


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


def instrumentor_fixture(name: str, make_instrumentor: Callable[[], Any]) -> Any:
    """A fixture ``name`` for a suite that tests its framework next to another
    instrumentation (an OpenAI SDK package below it, a framework's own tracing)::

        with_openai_package = instrumentor_fixture("with_openai_package", OpenAIInstrumentor)

    ``fixture(mode=..., **settings)`` is ``make_loopguard`` with ``make_instrumentor()``
    instrumented on the same provider as well, uninstrumented after the test.
    """
    import pytest

    @pytest.fixture(name=name)
    def with_instrumentor(make_loopguard: Callable[..., Harness]) -> Iterator[Callable[..., Any]]:
        instrumentors: list[Any] = []

        def install(**settings: Any) -> Harness:
            harness = make_loopguard(**settings)
            instrumentor = make_instrumentor()
            instrumentor.instrument(tracer_provider=harness.provider)
            instrumentors.append(instrumentor)
            return harness

        yield install
        for instrumentor in instrumentors:
            instrumentor.uninstrument()

    return with_instrumentor


def openai_package_fixture() -> Any:
    """The ``with_openai_package`` fixture, for a suite that tests its framework on top of our
    OpenAI SDK package (named in its ``install-also``)::

        with_openai_package = openai_package_fixture()

    ``with_openai_package(mode=..., **settings)`` is ``make_loopguard`` with the OpenAI SDK
    package instrumented on the same provider as well, uninstrumented after the test.
    """

    def openai_instrumentor() -> Any:
        from otel_loopguard_openai import OpenAIInstrumentor

        return OpenAIInstrumentor()

    return instrumentor_fixture("with_openai_package", openai_instrumentor)


# -- a hand-written agent loop over an OpenAI-shaped chat API ---------------------------------

#: the two tools the hand-written loop offers the model (free-form arguments)
CHAT_TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }
    for name in ("search", "fetch")
]


@dataclass
class ChatLoopOutcome:
    answer: str | None = None
    turns: int = 0
    injected: list[str] = field(default_factory=list)


def run_chat_tool_loop(
    complete: Callable[[list[dict[str, Any]]], Any],
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    *,
    max_turns: int = 8,
) -> ChatLoopOutcome:
    """The agent loop an application writes over any OpenAI-shaped chat API (the OpenAI SDK,
    ``litellm.completion``): ``complete(messages)`` sends the conversation (with
    :data:`CHAT_TOOL_SCHEMAS`) and returns the chat completion.

    It marks its run with ``guard.agent_run`` and each tool execution with
    ``guard.tool_call`` (reporting the tool's result); the model calls are seen by the
    instrumentation under test alone. It follows replan recommendations the way the README
    tells users to: ``guard.on_decision`` hands the decision to the loop, which sends
    ``decision.recommendation`` as the next user message.
    """
    from otel_loopguard.engine.decisions import Action, Decision
    from otel_loopguard.guard import get_guard

    guard = get_guard()
    outcome = ChatLoopOutcome()
    pending: list[Decision] = []
    guard.on_decision(lambda decision, _event: pending.append(decision))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the pricing page."}]
    with guard.agent_run(tracer, "assistant"):
        while outcome.turns < max_turns:
            outcome.turns += 1
            pending.clear()
            message = complete(messages).choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            replans = [d for d in pending if d.action is Action.REPLAN and d.recommendation]
            if replans:
                outcome.injected.append(replans[-1].recommendation or "")
                messages.append({"role": "user", "content": replans[-1].recommendation})
                continue
            if not message.tool_calls:
                outcome.answer = message.content
                return outcome
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                output = _execute_tool(guard, tracer, tools, call.function.name, arguments, call.id)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return outcome


def _execute_tool(
    guard: Any,
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    name: str,
    arguments: dict[str, Any],
    call_id: str,
) -> str:
    try:
        with guard.tool_call(tracer, name, arguments, call_id=call_id) as call:
            result = tools[name](**arguments)
            call.set_result(result)
        return str(result)
    except Exception as exc:  # the model sees the error, as in most agent loops
        return f"error: {exc}"


# -- what the chat-loop suites (openai, litellm) check alike, each on its own package's spans


def assert_genai_chat_span(
    span: ReadableSpan,
    *,
    provider: str,
    response_id: str = "chatcmpl-1",
    finish_reasons: tuple[str, ...] = ("tool_calls",),
    usage: tuple[int, int] = (12, 7),
) -> None:
    """A ``chat`` CLIENT span of the scripted API's model ``gpt-test`` per the GenAI
    semantic conventions: request and response model, response id, finish reasons, usage."""
    from opentelemetry.trace import SpanKind

    assert span.kind is SpanKind.CLIENT
    attrs = span.attributes or {}
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == provider
    assert attrs["gen_ai.request.model"] == "gpt-test"
    assert attrs["gen_ai.response.model"] == "gpt-test"
    assert attrs["gen_ai.response.id"] == response_id
    assert attrs["gen_ai.response.finish_reasons"] == finish_reasons
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == usage


def assert_run_totals(harness: Harness, usage: list[tuple[int, int]], state: str) -> None:
    """The run's ``invoke_agent`` span: the sum of the answers' usage, and how it ended."""
    (agent,) = harness.spans("invoke_agent")
    attrs = agent.attributes or {}
    assert attrs["gen_ai.usage.input_tokens"] == sum(i for i, _ in usage)
    assert attrs["gen_ai.usage.output_tokens"] == sum(o for _, o in usage)
    assert attrs["loopguard.run.state"] == state


def assert_vetoed_by_the_token_budget(
    harness: Harness, stopped: Any, usage: list[tuple[int, int]]
) -> None:
    """A token budget stopped the run before a request was sent: the interrupt names the
    budget, the run ended ``budget_exceeded`` with the usage of the answers it got, and the
    last ``chat`` span is the vetoed request's (``error.type``, no answer)."""
    assert stopped.value.decision.detectors == ("budget",)
    assert_run_totals(harness, usage, "budget_exceeded")
    vetoed = harness.spans("chat ")[-1]
    assert (vetoed.attributes or {})["error.type"] == "LoopGuardInterrupt"
    assert "gen_ai.response.id" not in (vetoed.attributes or {})
