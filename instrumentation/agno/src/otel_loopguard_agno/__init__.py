"""otel-loopguard instrumentation for Agno (``agno`` 3.1).

Every run of an ``Agent`` or a ``Team`` (``run`` / ``arun``, streamed or not) becomes an
``invoke_agent {name}`` span and one otel-loopguard run keyed by its session, every function
call goes through the tool gate (``execute_tool {tool}``) and every model call (usage,
requested tool calls) is reported for budgets and max steps. In ``enforce`` mode a STOP
decision raises :class:`otel_loopguard.LoopGuardInterrupt` out of ``run`` / ``arun``.

Why these hook points (agno 3.1.10):

* ``_run``, ``_run_stream``, ``_arun`` and ``_arun_stream`` of ``agno.agent._run`` and of
  ``agno.team._run``: the one place each run happens, whatever the entry point (``run``,
  ``arun``, ``print_response``, a background run), with its session resolved. See
  :mod:`.runs`.
* ``FunctionCall.execute`` and ``FunctionCall.aexecute``: each function call once, with its
  call id, around the tool's hooks and the tool. See :mod:`.tools`.
* ``Model._process_model_response``, ``Model._aprocess_model_response``,
  ``Model.process_response_stream`` and ``Model.aprocess_response_stream``: every model call
  of the tool loop, whatever the model class. See :mod:`.model_turns`.

Not covered: ``continue_run`` / ``acontinue_run`` (resuming a paused human-in-the-loop run),
workflows (``agno.workflow``) as runs of their own (the agents of their steps are runs), and
tools that return generators (their work happens after the gate).

Usage::

    from otel_loopguard_agno import AgnoInstrumentor
    AgnoInstrumentor().instrument()

or run the program under ``opentelemetry-instrument``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard_agno.model_turns import (
    aprocess_wrapper,
    process_wrapper,
    stream_wrapper,
)
from otel_loopguard_agno.package import _instruments
from otel_loopguard_agno.runs import (
    run_stream_wrapper,
    run_wrapper,
)
from otel_loopguard_agno.tools import aexecute_wrapper, execute_wrapper
from otel_loopguard_agno.version import __version__

__all__ = ["AgnoInstrumentor", "__version__"]

_RUN_MODULES = ("agno.agent._run", "agno.team._run")
_MODEL_MODULE = "agno.models.base"
_FUNCTION_MODULE = "agno.tools.function"
_MODEL_METHODS = {
    "_process_model_response": process_wrapper,
    "_aprocess_model_response": aprocess_wrapper,
    "process_response_stream": stream_wrapper,
    "aprocess_response_stream": stream_wrapper,
}


class AgnoInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Adds loop detection and enforcement to Agno agents and teams."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            __name__, __version__, tracer_provider=kwargs.get("tracer_provider")
        )
        run_wrappers = {
            "_run": run_wrapper(tracer, asynchronous=False),
            "_run_stream": run_stream_wrapper(tracer, asynchronous=False),
            "_arun": run_wrapper(tracer, asynchronous=True),
            "_arun_stream": run_stream_wrapper(tracer, asynchronous=True),
        }
        for module in _RUN_MODULES:
            for name, wrapper in run_wrappers.items():
                wrap_function_wrapper(module, name, wrapper)
        for name, model_wrapper in _MODEL_METHODS.items():
            wrap_function_wrapper(_MODEL_MODULE, f"Model.{name}", model_wrapper)
        wrap_function_wrapper(_FUNCTION_MODULE, "FunctionCall.execute", execute_wrapper(tracer))
        wrap_function_wrapper(_FUNCTION_MODULE, "FunctionCall.aexecute", aexecute_wrapper(tracer))

    def _uninstrument(self, **kwargs: Any) -> None:
        from agno.agent import _run as agent_run
        from agno.models.base import Model
        from agno.team import _run as team_run
        from agno.tools.function import FunctionCall

        for module in (agent_run, team_run):
            for name in ("_run", "_run_stream", "_arun", "_arun_stream"):
                unwrap(module, name)
        for name in _MODEL_METHODS:
            unwrap(Model, name)
        unwrap(FunctionCall, "execute")
        unwrap(FunctionCall, "aexecute")
