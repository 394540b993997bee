"""A model turn the caller streams: checked at the first pull, one turn per pull, one report.

A framework's model answer read chunk by chunk (LangChain's ``BaseChatModel.stream``, Agno's
``process_response_stream``) is one model turn, but the turn may only be open while the
framework computes the next chunk, never while the caller holds one: between chunks the
caller's code runs, and a turn left open there would take the report of any model call the
caller makes meanwhile for this turn's. So each pull runs in a model turn of its own and
the stream remembers whether a layer below reported any of them.

:func:`model_turn_stream` wraps the framework's generator (plain or async; the result is of
the same kind):

- at the first chunk asked for (a stream does nothing before): ``applies()`` (False: the
  chunks pass untouched), ``first()``, then the pre-flight check (``preflight_llm``), so in
  ``enforce`` mode a vetoed call raises before the provider is called;
- each chunk is handed to ``add(chunk)`` before the caller gets it;
- when the stream is exhausted, in a run, and no layer below reported the turn: one
  ``llm_response`` from ``read()`` (:func:`~otel_loopguard.kit.model_turn.report_turn`: a
  failing ``read`` is counted as ``<package>.model_turn``); a STOP raises from the stream at
  its end, after the caller has every chunk and before it runs the tools they ask for;
- a stream left early (``break``, ``close()``, an error) reports nothing; the framework's
  generator is closed inside a turn of its own, so a layer below that reports on close
  marks that turn rather than one of the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from otel_loopguard.guard.global_guard import get_guard
from otel_loopguard.kit.model_turn import report_turn
from otel_loopguard.kit.run_streams import drive

Read = Callable[[], "Mapping[str, Any] | None"]


def model_turn_stream(
    chunks: Any,
    read: Read,
    *,
    package: str,
    add: Callable[[Any], None] | None = None,
    applies: Callable[[], bool] | None = None,
    first: Callable[[], None] | None = None,
) -> Any:
    """``chunks`` (a generator or an async generator) observed as one model turn; see the
    module docstring. The stream is the kit's :func:`~otel_loopguard.kit.run_streams.drive`
    with a model turn as each step."""
    return drive(chunks, _Pulls(read, package, add, applies, first))


class _Pulls:
    """The :class:`~otel_loopguard.kit.run_streams.Steps` of a streamed turn: a model turn
    around each pull (and around the close), what they learnt, the one report."""

    __slots__ = (
        "_add",
        "_applies",
        "_first",
        "_guard",
        "_package",
        "_read",
        "_started",
        "_turn",
        "active",
        "in_run",
        "reported",
    )

    def __init__(
        self,
        read: Read,
        package: str,
        add: Callable[[Any], None] | None,
        applies: Callable[[], bool] | None,
        first: Callable[[], None] | None,
    ) -> None:
        self._read = read
        self._package = package
        self._add = add
        self._applies = applies
        self._first = first
        self._guard: Any = None
        self._started = False
        self._turn: Any = None
        self.active = True
        self.in_run = False
        self.reported = False

    def enter(self) -> None:
        if not self._started:  # the first chunk asked for: a stream does nothing before
            self._started = True
            if self._applies is not None and not self._applies():  # e.g. read after its run
                self.active = False
                return
            self._guard = get_guard()
            if self._first is not None:
                self._first()
            self._guard.preflight_llm()  # raises nothing but LoopGuardInterrupt (STOP)
        if self.active:
            self._turn = self._guard.model_turn()  # never raises

    def leave(self) -> None:
        turn, self._turn = self._turn, None
        if turn is None:
            return
        turn.end()
        self.in_run = self.in_run or turn.in_run
        self.reported = self.reported or turn.reported

    def step(self, chunk: Any) -> None:
        if self.active and self._add is not None:
            self._add(chunk)

    def end(self, outcome: BaseException | None) -> None:
        """Read to its end: the report, unless a layer below made it (a stream left early,
        failed or vetoed reports nothing: no turn the agent acts on)."""
        if outcome is None and self.active and self.in_run and not self.reported:
            report_turn(self._guard, self._package, self._read)
