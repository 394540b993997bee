"""A framework package's instrumentor, declared: its versions, its tracer, its hooks.

Every framework package's ``BaseInstrumentor`` did the same: name the framework versions
it supports, make its tracer from ``tracer_provider=`` (named after the package, with its
version), wrap a list of methods with wrapt, and unwrap the same list. A package now says
only what differs::

    class LangChainInstrumentor(FrameworkInstrumentor):
        instruments = _instruments
        version = __version__
        hooks = (
            *hooks_of(_TOOLS, "BaseTool", ("run", "arun"), make=tool_wrapper),
            Hook(_PREGEL, "Pregel.stream", make=stream_wrapper, when=langgraph_installed),
        )

A :class:`Hook` is one wrapped attribute: ``"Class.method"`` or a module-level function,
with a ready ``wrapper`` or a ``make(tracer)`` that builds one (built once per
instrumentation and shared by the hooks that name the same ``make``: the plain and the async
method of a pair get one wrapper), and an optional ``when()`` checked at instrumentation
time (an optional framework, an attribute only some versions have). What was wrapped is
unwrapped, in reverse order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, ClassVar

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard.kit.scoped_call import Wrapper


@dataclass(frozen=True, slots=True)
class Hook:
    """One attribute a package wraps (see the module docstring)."""

    module: str
    #: ``"Class.method"``, or the name of a module-level function
    name: str
    wrapper: Wrapper | None = None
    make: Callable[[Any], Wrapper] | None = None
    when: Callable[[], bool] | None = None


def hooks_of(
    module: str,
    owner: str,
    methods: Sequence[str],
    *,
    wrapper: Wrapper | None = None,
    make: Callable[[Any], Wrapper] | None = None,
    when: Callable[[], bool] | None = None,
) -> tuple[Hook, ...]:
    """The hooks of several methods of one class (or functions of one module, with
    ``owner=""``) that share one wrapper."""
    prefix = f"{owner}." if owner else ""
    return tuple(Hook(module, prefix + method, wrapper, make, when) for method in methods)


class FrameworkInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """The instrumentor of a framework package; a subclass sets the class attributes."""

    #: the framework versions this package supports (``package.py``'s ``_instruments``)
    instruments: ClassVar[Collection[str]] = ()
    #: the package's version, for its tracer
    version: ClassVar[str | None] = None
    #: the semantic-conventions schema of the package's spans, if it names one
    schema_url: ClassVar[str | None] = None
    hooks: ClassVar[Sequence[Hook]] = ()

    def instrumentation_dependencies(self) -> Collection[str]:
        return self.instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            type(self).__module__.split(".")[0],
            self.version,
            tracer_provider=kwargs.get("tracer_provider"),
            schema_url=self.schema_url,
        )
        made: dict[Callable[[Any], Wrapper], Wrapper] = {}
        wrapped: list[Hook] = []
        for hook in self.hooks:
            if hook.when is not None and not hook.when():
                continue
            wrapper = hook.wrapper
            if hook.make is not None:
                wrapper = made.get(hook.make)
                if wrapper is None:
                    wrapper = made[hook.make] = hook.make(tracer)
            wrap_function_wrapper(hook.module, hook.name, wrapper)
            wrapped.append(hook)
        self._wrapped_hooks = wrapped

    def _uninstrument(self, **kwargs: Any) -> None:
        for hook in reversed(getattr(self, "_wrapped_hooks", ())):
            owner: Any = import_module(hook.module)
            *path, attribute = hook.name.split(".")
            for part in path:
                owner = getattr(owner, part)
            unwrap(owner, attribute)
        self._wrapped_hooks = []
