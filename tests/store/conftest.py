"""The store suites run against a real ``redis-server`` (Debian's package; ``scripts/test.sh``
installs it): one fresh server per test, stopped at teardown."""

from __future__ import annotations

from otel_loopguard_testing.redis_server import redis_server

__all__ = ["redis_server"]
