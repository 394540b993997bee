"""Signatures: canonical, masked, capped, private, and never raising."""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_loopguard.engine.signatures import (
    MAX_ITEMS,
    call_signature,
    combine_signatures,
    describe_call,
    describe_output,
    load_similarity,
    output_exact_signature,
    output_signature,
)

HEX16 = re.compile(r"^[0-9a-f]{16}$")


def exact(tool: str, arguments: Any) -> str:
    return call_signature(tool, arguments)[0]


def near(tool: str, arguments: Any) -> str:
    return call_signature(tool, arguments)[1]


def out(output: Any) -> str:
    return output_signature(output)[0]


# canonical form ------------------------------------------------------------------------


def test_key_order_at_every_depth_does_not_matter() -> None:
    a = {"query": "x", "filters": {"lang": "en", "year": 2024}, "limit": 5}
    b = {"limit": 5, "filters": {"year": 2024, "lang": "en"}, "query": "x"}
    assert exact("search", a) == exact("search", b)


def test_json_string_arguments_equal_the_parsed_dict() -> None:
    assert exact("search", '{"b": 1, "a": [1, 2]}') == exact("search", {"a": [1, 2], "b": 1})


def test_whitespace_is_folded() -> None:
    assert exact("search", {"q": "pricing   plans\n"}) == exact("search", {"q": " pricing plans"})


def test_case_is_folded_in_free_text_only() -> None:
    assert exact("search", {"q": "Pricing Plans"}) == exact("search", {"q": "pricing plans"})
    # identifiers keep their case: paths, ids, enum-like single tokens, camelCase, URLs
    for left, right in [
        ("/Users/Alice/a.txt", "/users/alice/a.txt"),
        ("AbC123", "abc123"),
        ("DESC", "desc"),
        ("open /Docs/Plan.md now", "open /docs/plan.md now"),
        ("call getUserById please", "call getuserbyid please"),
        ("see https://Example.com/A", "see https://example.com/a"),
    ]:
        assert exact("t", {"v": left}) != exact("t", {"v": right}), (left, right)


def test_tool_name_and_values_distinguish_calls() -> None:
    assert exact("search", {"q": "x"}) != exact("fetch", {"q": "x"})
    assert exact("search", {"q": "x"}) != exact("search", {"q": "y"})
    assert exact("search", {"q": 1}) != exact("search", {"q": [1]})


def test_signatures_are_short_hashes_without_content() -> None:
    for signature in (*call_signature("search", {"q": "secret plan"}), *output_signature("x")):
        assert HEX16.match(signature)
    assert describe_call("search", {"query": "pricing"}) == "search(query=pricing)"
    assert describe_output("No results") == "no results"


def test_combined_signatures_are_order_free() -> None:
    assert combine_signatures(["a", "b", "a"]) == combine_signatures(["b", "a"])
    assert combine_signatures(["a"]) != combine_signatures(["a", "b"])


# masking -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("no results (request 8f3a91c2)", "no results (request 1b7d00e4)"),
        ("done, request_id=abc-1", "done, request_id=zzz-2"),
        ("trace id: 4bf92f3577b34da6a3ce929d0e0e4736", "trace id: 00f067aa0ba902b7"),
        (
            "created 550e8400-e29b-41d4-a716-446655440000",
            "created 6ba7b810-9dad-11d1-80b4-00c04fd430c8",
        ),
        ("as of 2026-11-30T10:00:01Z", "as of 2026-12-01 09:13:59.123+01:00"),
        ("updated 2026-11-30", "updated 2027-01-02"),
        ("at 10:00:01 ok", "at 23:59:59 ok"),
        ("took 12 ms", "took 480 ms"),
        ("epoch 1764496800", "epoch 1764496999"),
        ("object at 0x7f6aba3a4c50", "object at 0x7f6aba000000"),
        ("sha deadbeef00112233", "sha 0123456789abcdef"),
    ],
)
def test_volatile_tokens_in_outputs_are_masked(first: str, second: str) -> None:
    assert out(first) == out(second)


