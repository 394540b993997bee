"""The native signature core (``engine/_native_signatures.c``, the compiled build only)
answers exactly as the Python source does, or not at all.

``_canonical_text`` asks the C function first and runs its Python implementation when it
returns None. Here the C function is compared with that implementation alone
(``native=False``) on every string of the
pinned inputs and on many thousands of generated ones, for every combination of ``output``,
``verbatim`` and ``near`` and several caps: any answer it gives must be Python's, character
for character. The compiled suite (``LOOPGUARD_EXPECT_COMPILED=1``) requires the module; the
source suites have none and skip what needs it.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_signatures import PINS, decode_value

from otel_loopguard.engine import signatures
from otel_loopguard.engine.signatures import _canonical_text

EXPECT_COMPILED = os.environ.get("LOOPGUARD_EXPECT_COMPILED") == "1"
MAX_CHARS = (200, 40, 9)
FLAGS = [
    (output, verbatim, near)
    for output in (False, True)
    for verbatim in (False, True)
    for near in (False, True)
]


def _native_module() -> Any:
    try:
        return importlib.import_module("otel_loopguard.engine._native_signatures")
    except ImportError:
        return None


NATIVE = _native_module()


def python_text(
    value: str, max_chars: int, output: bool, verbatim: bool = False, near: bool = True
) -> tuple[str, str]:
    """The reference: ``_canonical_text``'s Python implementation, the native core not asked."""
    return _canonical_text(value, max_chars, output, verbatim, near, native=False)


needs_native = pytest.mark.skipif(NATIVE is None, reason="the native module is not built here")


def test_the_compiled_build_has_the_native_core_and_uses_it() -> None:
    if not EXPECT_COMPILED:
        assert NATIVE is None, "a native module in the source tree would shadow the Python"
        assert signatures._native_canonical_text is None
        return
    assert NATIVE is not None, "the compiled wheel must ship _native_signatures"
    assert signatures._native_canonical_text is NATIVE.canonical_text


def test_canonical_text_asks_the_native_hook_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wrapper returns the hook's answer, and the Python one where the hook says None."""
    asked: list[tuple[Any, ...]] = []

    def hook(*args: Any) -> tuple[str, str] | None:
        asked.append(args)
        return ("EXACT", "NEAR") if args[0] == "mine" else None

    monkeypatch.setattr(signatures, "_native_canonical_text", hook)
    assert _canonical_text("mine", 200, True) == ("EXACT", "NEAR")
    assert _canonical_text("Pricing Plans", 200, False) == ("pricing plans", "plan pricing")
    assert asked == [("mine", 200, True, False, True), ("Pricing Plans", 200, False, False, True)]


# the common cases: deleting the C logic (always None) fails here ---------------------------

COMMON = [
    ("topic 17", False, ("topic 17", "17 topic")),
    ("3 results for topic 17", True, ("3 results for topic 17", "17 3 result topic")),
    ("Pricing Plans", False, ("pricing plans", "plan pricing")),
    ("please find the Pricing plans", False, ("please find the pricing plans", "plan pricing")),
    ("no results", True, ("no results", "no result")),
    ("order 000123 is ready", True, ("order 000123 is ready", "# order ready")),
    ("page 007", False, ("page 007", "7 page")),
    ("Found 3 results (page 1), see Docs.", True, None),
    ("en", False, ("en", "en")),
    ("", True, ("", "")),
]


@needs_native
@pytest.mark.parametrize(("value", "output", "expected"), COMMON, ids=[c[0] for c in COMMON])
def test_the_native_path_handles_the_common_cases(
    value: str, output: bool, expected: tuple[str, str] | None
) -> None:
    answer = NATIVE.canonical_text(value, 200, output, False, True)
    assert answer is not None
    assert answer == python_text(value, 200, output)
    if expected is not None:
        assert answer == expected


@needs_native
def test_a_verbatim_argument_is_its_own_near_key_natively() -> None:
    for value in ("src/App.py", "ls -la ./build", "Run  Twice"):
        answer = NATIVE.canonical_text(value, 200, False, True, True)
        assert answer == (value, value) == python_text(value, 200, False, True)


