"""Fixtures shared by the core's test folders."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from otel_loopguard_testing import OTLPReceiver

# tests/dists/ is the `dists` suite (scripts/run_tests.py): it builds and installs every
# distribution in venvs of its own, so the core's suites leave it out; tests/collector/ is
# the `collector` suite (the Go-built Collector and Jaeger), run once rather than on every
# Python the core's suites run on
collect_ignore = ["dists", "collector"]


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    """A real OTLP/HTTP receiver on a loopback port (the suites' shared one): ``.bodies``
    (raw) and ``.requests`` (decoded with the official protobuf class)."""
    with OTLPReceiver() as server:
        yield server