def test_real_differences_in_outputs_stay() -> None:
    assert out("3 results") != out("4 results")
    assert out("no results for pricing") != out("no results for billing")


def test_call_arguments_keep_ids_but_mask_timestamps_and_volatile_keys() -> None:
    first, second = "550e8400-e29b-41d4-a716-446655440000", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
    assert exact("get_order", {"id": first}) != exact("get_order", {"id": second})
    assert exact("get_order", {"id": 123456789}) != exact("get_order", {"id": 123456780})
    assert exact("log", {"msg": "at 2026-11-30T10:00:01Z"}) == exact(
        "log", {"msg": "at 2026-11-30T11:22:33Z"}
    )
    assert exact("search", {"q": "x", "request_id": "a1"}) == exact(
        "search", {"q": "x", "request_id": "b2"}
    )
    assert exact("search", {"q": "x", "nonce": 1}) == exact("search", {"q": "x", "nonce": 2})


# near-duplicate key --------------------------------------------------------------------


@pytest.mark.parametrize(
    "paraphrase",
    ["Plans pricing", "pricing plans?", "please find the pricing plan", "PRICING, plans!!"],
)
def test_near_key_catches_order_case_punctuation_and_filler(paraphrase: str) -> None:
    assert near("search", {"query": paraphrase}) == near("search", {"query": "pricing plans"})
    assert exact("search", {"query": paraphrase}) != exact("search", {"query": "pricing plans"})


def test_near_key_keeps_content_words_keys_and_tools_apart() -> None:
    assert near("search", {"query": "pricing plans"}) != near("search", {"query": "billing plans"})
    assert near("search", {"query": "x"}) != near("search", {"topic": "x"})
    assert near("search", {"query": "x"}) != near("lookup", {"query": "x"})
    assert near("search", {"a": "x y"}) == near("search", {"a": "y x"})


def test_near_key_of_only_filler_words_still_discriminates() -> None:
    assert near("t", {"q": "what is it"}) != near("t", {"q": "who are you"})


# cost and robustness -------------------------------------------------------------------


def test_the_cap_bounds_cost_not_identity() -> None:
    """Two values that differ anywhere, even 10 MB in, sign differently (issue 18, point 1)."""
    head = "search term " * 40
    one, two = head + "tail one", head + "tail two"
    assert exact("t", one) != exact("t", two)
    assert exact("t", {"text": one}) != exact("t", {"text": two})
    assert near("t", {"text": one}) != near("t", {"text": two})
    assert out(one) != out(two)
    huge = "x" * 10_000_000
    assert exact("t", huge) == exact("t", "x" * 10_000_000)
    assert exact("t", huge) != exact("t", huge[:-1] + "y")
    assert exact("t", huge) != exact("t", huge[:-1])  # the length counts past the hashed bound
    assert exact("t", b"b" * 5000) != exact("t", b"b" * 4999 + b"c")
    assert exact("t", "a" * 10_000_000) != exact("t", "b" * 10_000_000)


def _edit(body_line: str) -> dict[str, str]:
    lines = [f"    value_{i} = compute({i})  # step {i}" for i in range(60)]
    return {"path": "src/app.py", "new_str": "def run():\n" + "\n".join([*lines, body_line])}


def test_distinct_long_edits_are_distinct_calls() -> None:
    """Two 2 KB edits that differ after character 200 are two calls, exactly and nearly."""
    first, second = _edit("    return value_1"), _edit("    return value_2")
    assert len(first["new_str"]) > 2000
    assert exact("str_replace", first) != exact("str_replace", second)
    assert near("str_replace", first) != near("str_replace", second)
    # the JSON string a model sends, too long to be parsed, still signs the whole edit
    assert exact("edit", json.dumps(first) * 4) != exact("edit", json.dumps(second) * 4)
    assert exact("str_replace", first) == exact("str_replace", _edit("    return value_1"))


