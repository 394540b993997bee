"""Interrupts a run cannot raise where they happen, held back and raised later.

:class:`~otel_loopguard.LoopGuardInterrupt` is a ``BaseException`` so that frameworks'
``except Exception`` handlers let it pass. A few places do not wait on a ``BaseException``
though: an asyncio task whose consumer learns it finished from a queue (the task just ends,
the consumer goes on or waits forever), ``asyncio.gather`` over a turn's tool calls, a
streaming worker thread that hands only ``Exception``\\ s to its consumer. There the
interrupt is held back in the run and raised again at a point the framework does wait on
(before the run's next model call, when the run or the stream ends).

:class:`HeldInterrupts` is that mailbox: a context variable holding a list, shared by the
tasks and threads of the run (they copy the context, and the list is the same object).
A package makes one per kind of place (``HeldInterrupts("otel_loopguard_agno_held")``),
opens it around the run (:meth:`HeldInterrupts.opened`), holds an interrupt where it cannot
be raised (:meth:`HeldInterrupts.hold`), and raises it where it can
(:meth:`HeldInterrupts.raise_held`). Raised again, it is the same decision: the guard has
counted it already (``loopguard.interrupts``), and the stopped run answers every later
call with it anyway.

:func:`interrupt_again` makes that second interrupt; :func:`exception_flavour` makes an
interrupt that is also an ``Exception``, for a framework that carries only ``Exception``
out of a step (the caller's ``except LoopGuardInterrupt`` still catches it).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from otel_loopguard.engine.interrupt import LoopGuardInterrupt

Flavour = TypeVar("Flavour", bound=LoopGuardInterrupt)


def interrupt_again(
    interrupt: LoopGuardInterrupt, cause: BaseException | None = None
) -> LoopGuardInterrupt:
    """A new plain interrupt of the same decision and message, for raising a held one
    again; its ``__cause__`` is ``cause``, else the held one's."""
    again = LoopGuardInterrupt(interrupt.decision, str(interrupt))
    again.__cause__ = cause if cause is not None else interrupt.__cause__
    again.__suppress_context__ = True  # as ``raise ... from``: the cause is what matters
    return again


def exception_flavour(interrupt: LoopGuardInterrupt, flavour: type[Flavour]) -> Flavour:
    """``interrupt`` as ``flavour`` (a subclass of ``LoopGuardInterrupt`` and
    ``Exception``), the same decision, message and cause; an interrupt that already is one
    is returned as is."""
    if isinstance(interrupt, flavour):
        return interrupt
    carried = flavour(interrupt.decision, str(interrupt))
    carried.__cause__ = interrupt.__cause__
    return carried


class HeldInterrupts:
    """The interrupts held back in the current run; see the module docstring."""

    __slots__ = ("_held",)

    def __init__(self, name: str) -> None:
        self._held: contextvars.ContextVar[list[LoopGuardInterrupt] | None] = (
            contextvars.ContextVar(name, default=None)
        )

    def mailbox(self, *, inherit: bool = True) -> list[LoopGuardInterrupt]:
        """The list to open a run with: the enclosing run's (``inherit``, when one is open
        in this context), else a fresh one. Take it before the run starts."""
        held = self._held.get() if inherit else None
        return held if held is not None else []

    @contextmanager
    def opened(self, mailbox: list[LoopGuardInterrupt] | None = None) -> Iterator[None]:
        """Hold back into ``mailbox`` (default: :meth:`mailbox`) inside the block: around a
        run, or around each step of a stream the run lives in."""
        token = self._held.set(mailbox if mailbox is not None else self.mailbox())
        try:
            yield
        finally:
            try:
                self._held.reset(token)
            except ValueError:  # left in another context (a generator closed elsewhere)
                self._held.set(None)

    def hold(self, interrupt: LoopGuardInterrupt) -> bool:
        """Keep ``interrupt`` for :meth:`raise_held`; False when no mailbox is open here
        (then raise it yourself)."""
        held = self._held.get()
        if held is None:
            return False
        held.append(interrupt)
        return True

    def held(self) -> LoopGuardInterrupt | None:
        """The first interrupt held back in this run, if any (it stays held)."""
        held = self._held.get()
        return held[0] if held else None

    def raise_held(
        self,
        cause: BaseException | None = None,
        *,
        same: bool = False,
        mailbox: list[LoopGuardInterrupt] | None = None,
    ) -> None:
        """Raise the first interrupt held back in this run (or in ``mailbox``, from outside
        the block it was open in), if any, and forget them all: as a new interrupt of the
        same decision (:func:`interrupt_again`, with ``cause``), or with ``same`` the held
        object itself."""
        held = mailbox if mailbox is not None else self._held.get()
        if not held:
            return
        interrupt = held[0]
        held.clear()
        if same:
            raise interrupt
        raise interrupt_again(interrupt, cause)
