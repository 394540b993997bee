"""Who reports a model turn: the layer closest to the model call, exactly once.

A model turn can be seen by several layers at once: an agent framework's step (CrewAI,
LangChain, LlamaIndex, smolagents, the OpenAI Agents SDK), and below it the provider SDK's
call (our OpenAI or Anthropic package, or any GenAI instrumentation whose span the
processor reads). Each layer knows something the other lacks, but the turn must count
once, or token budgets and ``max_steps`` fire at half the real usage.

The rule: the innermost layer that reports wins. A framework wrapper opens a
:class:`ModelTurn` around the call (:meth:`LoopGuard.model_turn
<otel_loopguard.guard.LoopGuard.model_turn>`); any ``llm_response`` reported while it
is open, by :meth:`LoopGuard.observe_llm_response
<otel_loopguard.guard.LoopGuard.observe_llm_response>` or by the span processor for a
model span that ends inside it, marks it (and the turns it is nested in) as reported; after
the call the wrapper reports only when :attr:`ModelTurn.needs_report` says nobody did.

An agent run (``agent_run``, also a nested one) and a tool execution (``tool_call``) start
with no turn open: a sub-agent's turns, or a model call a tool makes, are their own, not
the turn of the model call the caller may still have open (a streamed answer being read
while its tools run, a managed agent called as a tool).

The open turn travels in a :class:`contextvars.ContextVar`, and marking changes the turn
object rather than the variable, so a report made in an asyncio task or an executor thread
that copied the context still reaches it. Two model calls running in parallel in one run
(LangGraph branches, ``asyncio.gather``) each have their own turn; a run-wide counter
compared before and after, which this replaces, took the other call's report for its own
and lost a turn's tokens.

A turn can also be reported twice with no nesting in time to tell: a library's own
telemetry that makes its model span *after* the call returned, in a worker thread or a
task (LiteLLM's ``OpenTelemetry`` callback, ``litellm.callbacks = ["otel"]``), ends it
when the wrapper that reported the answer has closed its turn. Both reports name the same
answer, though: its response id (``gen_ai.response.id``). :class:`ReportedAnswers` pairs
a wrapper's report with a span's report of the same answer in the same run, and the
second of the two, whichever it is, is not counted.
"""

from __future__ import annotations

import contextvars
import threading
import time
from typing import Any

# a turn nested deeper than this in open turns is not linked to its parents: keeps the
# chain (and what a turn left open by an exception keeps alive) bounded
_MAX_NESTING = 8


class ModelTurn:
    """One model call seen by a framework wrapper; see the module docstring.

    ``in_run`` is False outside any run we know of (nothing to report to). Use it as a
    context manager around the call, or, when the call and its answer are handled in two
    places of the same task, keep it and call :meth:`end` when the answer is read.
    """

    __slots__ = ("_depth", "_parent", "in_run", "reported", "started")

    def __init__(self, in_run: bool, parent: ModelTurn | None) -> None:
        self.in_run = in_run
        self.reported = False
        #: when the call began (Unix ns): another instrumentation's model span of the same
        #: call overlaps it (spans.executions)
        self.started = time.time_ns()
        if parent is not None and parent._depth >= _MAX_NESTING:
            parent = None
        self._parent = parent
        self._depth: int = parent._depth + 1 if parent is not None else 0

    @property
    def needs_report(self) -> bool:
        """True when the wrapper should report this turn itself: in a run, and no layer
        inside the call reported it."""
        return self.in_run and not self.reported

    def end(self) -> None:
        """Close the turn: later reports in this context go to the turn it was opened in."""
        if _OPEN_TURN.get() is self:
            _OPEN_TURN.set(self._parent)
        self._parent = None

    def __enter__(self) -> ModelTurn:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.end()


_OPEN_TURN: contextvars.ContextVar[ModelTurn | None] = contextvars.ContextVar(
    "otel_loopguard_model_turn", default=None
)


def enter_run_scope() -> contextvars.Token[ModelTurn | None]:
    """An agent run starts: turns open around it are not its own, and its reports must
    not mark them (a sub-agent called while its caller's model answer is still streaming,
    a managed agent called as a tool). Undo with :func:`leave_run_scope`."""
    return _OPEN_TURN.set(None)


def leave_run_scope(token: contextvars.Token[ModelTurn | None] | None) -> None:
    if token is None:
        return
    try:
        _OPEN_TURN.reset(token)
    except ValueError:  # left in another context (a generator closed elsewhere)
        _OPEN_TURN.set(None)


def open_turn(in_run: bool) -> ModelTurn:
    """Open a turn in the current context, nested in the one already open (if any)."""
    turn = ModelTurn(in_run, _OPEN_TURN.get())
    _OPEN_TURN.set(turn)
    return turn


def mark_reported() -> None:
    """A model turn was just reported: the open turn, and those it is nested in, need no
    report of their own."""
    turn = _OPEN_TURN.get()
    while turn is not None:
        turn.reported = True
        turn = turn._parent


def open_turn_needs_report() -> bool:
    """True when a wrapper's turn is open here, in a run, and nobody reported it yet."""
    turn = _OPEN_TURN.get()
    return turn is not None and turn.needs_report


def open_turn_started() -> int | None:
    """When the innermost open turn began (Unix ns), or None when none is open."""
    turn = _OPEN_TURN.get()
    return turn.started if turn is not None else None


class ReportedAnswers:
    """Answers reported by one of two sources, a wrapper (``observe_llm_response``) or a
    model span read by the span processor, waiting for the other source's report of the
    same answer (same run, same response id). See the module docstring.

    An answer may be reported more than once by each source (a cached answer keeps its
    id: LiteLLM's cache), so each side counts its waiting reports per answer, and each
    report of one source pairs with one of the other. Bounded: each side keeps its most
    recent ``max_waiting`` unpaired answers; an answer without a response id is never
    paired. Thread-safe: the two reports of one answer come from different threads.
    """

    __slots__ = ("_by_span", "_by_wrapper", "_lock", "_max_waiting")

    def __init__(self, max_waiting: int = 4096) -> None:
        self._by_wrapper: dict[tuple[str, str], int] = {}
        self._by_span: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._max_waiting = max(1, max_waiting)

    def first_report(self, run_id: str, response_id: Any, *, by_wrapper: bool) -> bool:
        """True when this report counts: no report of this answer from the other source is
        waiting. False when one is: this one is the same answer again, and pairs with it."""
        if not response_id or not isinstance(response_id, str):
            return True
        key = (run_id, response_id)
        with self._lock:
            waiting, other = self._by_wrapper, self._by_span
            if not by_wrapper:
                waiting, other = other, waiting
            unpaired = other.get(key, 0)
            if unpaired:
                if unpaired == 1:
                    del other[key]
                else:
                    other[key] = unpaired - 1
                return False
            waiting[key] = waiting.get(key, 0) + 1
            if len(waiting) > self._max_waiting:
                del waiting[next(iter(waiting))]  # the oldest unpaired answer
        return True
