"""Fixtures of the ``compat/<name>/`` suites: a third-party instrumentation installed as the
suite's instrumentor, installed again with other settings for one test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .harness import Testbed


def reinstrumented_fixture(
    name: str, testbed: Testbed, make: Callable[[], Any], **instrument_kwargs: Any
) -> Any:
    """A fixture ``name``: the suite's instrumentor (``testbed.instrumentor``) replaced for
    the test by ``make()`` instrumented with ``instrument_kwargs`` (OpenInference's
    ``config=TraceConfig(hide_inputs=True, hide_outputs=True)``: content hidden), put back
    after it."""
    import pytest

    @pytest.fixture(name=name)
    def reinstrumented() -> Iterator[None]:
        testbed.instrumentor.uninstrument()
        other = make()
        other.instrument(tracer_provider=testbed.provider, **instrument_kwargs)
        try:
            yield
        finally:
            other.uninstrument()
            testbed.instrument(testbed.instrumentor)

    return reinstrumented


def openinference_hidden_fixture(testbed: Testbed, make: Callable[[], Any]) -> Any:
    """``content_hidden``: an OpenInference instrumentor with inputs and outputs hidden
    (``OPENINFERENCE_HIDE_INPUTS`` / ``_OUTPUTS``: it writes ``__REDACTED__`` instead)."""
    from openinference.instrumentation import TraceConfig

    return reinstrumented_fixture(
        "content_hidden", testbed, make, config=TraceConfig(hide_inputs=True, hide_outputs=True)
    )


def openinference_fixtures(
    theirs: Callable[[], Any], ours: Callable[[], Any], testbed: Testbed | None = None
) -> tuple[Any, ...]:
    """An OpenInference compat suite's fixtures, in its conftest::

        (instrumented, make_loopguard, loopguard, observe_loopguard, beside_ours,
         content_hidden) = openinference_fixtures(TheirInstrumentor, OurInstrumentor)

    :func:`~otel_loopguard_testing.harness.harness_fixtures` with theirs as the suite's
    instrumentor (our core alone beside it), ``beside_ours`` adding our package on the same
    provider for one test, ``content_hidden`` (:func:`openinference_hidden_fixture`)."""
    from .harness import harness_fixtures, instrumentor_fixture

    bed = testbed if testbed is not None else Testbed()
    return (
        *harness_fixtures(theirs, bed),
        instrumentor_fixture("beside_ours", ours),
        openinference_hidden_fixture(bed, theirs),
    )


def hidden_fixture() -> Any:
    """``hidden``, a test run twice: their content shown (``False``), then hidden
    (``True``: the suite's ``content_hidden`` fixture is in force)."""
    import pytest

    @pytest.fixture(name="hidden", params=[False, True], ids=["content", "content hidden"])
    def hidden(request: Any) -> bool:
        if request.param:
            request.getfixturevalue("content_hidden")
        return bool(request.param)

    return hidden


def ours_first_fixture(testbed: Testbed, theirs: Callable[[], Any], ours: Callable[[], Any]) -> Any:
    """``ours_inside``: ``make_loopguard`` with our package instrumented first and theirs
    after it (their wrapper outside ours: the other order of ``beside_ours``), the suite's
    instrumentor put back after the test."""
    import pytest

    @pytest.fixture(name="ours_inside")
    def ours_inside(make_loopguard: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
        testbed.instrumentor.uninstrument()
        mine = ours()
        mine.instrument(tracer_provider=testbed.provider)
        other = theirs()
        other.instrument(tracer_provider=testbed.provider)
        try:
            yield make_loopguard
        finally:
            other.uninstrument()
            mine.uninstrument()
            testbed.instrument(testbed.instrumentor)

    return ours_inside


#: the two instrumentation orders of a compat suite with our package, by the fixture that
#: installs each (:func:`ours_first_fixture` for ``ours_inside``)
ORDERS = {"theirs first": "beside_ours", "ours first": "ours_inside"}


def installed_in_order(request: Any, order: str, **settings: Any) -> Any:
    """The harness of a test run with ours and theirs in ``order`` (a key of
    :data:`ORDERS`), enforce mode unless ``mode`` says otherwise."""
    settings.setdefault("mode", "enforce")
    return request.getfixturevalue(ORDERS[order])(**settings)


def serve_fixture(name: str = "serve", make: Callable[..., Any] | None = None) -> Any:
    """``serve``: ``serve(turns)`` starts ``make(turns)`` (a ``ScriptedAPI`` by default, or a
    subclass) answering on a loopback port (its ``base`` attribute is the base URL to give
    the client), stopped after the test."""
    import pytest

    @pytest.fixture(name=name)
    def serve() -> Iterator[Callable[..., Any]]:
        from .scripted_openai import ScriptedAPI

        stops: list[Callable[[], None]] = []

        def start(turns: Any, **options: Any) -> Any:
            api = (make or ScriptedAPI)(turns, **options)
            api.base, stop = api.serve()
            stops.append(stop)
            return api

        yield start
        for stop in stops:
            stop()

    return serve
