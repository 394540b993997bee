"""What the compat suites (``compat/<name>/``: a third-party instrumentation beside our
package) check alike after running their looping agent in enforce mode."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .harness import Harness
from .metrics import metric_counter

#: ``start()`` -> ``(run, executed)``: ``run()`` runs one invocation of a fresh looping
#: agent (it must raise ``LoopGuardInterrupt``), ``executed()`` how many times its tool
#: body ran
Start = Callable[[], tuple[Callable[[], Any], Callable[[], int]]]


def assert_interrupted_in_each_invocation(
    harness: Harness, invocations: int, start: Start, *, most: int = 4
) -> None:
    """``invocations`` looping runs under one application span: each is interrupted after
    at least one and at most ``most`` real executions, leaves the application's span
    current (no span of theirs or ours left open as the context), every span started ended
    exactly once, and ``loopguard.internal_errors`` stays 0."""
    import pytest
    from opentelemetry import trace

    from otel_loopguard import LoopGuardInterrupt

    errors = metric_counter(harness)
    with harness.app_tracer().start_as_current_span("handle request") as app:
        for _ in range(invocations):
            run, executed = start()
            with pytest.raises(LoopGuardInterrupt):
                run()
            assert 1 <= executed() <= most, executed()
            assert trace.get_current_span() is app  # no span left current
    assert errors("loopguard.internal_errors") == 0
    harness.assert_every_span_ended_once()