@pytest.mark.parametrize(
    ("arguments", "other"),
    [
        # indentation is meaning in Python
        ({"new_str": "if x:\n    return 1"}, {"new_str": "if x:\n  return 1"}),
        ({"code": "print( 1 )"}, {"code": "print(1)"}),
        ({"command": "grep -n 'a  b' f.py"}, {"command": "grep -n 'a b' f.py"}),
        ({"command": "ls Docs"}, {"command": "ls docs"}),
        ({"patch": "--- a/x\n+++ b/x\n-a  b\n+a b"}, {"patch": "--- a/x\n+++ b/x\n-a b\n+a b"}),
        ({"file_path": "/tmp/My  Notes.txt"}, {"file_path": "/tmp/My Notes.txt"}),
        # no telling key: the shape says code (an indented block, a flag, braces)
        ({"input": "def f():\n    pass"}, {"input": "def f():\n  pass"}),
        ({"input": "ls  -la"}, {"input": "ls -la"}),
        ("SELECT {a} FROM t", "select {a} from t"),
    ],
)
def test_code_commands_patches_and_paths_keep_whitespace_and_case(
    arguments: Any, other: Any
) -> None:
    assert exact("t", arguments) != exact("t", other)
    assert near("t", arguments) != near("t", other)


def test_free_text_is_still_folded_whatever_its_key() -> None:
    for key in ("query", "q", "prompt", "message", "text", "description"):
        assert exact("t", {key: "Pricing   Plans"}) == exact("t", {key: "pricing plans"}), key
        assert near("t", {key: "plans, pricing?"}) == near("t", {key: "Pricing plans"}), key


def test_volatile_tokens_past_the_cap_are_masked_in_outputs() -> None:
    body = "row ok\n" * 100
    assert out(body + "no results (request 8f3a91c2) at 10:00:01") == out(
        body + "no results (request 1b7d00e4) at 23:59:59"
    )
    assert out(body + "3 results") != out(body + "4 results")


def test_huge_json_string_is_not_parsed_but_still_signed() -> None:
    payload = json.dumps({"rows": list(range(1_000_000))})
    assert HEX16.match(exact("bulk_insert", payload))
    assert exact("bulk_insert", payload) != exact("bulk_insert", payload[:300] + "]}")


def test_huge_containers_are_cut_at_the_item_cap() -> None:
    big = list(range(1_000_000))
    changed = [*big[:MAX_ITEMS], "something else", *big[MAX_ITEMS + 1 :]]
    assert exact("t", big) == exact("t", changed)
    assert exact("t", big) != exact("t", ["other", *big[1:]])
    many_keys = {f"k{i}": i for i in range(1_000_000)}
    assert HEX16.match(exact("t", many_keys))


def test_max_chars_sets_the_readable_prefix() -> None:
    a, b = "x" * 50 + "A TAIL", "x" * 50 + "B TAIL"
    assert describe_call("t", {"v": a}, max_chars=40).startswith("t(v=" + "x" * 40 + "…#")
    assert call_signature("t", {"v": a}, max_chars=40) != call_signature(
        "t", {"v": b}, max_chars=40
    )
    assert "…#" not in describe_call("t", {"v": a}, max_chars=200)  # short: no digest


def test_cyclic_structures_do_not_raise() -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    mapping: dict[str, Any] = {"a": 1}
    mapping["self"] = mapping
    assert exact("t", looped) == exact("t", looped)
    assert HEX16.match(exact("t", mapping)) and HEX16.match(out(mapping))