@needs_native
@pytest.mark.parametrize(
    ("value", "output"),
    [
        ("no results (request 8f3a91c2)", True),  # a tagged reference
        ("took 12 ms", True),  # a duration
        ("at 2026-11-30T10:00:00Z", False),  # a timestamp in an argument
        ("request_id=abc", False),  # a tagged id in an argument
        ("id 550e8400-e29b-41d4-a716-446655440000", True),  # a uuid
        ("café", False),  # not ASCII
        ("two\nlines", False),  # not one line of printable ASCII
        ("x" * 201, False),  # past the cap: a rest digest
    ],
)
def test_the_native_path_leaves_the_rest_to_python(value: str, output: bool) -> None:
    assert NATIVE.canonical_text(value, 200, output, False, True) is None
    assert _canonical_text(value, 200, output) == python_text(value, 200, output)


TAG_WORDS = ("request", "req", "trace", "span", "correlation", "idempotency", "transaction", "txn")


@needs_native
@pytest.mark.parametrize("tag", TAG_WORDS)
@pytest.mark.parametrize("output", [False, True])
def test_every_tagged_id_is_left_to_python(tag: str, output: bool) -> None:
    """Each tag word with "id" or "key" is a tagged id the masks replace, in calls and outputs."""
    for value in (f"{tag} id abc123", f"Use {tag}_key=9f2", f"{tag.upper()}-ID: x"):
        assert NATIVE.canonical_text(value, 200, output, False, True) is None, value
        assert "<id>" in python_text(value, 200, output)[0], value


@needs_native
def test_many_words_sort_as_python_sorts_them() -> None:
    """More words than the insertion sort takes (qsort's path), repeats and fillers among them."""
    rng = random.Random(3)
    vocabulary = [*_PLAIN_TEXT.split(), "007", "7", "1234567", "Zeta", "ALPHA", "beta2", "Ab"]
    answered = 0
    for _ in range(200):
        value = " ".join(rng.choices(vocabulary, k=40))[:200]
        answer = NATIVE.canonical_text(value, 200, False, False, True)
        assert answer is not None, value
        assert answer == python_text(value, 200, False), value
        answered += len(answer[1].split()) > 16
    assert answered > 100


_PLAIN_TEXT = """pricing plans results topic the for please thanks its is class glass status bus
news a an of find show info data users items page query search order shipped error ok api sql
json config main test tests mss ss us"""


