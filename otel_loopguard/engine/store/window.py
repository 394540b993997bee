"""A rolling usage window in a fixed number of buckets (fleet budgets: tokens and cost per
user per hour).

The window is cut into :data:`BUCKETS` buckets of ``seconds / BUCKETS`` each; a bucket is
counted while any part of it lies in the window, so the sum may include up to one bucket
more than the exact window (under 2 % of it), never less: a budget trips no later than it
should. The Redis store runs the same arithmetic in its gate script (same bucket numbers),
so both stores agree.
"""

from __future__ import annotations

import math

#: buckets per window: bounded memory per user, at most 1/60 of the window of slack
BUCKETS = 60


def bucket_seconds(window: float) -> float:
    return max(window, 1.0) / BUCKETS


def bucket_of(now: float, window: float) -> int:
    return math.floor(now / bucket_seconds(window))


class UsageWindow:
    """Tokens and cost per bucket; :meth:`add` adds and returns the window's sums."""

    __slots__ = ("_buckets", "_window")

    def __init__(self, window: float) -> None:
        self._window = window
        self._buckets: dict[int, list[float]] = {}

    def add(self, now: float, tokens: int, cost: float) -> tuple[int, float]:
        current = bucket_of(now, self._window)
        oldest = current - BUCKETS
        if tokens or cost:
            slot = self._buckets.setdefault(current, [0.0, 0.0])
            slot[0] += tokens
            slot[1] += cost
        total_tokens = 0.0
        total_cost = 0.0
        for bucket in [b for b in self._buckets if b <= oldest]:
            del self._buckets[bucket]
        for used_tokens, used_cost in self._buckets.values():
            total_tokens += used_tokens
            total_cost += used_cost
        return int(total_tokens), total_cost
