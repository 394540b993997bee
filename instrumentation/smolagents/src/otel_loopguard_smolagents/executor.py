"""The code executor's worker thread sees the caller's context.

``local_python_executor.timeout`` (newer smolagents 1.x) runs the generated code in a worker
thread, which would lose the OpenTelemetry context (and with it the run a tool call belongs
to); the wrapper hands the caller's context to that thread.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any


def timeout_with_context(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``timeout(seconds)`` returns a decorator; make the function it runs in its worker
    thread see the OpenTelemetry context of the thread that called it."""
    decorator = wrapped(*args, **kwargs)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def in_caller_context(*call_args: Any, **call_kwargs: Any) -> Any:
            context = contextvars.copy_context()
            runner = decorator(functools.partial(context.run, function))
            return runner(*call_args, **call_kwargs)

        return in_caller_context

    return decorate
