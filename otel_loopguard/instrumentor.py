"""``LoopGuardInstrumentor``: the ``loopguard`` entry point of ``opentelemetry-instrument``.

Auto-instrumentation runs the distro and configurator first (they set the SDK tracer and
meter providers from ``OTEL_*`` variables), then every ``opentelemetry_instrumentor``
entry point. By then the global tracer provider is the SDK one, and ``_instrument`` adds a
:class:`~otel_loopguard.processor.LoopGuardSpanProcessor` to it. Metrics go through the
global meter provider. When there is no SDK provider yet (no distro installed, or the
program sets its own provider later) it logs one warning, wraps
``trace.set_tracer_provider`` and attaches to the provider the program sets; the program
runs on untouched either way.

It needs no framework (``instrumentation_dependencies()`` is empty), so it loads
wherever otel-loopguard is installed; ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=loopguard``
or ``OTEL_LOOPGUARD_ENABLED=false`` turn it off.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard.guard import LoopGuard, get_guard, set_guard

logger = logging.getLogger("otel_loopguard")


class LoopGuardInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Adds the loop-guard span processor to the configured SDK tracer provider."""

    _processor: Any = None
    _provider: Any = None
    _waiting = False

    def instrumentation_dependencies(self) -> Collection[str]:
        return ()

    def _instrument(self, **kwargs: Any) -> None:
        provider = kwargs.get("tracer_provider") or trace.get_tracer_provider()
        meter_provider = kwargs.get("meter_provider")
        guard = get_guard()
        if meter_provider is not None:
            guard = LoopGuard(guard.config, meter_provider=meter_provider)
            set_guard(guard)
        if not guard.config.enabled:
            logger.info("otel-loopguard: disabled by OTEL_LOOPGUARD_ENABLED=false")
            return
        if getattr(provider, "add_span_processor", None) is None:
            # the program may still set its own SDK provider (after sitecustomize ran):
            # attach to that one when it does
            wrap_function_wrapper(
                "opentelemetry.trace", "set_tracer_provider", self._attach_when_set
            )
            type(self)._waiting = True
            logger.warning(
                "otel-loopguard: no OpenTelemetry SDK tracer provider is configured yet "
                "(found %s); our gates (framework packages, @loopguard_tool, tool_span) "
                "guard without one, but spans of other instrumentations are judged only "
                "once the program sets one with trace.set_tracer_provider(); install "
                "opentelemetry-distro for opentelemetry-instrument, or call "
                "provider.add_span_processor(LoopGuardSpanProcessor()) yourself",
                type(provider).__name__,
            )
            return
        self._attach(provider, guard)

    def _attach(self, provider: Any, guard: LoopGuard) -> None:
        from otel_loopguard.processor import LoopGuardSpanProcessor

        if guard.tracer_provider is None:
            guard.tracer_provider = provider
        processor = LoopGuardSpanProcessor(guard)
        provider.add_span_processor(processor)
        type(self)._processor = processor
        type(self)._provider = provider
        logger.debug("otel-loopguard: span processor added (mode=%s)", guard.config.mode)

    def _attach_when_set(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        result = wrapped(*args, **kwargs)
        try:
            provider = trace.get_tracer_provider()
            if (
                type(self)._waiting
                and type(self)._processor is None
                and getattr(provider, "add_span_processor", None) is not None
            ):
                type(self)._waiting = False
                self._attach(provider, get_guard())
        except Exception as exc:  # never break the program's own setup
            get_guard().telemetry.internal_error("instrumentor.attach", exc)
        return result

    def _uninstrument(self, **kwargs: Any) -> None:
        processor = type(self)._processor
        if processor is not None:
            # the SDK cannot remove a span processor; a disabled one does nothing
            processor.enabled = False
        if type(self)._waiting:
            unwrap(trace, "set_tracer_provider")
            type(self)._waiting = False
        type(self)._processor = None
        type(self)._provider = None
