"""The engine loop: accepted spans, trace part by trace part, through the one replayer.

Receivers decode in their own threads and hand whole requests to :meth:`Pipeline.offer`;
one worker thread judges them in arrival order through ``analyze``'s
:class:`~otel_loopguard.analyze.replay.Replayer` (the one span follower and the monitor,
exactly as saved traces are replayed), each request's spans grouped by trace and replayed
as a part of that trace at once: a live service cannot wait for a trace's root, which ends
last. One thread, because the monitor's run table is not shared: the GIL would serialise
the work anyway, and judging in arrival order keeps a run's events in order.

Bounded: at most ``max_pending`` spans wait (``offer`` answers False past it, and the
receivers tell the sender to retry later); live runs are capped at the config's
``max_runs`` (the least recently touched finished first); the follower and the monitor
bound their own tables. ``drain`` judges everything accepted, then stops the thread.

Span times are the monitor's clock (as in replay), so timeouts and the run TTL are measured
in the agents' time; a span ending more than a minute ahead of this machine's clock is
taken as ending now, so a sender with a wrong clock cannot expire other senders' runs.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from otel_loopguard.analyze.replay import DecisionRecord, Replayer, RunRecord
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Decision
from otel_loopguard.engine.events import Event
from otel_loopguard.spans.view import SpanView

#: how far ahead of this machine's clock a span's time may be before it counts as now
MAX_CLOCK_AHEAD_NS = 60 * 1_000_000_000

DecisionHook = Callable[[RunRecord, DecisionRecord, Decision, Event, "str | None"], None]


class Pipeline:
    def __init__(
        self,
        config: LoopGuardConfig,
        on_decision: DecisionHook,
        on_run: Callable[[RunRecord], None],
        *,
        max_pending: int,
        on_error: Callable[[str, BaseException], None],
        on_batch: Callable[[float, int], None] | None = None,
        on_run_start: Callable[[str, str], None] | None = None,
        on_turn_end: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.max_pending = max(1, max_pending)
        self._on_decision = on_decision
        self._on_error = on_error
        self._on_batch = on_batch
        self.replayer = Replayer(
            config,
            on_run,
            on_decision=self._decided,
            on_run_start=on_run_start,
            on_turn_end=on_turn_end,
        )
        self._queue: deque[list[SpanView] | None] = deque()
        self._cond = threading.Condition()
        self.pending = 0  # spans accepted, not judged yet
        self.judged = 0
        self._part: list[SpanView] = []  # the trace part being replayed (for service.name)
        self._thread = threading.Thread(target=self._work, name="loopguard-serve", daemon=True)
        self._closed = False

    def start(self) -> None:
        self._thread.start()

    def offer(self, views: list[SpanView]) -> bool:
        """Accept a request's spans for judging, or False when there is no room now."""
        if not views:
            return True
        with self._cond:
            if self._closed or self.pending + len(views) > self.max_pending:
                return False
            self.pending += len(views)
            self._queue.append(views)
            self._cond.notify()
        return True

    def drain(self, timeout: float | None = None) -> bool:
        """Refuse new spans, judge every accepted one, stop the worker; False on timeout."""
        with self._cond:
            self._closed = True
            self._queue.append(None)
            self._cond.notify()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _work(self) -> None:
        queue = self._queue
        cond = self._cond
        while True:
            with cond:
                while not queue:
                    cond.wait()
                views = queue.popleft()
            if views is None:
                return
            started = time.perf_counter()
            try:
                self._judge(views)
            except Exception as exc:  # a bug must not stop the service
                self._on_error("serve.pipeline", exc)
            with cond:
                self.pending -= len(views)
                self.judged += len(views)
            if self._on_batch is not None:
                try:
                    self._on_batch(time.perf_counter() - started, len(views))
                except Exception as exc:
                    self._on_error("serve.metrics", exc)

    def _judge(self, views: list[SpanView]) -> None:
        parts: dict[str, list[SpanView]] = {}
        # the monitor's clock is span time, and the latest end time seen is the watermark
        # that expires idle conversations: one sender whose clock runs ahead must not end
        # every other sender's runs, so a time in the future counts as now (plus a minute)
        latest = time.time_ns() + MAX_CLOCK_AHEAD_NS
        for view in views:
            end = view.end_time_unix_nano
            if end is not None and end > latest:
                view.end_time_unix_nano = latest
                start = view.start_time_unix_nano
                if start is not None and start > latest:
                    view.start_time_unix_nano = latest
            part = parts.get(view.trace_id)
            if part is None:
                parts[view.trace_id] = [view]
            else:
                part.append(view)
        replayer = self.replayer
        for part in parts.values():
            self._part = part
            try:
                replayer.replay_part(part)
            except Exception as exc:  # one broken trace must not lose the others
                self._on_error("serve.replay", exc)
        self._part = []
        try:
            replayer.finish_oldest_runs(max(self.config.max_runs, 1))
        except Exception as exc:
            self._on_error("serve.runs", exc)

    def _decided(
        self, record: RunRecord, item: DecisionRecord, decision: Decision, event: Event
    ) -> None:
        self._on_decision(record, item, decision, event, self._service_of(item.span_id))

    def _service_of(self, span_id: str | None) -> str | None:
        """``service.name`` of the resource that sent the decision's span."""
        part = self._part
        chosen: Any = None
        for view in part:
            if view.span_id == span_id:
                chosen = view
                break
        if chosen is None and part:
            chosen = part[0]
        if chosen is None:
            return None
        name = chosen.resource_attributes.get("service.name")
        return str(name) if name is not None else None
