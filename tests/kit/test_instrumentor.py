"""kit.instrumentor: a framework package's instrumentor declared by its hooks."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook, hooks_of


@pytest.fixture
def framework() -> Iterator[types.ModuleType]:
    """A framework module: a tool class with a plain/async pair and a module function."""
    module = types.ModuleType("tests_kit_framework")

    class Tool:
        def run(self) -> str:
            return "ran"

        async def arun(self) -> str:
            return "ran"

    def helper() -> str:
        return "helped"

    def optional() -> str:
        return "optional"

    module.Tool = Tool  # type: ignore[attr-defined]
    module.helper = helper  # type: ignore[attr-defined]
    module.optional = optional  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def test_hooks_are_wrapped_with_one_wrapper_per_factory_and_unwrapped(
    framework: types.ModuleType,
) -> None:
    made: list[Any] = []
    calls: list[str] = []

    def make(tracer: Any) -> Any:
        made.append(tracer)

        def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            calls.append(wrapped.__name__)
            return wrapped(*args, **kwargs)

        return wrapper

    def plain(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        return "wrapped " + wrapped(*args, **kwargs)

    class Instrumentor(FrameworkInstrumentor):
        instruments = ("tests-framework >= 1",)
        version = "1.2.3"
        hooks = (
            *hooks_of(framework.__name__, "Tool", ("run", "arun"), make=make),
            Hook(framework.__name__, "helper", plain),
            Hook(framework.__name__, "optional", plain, when=lambda: False),
        )

    instrumentor = Instrumentor()
    assert instrumentor.instrumentation_dependencies() == ("tests-framework >= 1",)
    original_run = framework.Tool.run
    instrumentor._instrument()  # what instrument() calls once the dependencies are checked
    try:
        assert framework.Tool().run() == "ran"
        assert len(made) == 1  # one wrapper for the pair
        assert calls == ["run"]
        assert framework.helper() == "wrapped helped"
        assert framework.optional() == "optional"  # its `when` said no
    finally:
        instrumentor._uninstrument()
    assert framework.Tool.run is original_run
    assert framework.helper() == "helped"
    instrumentor._uninstrument()  # twice: nothing left to unwrap
