"""otel-loopguard instrumentation for Google's Agent Development Kit (``google-adk`` 2.13).

Every invocation of a ``Runner`` (``run_async``, and ``run``, which drives it) becomes an
``invoke_agent {root agent}`` span and one otel-loopguard run keyed by its session, every
function call an ``LlmAgent`` runs goes through the tool gate (``execute_tool {tool}``),
every ``transfer_to_agent`` is reported for the handoff-cycle detector and every model call
of an ``LlmAgent``'s flow (usage, finish reason, requested function calls) for budgets and
max steps. In ``enforce`` mode a STOP decision raises
:class:`otel_loopguard.LoopGuardInterrupt` out of ``run_async`` / ``run``.

Why these hook points (google-adk 2.13):

* ``Runner.run_async``: an invocation's one entry point, whatever the root (an agent, an
  agent with sub-agents, a workflow); ``Runner.run`` only to hand our interrupt back to its
  caller as itself. See :mod:`.runs`.
* ``google.adk.flows.llm_flows.tools._caller._execute_single_prepared_call``: each function
  call once, with its call id and calling agent, around ADK's own ``execute_tool`` span and
  its tool callbacks. See :mod:`.tools`.
* ``BaseLlmFlow._call_llm_async``: every model call of every ``LlmAgent`` step, whatever the
  ``BaseLlm`` class. See :mod:`.model_turns`.

Not covered: live (bidirectional streaming) runs, ``run_live``, whose tools run through
another caller.

Usage::

    from otel_loopguard_google_adk import GoogleADKInstrumentor
    GoogleADKInstrumentor().instrument()

or run the program under ``opentelemetry-instrument``.
"""

from __future__ import annotations

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook
from otel_loopguard_google_adk.model_turns import make_call_llm_wrapper
from otel_loopguard_google_adk.package import _instruments
from otel_loopguard_google_adk.runs import run_async_wrapper, run_wrapper
from otel_loopguard_google_adk.tools import tool_wrapper
from otel_loopguard_google_adk.version import __version__

__all__ = ["GoogleADKInstrumentor", "__version__"]

_RUNNERS_MODULE = "google.adk.runners"
_FLOW_MODULE = "google.adk.flows.llm_flows.base_llm_flow"
_CALLER_MODULE = "google.adk.flows.llm_flows.tools._caller"


class GoogleADKInstrumentor(FrameworkInstrumentor):
    """Adds loop detection and enforcement to Google ADK runners and agents."""

    instruments = _instruments
    version = __version__
    hooks = (
        Hook(_RUNNERS_MODULE, "Runner.run_async", make=run_async_wrapper),
        Hook(_RUNNERS_MODULE, "Runner.run", run_wrapper),
        Hook(_FLOW_MODULE, "BaseLlmFlow._call_llm_async", make=make_call_llm_wrapper),
        Hook(_CALLER_MODULE, "_execute_single_prepared_call", make=tool_wrapper),
    )