@needs_native
def test_the_native_function_never_raises() -> None:
    class Text(str):
        def split(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return ["overridden"]

    for args in [
        (b"bytes", 200, False, False, True),
        (None, 200, False, False, True),
        ("ok", "200", False, False, True),
        ("ok", 10**40, False, False, True),
        ("ok", -(10**40), False, False, True),
        ("ok", -5, False, False, True),
        ("ok", 200, 1, False, True),
        (Text("a b"), 200, False, False, True),
        ("\ud800 lone surrogate", 200, True, False, True),
    ]:
        assert NATIVE.canonical_text(*args) is None, args
    assert NATIVE.canonical_text("ok", 2**62, False, False, True) == ("ok", "ok")


@needs_native
def test_configure_refuses_words_no_near_key_can_hold() -> None:
    """Refused words leave the module unconfigured (so it answers nothing), never half set."""
    try:
        with pytest.raises(ValueError):
            NATIVE.configure(frozenset({"the", "Capital"}))
        assert NATIVE.canonical_text("topic 17", 200, False, False, True) is None
    finally:
        NATIVE.configure(signatures._FILLER_WORDS)
    assert NATIVE.canonical_text("the topic", 200, False, False, True) == ("the topic", "topic")


# differential: the pinned inputs and generated strings ----------------------------------


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string in a decoded pinned value (keys too), and in JSON held by a string;
    ten levels down at most (two pins are cycles)."""
    if depth > 10:
        return
    if isinstance(value, str):
        yield value
        if value[:1] in ("{", "["):
            with contextlib.suppress(ValueError):  # not JSON after all
                yield from _strings(json.loads(value), depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, depth + 1)
            yield from _strings(item, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item, depth + 1)


def _pinned_strings() -> list[str]:
    pins = json.loads(Path(PINS).read_text(encoding="utf-8"))
    found: dict[str, None] = {}
    for case in pins["cases"]:
        try:
            value = decode_value(case["value"])
        except Exception:
            continue
        for text in _strings(value):
            found[text] = None
            found[text.upper()] = None
            found[text.title()] = None
    return list(found)


_WORD_TEXT = (
    "pricing plans results topic the for please thanks its is class glass status bus news "
    "a an of find show info data users items page query search order shipped error ok "
    "api sql json config main test tests mss ss s us ms min sec secs seconds "
    "request req trace span correlation idempotency transaction txn id key ids keyed "
    "requests tracer spanner txns x xs 0x deadbeef cafebabe 8f3a91c2 Deadbeef"
)
WORDS = _WORD_TEXT.split()
_PIECE_TEXT = (
    "0 7 007 17 42 123 2024 2026 99999 123456 1234567 12345678 000000 3s 12ms 5 secs 12 ms "
    "2026-11-30 2026-11-30T10:00:00Z 10:00 10:00:00 12/31/2024 1/2 3:4 0x7fab 0xZZ "
    "550e8400-e29b-41d4-a716-446655440000 request_id=abc trace 4bf92f35 req-1234 "
    "getUserById camelCase HTTPServer iPhone Pricing PLANS Plans A I O.K. e.g. a.b a:b a_b "
    "user@example.com <tag> C:\\\\dir path/to/File.md /Users/Alice ./run ~/bin http://X.io/A "
    "{ } { x } ` && || ; ;x a; b $HOME $5 $( $ f(x) (a) a (b) _( -v --name - -- -1 a-b "
    "| > >> 2> a|b a>b 2>&1 & @ < \\ ( ) . , ! ? : ' \" # % * + = [ ] ^ ~ "
    "caf\u00e9 na\u00efve \u017f \u212a \u00a0 \u2003 \x1c \x85 \t \n \r \x0b \x7f \x00"
)
PIECES = _PIECE_TEXT.split(" ")  # non-ASCII: letters Python folds, spaces it splits on
SEPARATORS = (" ", " ", " ", "  ", "", ", ", ". ", "-", "/", ":", "_", " - ", "\t", "\n ")


def _generated(count: int, seed: int = 20261207) -> list[str]:
    rng = random.Random(seed)
    printable = string.ascii_letters + string.digits + string.punctuation + "    "
    made: list[str] = []
    for index in range(count):
        kind = index % 4
        if kind == 3:  # any printable ASCII, mostly: the character tests' edge cases
            alphabet = printable if rng.random() < 0.9 else printable + "\t\n\u00e9\x1c"
            text = "".join(rng.choices(alphabet, k=rng.randint(0, 30)))
        else:
            parts = []
            for _ in range(rng.randint(0, 9)):
                part = rng.choice(WORDS) if rng.random() < 0.6 else rng.choice(PIECES)
                shape = rng.random()
                if shape < 0.15:
                    part = part.capitalize()
                elif shape < 0.22:
                    part = part.upper()
                parts.append(part)
                parts.append(rng.choice(SEPARATORS))
            text = "".join(parts[:-1])
            if rng.random() < 0.1:
                text = " " * rng.randint(1, 2) + text + " " * rng.randint(0, 2)
        if rng.random() < 0.03:
            text = text * rng.randint(5, 40)  # past the caps
        made.append(text)
    return made


def _compare(values: list[str]) -> tuple[int, int]:
    """Check every answer the native function gives; (answers, questions)."""
    answered = asked = 0
    for value in values:
        for max_chars in MAX_CHARS:
            for output, verbatim, near in FLAGS:
                asked += 1
                native = NATIVE.canonical_text(value, max_chars, output, verbatim, near)
                if native is None:
                    continue
                answered += 1
                expected = python_text(value, max_chars, output, verbatim, near)
                assert native == expected, (value, max_chars, output, verbatim, near)
                assert type(native[0]) is str and type(native[1]) is str
    return answered, asked


@needs_native
def test_native_answers_equal_python_on_every_pinned_string() -> None:
    values = _pinned_strings()
    assert len(values) > 1000
    answered, asked = _compare(values)
    assert answered > asked // 4  # most pinned text is the common case


@needs_native
def test_native_answers_equal_python_on_generated_strings() -> None:
    answered, asked = _compare(_generated(12000))
    assert answered > asked // 5  # the generator is not all volatile, code or unicode


@needs_native
def test_the_signatures_equal_the_python_ones_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """The public signatures, on generated dicts, with and without the native hook."""
    rng = random.Random(7)
    values = _generated(600, seed=11)
    cases = [
        {rng.choice(["q", "query", "path", "cmd", "note"]): v for v in values[i : i + 3]}
        for i in range(0, len(values), 3)
    ]
    native = [
        (signatures.call_signature("t", case), signatures.output_signature(case)) for case in cases
    ]
    monkeypatch.setattr(signatures, "_native_canonical_text", None)
    python = [
        (signatures.call_signature("t", case), signatures.output_signature(case)) for case in cases
    ]
    assert native == python
