"""Would parsing in worker processes meet issue 4's 50,000 spans/s? A rejected design, measured.

``analyze`` spends about a third of its time on ``json.loads`` and building span views
(``analyze_throughput.py --breakdown``), work that needs no run state. This script replays a
JSON-lines export in one process (``--jobs 0``, what ``analyze`` does) and with ``J`` worker
processes that parse lines and build views while the main process replays them in file
order (the replay must stay in one process: runs cross lines and traces). It prints wall
throughput, the main process's CPU time per span and the workers' CPU time per span.

It is not shipped: on this 2-core machine the main process spends what it saved on taking
the views back (unpickling, rebuilding the views), so wall throughput does not move and
total CPU time rises by the workers' share. Moving the mapping into the workers too would
cut more from the main process, at the price of shipping events (see docs/benchmarks.md).

Run: ``python benchmarks/analyze_parallel_parse.py FILE [--jobs J]`` on a file written by
``analyze_throughput.py --keep FILE``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Iterator
from multiprocessing.pool import AsyncResult
from typing import Any

from otel_loopguard.analyze.command import GC_YOUNG_THRESHOLD
from otel_loopguard.analyze.readers import ReadStats, otlp_request_spans
from otel_loopguard.analyze.replay import Replayer, RunRecord
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.spans.view import SpanView

LINES_PER_TASK = 4

ViewFields = tuple[Any, ...]


def _fields(view: SpanView) -> ViewFields:
    return (
        view.name,
        view.trace_id,
        view.span_id,
        view.parent_span_id,
        view.kind,
        view.start_time_unix_nano,
        view.end_time_unix_nano,
        view.attributes,
        view.status_code,
        view.status_description,
        view.events,
        view.resource_attributes,
        view.scope_name,
    )


def parse_lines(lines: list[str]) -> list[list[ViewFields]]:
    """Worker: the span views of each line, as plain tuples (views do not pickle)."""
    stats = ReadStats()
    return [
        [_fields(view) for view in otlp_request_spans(json.loads(line), stats)] for line in lines
    ]


def _tasks(path: str) -> Iterator[list[str]]:
    with open(path, encoding="utf-8") as handle:
        task: list[str] = []
        for line in handle:
            task.append(line)
            if len(task) == LINES_PER_TASK:
                yield task
                task = []
        if task:
            yield task


def replay(path: str, jobs: int) -> tuple[int, list[RunRecord]]:
    runs: list[RunRecord] = []
    replayer = Replayer(LoopGuardConfig(), runs.append)
    spans = 0
    if jobs == 0:
        stats = ReadStats()
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                views = otlp_request_spans(json.loads(line), stats)
                spans += len(views)
                replayer.feed(views)
    else:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            pending: deque[AsyncResult[list[list[ViewFields]]]] = deque()

            def take_oldest() -> int:
                count = 0
                for batch in pending.popleft().get():
                    views = [SpanView(*fields) for fields in batch]
                    count += len(views)
                    replayer.feed(views)
                return count

            for task in _tasks(path):
                pending.append(pool.apply_async(parse_lines, (task,)))
                if len(pending) > 2 * jobs + 1:  # bounded: a few tasks in flight
                    spans += take_oldest()
            while pending:
                spans += take_oldest()
    replayer.finish()
    return spans, runs


def main() -> int:
    import gc

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (besides 0)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])  # as analyze does
    print(f"{'jobs':>6}{'spans/s wall':>14}{'main µs/span':>14}{'workers µs/span':>17}{'runs':>8}")
    for _ in range(args.repeats):
        for jobs in (0, args.jobs):
            before = os.times()
            wall = time.perf_counter()
            spans, runs = replay(args.file, jobs)
            wall = time.perf_counter() - wall
            after = os.times()
            main_cpu = (after.user - before.user) + (after.system - before.system)
            workers = (after.children_user - before.children_user) + (
                after.children_system - before.children_system
            )
            print(
                f"{jobs:>6}{spans / wall:>14,.0f}{main_cpu / spans * 1e6:>14.1f}"
                f"{workers / spans * 1e6:>17.1f}{len(runs):>8}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
