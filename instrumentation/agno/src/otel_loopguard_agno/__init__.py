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

from functools import partial

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook
from otel_loopguard_agno.model_turns import (
    make_aprocess_wrapper,
    make_process_wrapper,
    make_stream_wrapper,
)
from otel_loopguard_agno.package import _instruments
from otel_loopguard_agno.runs import run_stream_wrapper, run_wrapper
from otel_loopguard_agno.tools import aexecute_wrapper, execute_wrapper
from otel_loopguard_agno.version import __version__

__all__ = ["AgnoInstrumentor", "__version__"]

_RUN_MODULES = ("agno.agent._run", "agno.team._run")
_MODEL_MODULE = "agno.models.base"
_FUNCTION_MODULE = "agno.tools.function"
#: the run functions of both modules, each with one wrapper (built once, for both modules)
_RUN_FUNCTIONS = {
    "_run": partial(run_wrapper, asynchronous=False),
    "_run_stream": partial(run_stream_wrapper, asynchronous=False),
    "_arun": partial(run_wrapper, asynchronous=True),
    "_arun_stream": partial(run_stream_wrapper, asynchronous=True),
}
_MODEL_METHODS = {
    "_process_model_response": make_process_wrapper,
    "_aprocess_model_response": make_aprocess_wrapper,
    "process_response_stream": make_stream_wrapper,
    "aprocess_response_stream": make_stream_wrapper,
}


class AgnoInstrumentor(FrameworkInstrumentor):
    """Adds loop detection and enforcement to Agno agents and teams."""

    instruments = _instruments
    version = __version__
    hooks = (
        *(
            Hook(module, name, make=make)
            for module in _RUN_MODULES
            for name, make in _RUN_FUNCTIONS.items()
        ),
        *(Hook(_MODEL_MODULE, f"Model.{name}", make=make) for name, make in _MODEL_METHODS.items()),
        Hook(_FUNCTION_MODULE, "FunctionCall.execute", make=execute_wrapper),
        Hook(_FUNCTION_MODULE, "FunctionCall.aexecute", make=aexecute_wrapper),
    )