def test_awkward_values_do_not_raise() -> None:
    class BadRepr:
        __slots__ = ()

        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    class Record:
        def __init__(self, name: str) -> None:
            self.name = name
            self._private = object()

    for value in [
        "\ud800 lone surrogate \udfff",
        b"\xff\xfe\x00 bytes",
        bytearray(b"abc"),
        BadRepr(),
        10**5000,
        float("nan"),
        {1: "int key", (1, 2): "tuple key", None: 0},
        {"set": {3, 1, 2}},
        object(),
    ]:
        assert HEX16.match(exact("t", value)) and HEX16.match(out(value))
    assert exact("t", Record("a")) == exact("t", Record("a")) != exact("t", Record("b"))
    assert exact("t", object()) == exact("t", object())  # memory addresses are masked


def test_sets_are_order_free() -> None:
    assert exact("t", {"tags": {"b", "a", "c"}}) == exact("t", {"tags": {"c", "b", "a"}})


def test_similarity_loader_finds_a_callable_and_refuses_junk() -> None:
    assert load_similarity("difflib:SequenceMatcher") is not None
    assert load_similarity(None) is None
    assert load_similarity("os:sep") is None
    assert load_similarity("nope_missing_module:f") is None


# properties ----------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(tool=st.text(max_size=20), value=json_values)
def test_never_raises_and_is_deterministic(tool: str, value: Any) -> None:
    first = call_signature(tool, value), output_signature(value)
    second = call_signature(tool, value), output_signature(value)
    assert first == second
    assert all(HEX16.match(s) for pair in first for s in pair)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=6), st.permutations(range(6)))
def test_dict_key_order_never_matters(mapping: dict[str, Any], order: list[int]) -> None:
    items = list(mapping.items())
    shuffled = dict(items[i] for i in order if i < len(items))
    assert call_signature("t", mapping) == call_signature("t", shuffled)
    assert output_signature(mapping) == output_signature(shuffled)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_any_text_signs_in_every_form(text: str) -> None:
    assert HEX16.match(exact("t", text)) and HEX16.match(out(text))
    assert isinstance(describe_call("t", text), str) and isinstance(describe_output(text), str)


def test_enums_and_slotted_objects_sign_by_their_content() -> None:
    import enum

    class Color(enum.Enum):
        RED = 1
        BLUE = 2

    class Point:
        __slots__ = ("x", "y")

        def __init__(self, x: int, y: int) -> None:
            self.x, self.y = x, y

    assert exact("paint", {"color": Color.RED}) != exact("paint", {"color": Color.BLUE})
    assert exact("move", Point(1, 2)) == exact("move", Point(1, 2)) != exact("move", Point(1, 3))
    assert describe_call("move", {"to": Point(1, 2)}) == "move(to=Point{x=1,y=2})"


def test_near_key_keeps_numbers_in_arguments_as_ids() -> None:
    assert near("get_order", {"id": "12345678"}) != near("get_order", {"id": "87654321"})
    assert near("list", {"page": "007 results"}) == near("list", {"page": "Results 7"})
    assert (
        output_signature("order 123456 shipped")[1] == output_signature("Order 654321 shipped")[1]
    )


# signatures written into traces must never change ---------------------------------------

PINS = Path(__file__).with_name("signature_pins.json")


class PinColor(enum.Enum):
    RED = 1


@dataclasses.dataclass
class PinPair:
    a: int
    b: str


class PinRecord:
    def __init__(self, name: str) -> None:
        self.name = name
        self._private = object()


class PinPoint:
    __slots__ = ("x", "y")

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y


class PinBadRepr:
    __slots__ = ()

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def _pinned_object(spec: dict[str, Any]) -> Any:
    kind = spec["$object"]
    if kind == "cycle-list":
        looped: list[Any] = [1]
        looped.append(looped)
        return looped
    if kind == "cycle-dict":
        mapping: dict[str, Any] = {"a": 1}
        mapping["self"] = mapping
        return mapping
    made = {
        "Record": lambda: PinRecord(spec.get("name", "")),
        "Point": lambda: PinPoint(spec.get("x", 0), spec.get("y", 0)),
        "Color.RED": lambda: PinColor.RED,
        "Pair": lambda: PinPair(spec.get("a", 0), spec.get("b", "")),
        "bare": object,
        "BadRepr": PinBadRepr,
    }
    return made[kind]()


