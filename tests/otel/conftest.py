"""Fixtures: a fresh guard per test, installed as the process-wide one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otel_loopguard.guard import set_guard

from .helpers import Stack, make_stack


@pytest.fixture
def stack() -> Iterator[Stack]:
    built = make_stack()
    previous = set_guard(built.guard)
    yield built
    set_guard(previous)


@pytest.fixture
def enforcing() -> Iterator[Stack]:
    built = make_stack(mode="enforce")
    previous = set_guard(built.guard)
    yield built
    set_guard(previous)
