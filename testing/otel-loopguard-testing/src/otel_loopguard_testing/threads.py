"""Run one worker per argument, each on its own thread, and wait for them all.

The concurrency tests start a handful of threads at once to race on a shared guard,
monitor or store; this is that start-all-then-join-all step, written once. The threads
are returned so a test can check none is still alive after a ``timeout``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def run_in_threads(
    worker: Callable[[T], object],
    arguments: Iterable[T],
    *,
    timeout: float | None = None,
    daemon: bool | None = None,
) -> list[threading.Thread]:
    """Start ``worker(argument)`` on a thread per argument (all started before any is
    joined, so they overlap), then join each within ``timeout`` seconds."""
    threads = [threading.Thread(target=worker, args=(a,), daemon=daemon) for a in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return threads