def encode_value(value: Any) -> Any:
    """A value as JSON that :func:`decode_value` turns back into an equal value, types kept."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode_value(item) for item in value]
    if isinstance(value, tuple):
        return {"$tuple": [encode_value(item) for item in value]}
    if isinstance(value, (set, frozenset)):
        return {"$set": [encode_value(item) for item in value]}
    if isinstance(value, dict):
        return {"$dict": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    raise TypeError(f"no encoding for {type(value).__name__}")


def decode_value(encoded: Any) -> Any:
    if isinstance(encoded, list):
        return [decode_value(item) for item in encoded]
    if not isinstance(encoded, dict):
        return encoded
    tag, body = next(iter(encoded.items()))
    if tag == "$tuple":
        return tuple(decode_value(item) for item in body)
    if tag == "$set":
        return {decode_value(item) for item in body}
    if tag == "$dict":
        return {decode_value(k): decode_value(v) for k, v in body}
    if tag == "$bytes":
        return bytes.fromhex(body)
    if tag == "$repeat":
        return body[0] * body[1]
    if tag == "$range":
        return list(range(body))
    if tag == "$power":
        return body[0] ** body[1]
    if tag == "$json":
        return json.dumps(decode_value(body))
    if tag == "$object":
        return _pinned_object(encoded)
    raise ValueError(f"unknown tag {tag!r}")


def sign_case(case: dict[str, Any]) -> tuple[list[str], str]:
    """A pinned case signed by this checkout: its two signatures and its readable form."""
    value, max_chars, tool = decode_value(case["value"]), case["max_chars"], case["tool"]
    if case["kind"] == "call":
        signature = call_signature(tool, value, max_chars)
        return list(signature), describe_call(tool, value, max_chars)
    return list(output_signature(value, max_chars)), describe_output(value, max_chars)


def test_signatures_equal_those_pinned_from_the_original_implementation() -> None:
    """Signatures go into exported traces and are compared with fresh ones on replay.

    ``signature_pins.json`` holds about 1,000 varied inputs (JSON strings and dicts as tool
    spans carry them, nested lists, unicode, UUIDs, timestamps, hex ids, numbers, huge
    strings, bytes, ``None``, objects, cycles) with the signatures and readable forms that
    the implementation before the speed work (commit 605550e) produced for them. The
    optimised code must give byte-identical results for every one. A change of the
    signatures by design (``repinned`` in the file says which and why: issue 18's whole-value
    digests and verbatim code) re-signs the cases with ``python tests/test_signatures.py
    --repin "why"``, after checking that with the new behaviour switched off nothing else
    differs.

    What is a word, a digit or a letter's case comes from the interpreter's Unicode database
    (``\\w``, ``str.isalnum``, ``str.lower``), which each Python release updates: the pins were
    made with Unicode 14.0 (Python 3.11), and Python 3.10's 13.0 does not know letters added
    in 14.0 (U+087B, U+171F). So on another Python a case may differ only when its text holds
    a character whose category there is not the one the pins' file records for it; on the
    pins' own Unicode version every case must match.
    """
    pins = json.loads(PINS.read_text(encoding="utf-8"))
    assert pins["baseline"] == "605550e" and len(pins["cases"]) > 1000
    assert all(change["why"] and change["cases"] for change in pins.get("repinned", []))
    pinned_category = {  # code points, as JSON would join two surrogates into one character
        chr(code): category
        for category, codes in pins["unicode"]["categories"].items()
        for code in codes
    }
    recategorised = {
        char for char, category in pinned_category.items() if unicodedata.category(char) != category
    }
    if unicodedata.unidata_version == pins["unicode"]["version"]:
        assert not recategorised
    differing, explained = [], []
    for case in pins["cases"]:
        signature, described = sign_case(case)
        if signature != case["signature"] or described != case["describe"]:
            value, max_chars, tool = decode_value(case["value"]), case["max_chars"], case["tool"]
            text = json.dumps([tool, case["value"]], ensure_ascii=False)
            changed = sorted(f"U+{ord(char):04X}" for char in recategorised.intersection(text))
            found = (case["kind"], tool, repr(value)[:120], max_chars)
            (explained if changed else differing).append((*found, changed))
    assert not differing, f"{len(differing)} signatures changed, first: {differing[:3]}"
    # the pins' characters differ in only a few categories from 13.0 to 15.1: if most cases
    # differed, the cause would be something else
    assert len(explained) <= 10, explained


@pytest.mark.parametrize("space", ["\xa0", "\u2003", "\x1c", "\x85"])
def test_code_with_a_no_break_space_is_signed_by_its_content(space: str) -> None:
    """Text whose only non-ASCII characters are whitespace that ``split`` folds, and which
    is code-shaped or under a verbatim key, once crashed the ASCII path and signed as
    ``<str>``: two different terminal outputs looked like the same answer (a false "same
    result" for the no-progress detector). Each now signs by its own content."""
    first = f"{space}$ ls -la /srv; f(x)"
    second = f"{space}$ cat /etc/hosts; g(y)"
    assert output_signature(first) != output_signature(second)
    assert call_signature("shell", {"command": first}) != call_signature(
        "shell", {"command": second}
    )
    assert describe_output(first, 200).strip() not in ("<str>", "")


def repin(why: str) -> int:
    """Re-sign every pinned case with this checkout; record ``why`` and how many changed."""
    pins = json.loads(PINS.read_text(encoding="utf-8"))
    changed = 0
    for case in pins["cases"]:
        signature, described = sign_case(case)
        if signature != case["signature"] or described != case["describe"]:
            case["signature"], case["describe"] = signature, described
            changed += 1
    if changed:
        pins.setdefault("repinned", []).append({"why": why, "cases": changed})
        PINS.write_text(_pins_text(pins), encoding="utf-8")
    print(f"{changed} of {len(pins['cases'])} cases re-signed")
    return 0


def _pins_text(pins: dict[str, Any]) -> str:
    """The file's layout: one top-level key a line, one case a line (small diffs)."""
    dump = json.dumps
    head = [f"{dump(key)}: {dump(value)}" for key, value in pins.items()]
    cases = ",\n".join(dump(case) for case in pins["cases"])
    lines = [line for line in head if not line.startswith('"cases"')]
    return "{" + ",\n".join([*lines, f'"cases": [\n{cases}\n]']) + "}\n"


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "--repin" or not sys.argv[2].strip():
        raise SystemExit('usage: python tests/test_signatures.py --repin "why they changed"')
    raise SystemExit(repin(sys.argv[2]))


def test_answers_are_signed_as_pinned_without_their_near_key() -> None:
    """Tool results and errors are signed by ``output_exact_signature`` on the hot path
    (no detector reads an answer's near key): it must give every pinned output's exact
    signature, or a saved trace's answers would stop matching fresh ones on replay; and the
    events made from answers carry that signature as their near key."""
    from otel_loopguard.engine.events import ErrorInfo, tool_error, tool_result

    pins = json.loads(PINS.read_text(encoding="utf-8"))
    outputs = [case for case in pins["cases"] if case["kind"] != "call"]
    assert len(outputs) > 300
    differing = [
        repr(decode_value(case["value"]))[:80]
        for case in outputs
        if output_exact_signature(decode_value(case["value"]), case["max_chars"])
        != case["signature"][0]
    ]
    assert not differing, differing[:3]
    result = tool_result("run", "search", "3 results for topic 17")
    assert result.signature == result.near_key == output_signature("3 results for topic 17")[0]
    error = tool_error("run", "search", ErrorInfo(type="Timeout", message="after 30 s"))
    assert error.signature == error.near_key and HEX16.match(error.signature)
