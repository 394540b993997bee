"""Where the shared part of a run lives: :func:`open_store` reads ``OTEL_LOOPGUARD_STORE``.

``memory`` (the default) keeps everything in the process; a ``redis://`` or ``rediss://``
URL shares STOPs, run counters, detector state and fleet-budget usage between every
process using the same server and key prefix (``docs/fleet.md``). A store that cannot be
opened (the ``redis`` package missing, a URL it cannot parse) is one log line and the
memory store: bad configuration never breaks the host program.
"""

from __future__ import annotations

import logging

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.extras import install_hint
from otel_loopguard.engine.store.base import (
    CounterDelta,
    ErrorSink,
    GateAnswer,
    LatencySink,
    RunStore,
    RunTotals,
    StopRecord,
    StoredState,
    Usage,
    UserWindow,
)
from otel_loopguard.engine.store.memory import MemoryStore

logger = logging.getLogger("otel_loopguard.store")

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def open_store(
    config: LoopGuardConfig,
    *,
    on_error: ErrorSink | None = None,
    on_latency: LatencySink | None = None,
) -> RunStore:
    """The configured store (never raises; the memory store when anything is wrong)."""
    where = (config.store or "memory").strip()
    if where.lower() == "memory":
        return MemoryStore(ttl=config.run_ttl, max_runs=config.max_runs)
    if not where.lower().startswith(REDIS_SCHEMES):
        logger.warning(
            "otel-loopguard: ignoring %s (expected `memory` or a redis:// / rediss:// URL); "
            "using the memory store",
            LoopGuardConfig.env_name("store"),
        )
        return MemoryStore(ttl=config.run_ttl, max_runs=config.max_runs)
    try:
        from otel_loopguard.engine.store.redis import RedisStore

        return RedisStore(
            where,
            timeout_ms=config.store_timeout,
            prefix=config.store_prefix,
            ttl=config.run_ttl,
            on_error=on_error,
            on_latency=on_latency,
        )
    except ImportError:
        logger.warning(
            "otel-loopguard: %s is a Redis URL but the redis package is not installed "
            "(%s); using the memory store, runs are not shared between processes",
            LoopGuardConfig.env_name("store"),
            install_hint("redis"),
        )
    except Exception as exc:
        from otel_loopguard.engine.store.redis import redacted

        logger.warning(
            "otel-loopguard: cannot open the run store %s (%s: %s); using the memory store",
            redacted(where),
            type(exc).__name__,
            exc,
        )
    return MemoryStore(ttl=config.run_ttl, max_runs=config.max_runs)


__all__ = [
    "CounterDelta",
    "GateAnswer",
    "MemoryStore",
    "RunStore",
    "RunTotals",
    "StopRecord",
    "StoredState",
    "Usage",
    "UserWindow",
    "open_store",
]
