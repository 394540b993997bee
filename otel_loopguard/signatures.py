"""Signatures: short, stable hashes that say "the same call" or "the same output".

Detectors compare signatures, never raw content, so a signature must be

* **canonical**: dict keys sorted at every depth, whitespace folded, case folded in free
  text (values with spaces) but never in identifiers (single-token values such as ids,
  paths, URLs and enum-like tokens, and tokens inside free text that contain ``/ \\ _ @``,
  digits, ``a.b`` / ``a:b`` or camelCase), so ``{"q": "Pricing  Plans", "n": 1}`` and
  ``{"n": 1, "q": "pricing plans"}`` are the same call while ``/Users/A`` and ``/users/a``
  are not;
* **masked**: volatile tokens are replaced before hashing so that
  ``no results (request 8f3a91c2)`` twice is the same output. Outputs mask UUIDs, ISO
  timestamps and dates, clock times, durations (``12 ms``), long hex (``0x7f..``, digests),
  digit runs of 8+ (epoch times, ids) and tagged ids (``request_id=...``, ``trace 4bf9..``).
  Call arguments mask less, because an id in an argument usually *is* the work
  (``get_order(id=<uuid>)`` for two uuids are two calls): only timestamps with a time of
  day, tagged request/trace/correlation/idempotency ids and values of keys such as
  ``nonce`` or ``timestamp``;
* **capped**: each string value is cut at ``max_chars`` (after a little slack for masking),
  containers at :data:`MAX_ITEMS` items, nesting at :data:`MAX_DEPTH`, and the whole form at
  :data:`MAX_NODES` values, so the cost is O(cap) even for a 10 MB string or a 1M-element
  list. Anything past the cap does not change the signature. A JSON-string argument (what
  models send) is parsed only when it is at most ``32 * max_chars`` long; longer ones are
  treated as text;
* **private**: the returned signatures are 16-hex-digit BLAKE2b hashes and nothing else, so
  they may be kept in run state and put into signal evidence with content capture off. The
  readable canonical form (``search(query=pricing)``, ``no results (request <id>)``) comes
  only from :func:`describe_call` / :func:`describe_output`, which callers use only when
  ``OTEL_LOOPGUARD_CAPTURE_CONTENT`` is on.

Besides the exact signature each function returns a *near-duplicate key*: the same value
lower-cased, punctuation stripped, filler words dropped (articles, prepositions, pronouns,
politeness: "please find the pricing"), plural ``-s`` trimmed and the words sorted and
de-duplicated, per dict key. Numbers are normalised as ids: in call arguments they are kept
(leading zeros dropped: ``page=007`` ~ ``page=7``), since ``get_order(id=1001)`` and
``id=1002`` are different work; in outputs a number of 6+ digits becomes one token. The key
catches paraphrases made of the same content words in another order, case or punctuation
("pricing plans?" / "Plans pricing" / "the pricing plan please") without any model download;
it does not catch synonyms ("cost" / "price"): that is what the optional similarity hook
(:func:`load_similarity`) is for.

Nothing here raises: any value, including cyclic structures, objects whose ``repr`` fails,
``bytes`` and strings with lone surrogates, yields a signature.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import importlib
import itertools
import json
import logging
import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

logger = logging.getLogger("otel_loopguard.signatures")

MAX_DEPTH = 6  # nesting levels canonicalised; deeper values become "…"
MAX_ITEMS = 32  # items per container; later items are not looked at
MAX_SORTED_KEYS = 128  # dicts/sets up to this size are fully sorted (order-free)
MAX_NODES = 256  # values per signature
_SLACK = 64  # extra characters read past the cap so a token cut by the cap is still masked
_JSON_PARSE_FACTOR = 32  # JSON strings up to max_chars * this are parsed, longer are text
_MAX_NAME = 256
_ELLIPSIS = "…"

# ---------------------------------------------------------------------------------------
# masking

_TIMESTAMP = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?Z|\s?[+-]\d{2}:?\d{2})?"
)
_TAGGED_ID = (
    r"(?i:\b(?:x[-_])?(?:request|req|trace|span|correlation|idempotency|transaction|txn)"
    r"[ _-]?(?:id|key)\b)\s*[:=#]?\s*[\"']?[\w.\-]+"
)
# masked in call arguments and in outputs
_WORD_START = r"(?<![\w])(?=[\w])"  # lets the engine skip mid-word positions quickly
_CALL_MASK = re.compile(f"{_WORD_START}(?:(?P<ts>{_TIMESTAMP})|(?P<tag>{_TAGGED_ID}))")
_TAG_ONLY = re.compile(f"{_WORD_START}(?P<tag>{_TAGGED_ID})")
# masked in outputs only: identifiers there are volatile answers, not the work asked for
_OUTPUT_MASK = re.compile(
    f"{_WORD_START}(?:(?P<ts>{_TIMESTAMP})"
    f"|(?P<tag>{_TAGGED_ID})"
    r"|(?P<ref>(?i:\b(?:request|req|trace|span|correlation|transaction)\b)\s*[:=#]?\s*"
    r"(?=[\w.\-]*\d)[\w.\-]{4,})"
    r"|(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
    r"|(?P<date>\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{4}\b)"
    r"|(?P<time>\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b)"
    r"|(?P<dur>\b\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|s|sec|secs|seconds)\b)"
    r"|(?P<hex>\b0x[0-9a-fA-F]{4,}\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b)"
    r"|(?P<num>\b\d{8,}\b))"
)
_DIGIT = re.compile(r"\d")
# Cheap supersets of the masks, checked before the full ``sub``: most texts with a digit
# ("3 results for topic 17") hold nothing volatile, and these checks cost a fraction of
# the full pattern's work at every word start. Each one finds a substring that every match
# of a mask group must contain (case-sensitive patterns: Python's regex engine is several
# times slower with ``(?i)``; the tag words are looked for in the lower-cased text).
_DIGIT_SHAPES = re.compile(r"\d(?:\d{3}-\d|/\d|:\d|\s?[mµun]?s|x[0-9a-fA-F])")  # ts date time dur
_HEX_RUN = re.compile(r"[0-9a-fA-F]{8}")  # uuid, hex digests, digit runs of 8+
_YEAR_DASH = re.compile(r"\d{4}-\d")  # timestamps


def _has_tag_word(lower: str) -> bool:
    """A word the tagged-id / reference masks start with (``request``, ``trace`` ...)."""
    return (
        "req" in lower
        or "trace" in lower
        or "span" in lower
        or "correlation" in lower
        or "idempotency" in lower
        or "transaction" in lower
        or "txn" in lower
    )


def _may_mask_output(head: str) -> bool:
    return bool(_DIGIT_SHAPES.search(head) or _HEX_RUN.search(head) or _has_tag_word(head.lower()))


def _may_mask_call(head: str) -> bool:
    return bool(_YEAR_DASH.search(head) or _has_tag_word(head.lower()))


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # default reprs: differ per object, mean nothing
_MASK_TOKENS = {
    "ts": "<ts>",
    "uuid": "<uuid>",
    "date": "<date>",
    "time": "<time>",
    "dur": "<dur>",
    "hex": "<hex>",
    "num": "<num>",
}
_TAG_NAME = re.compile(r"^[A-Za-z_\- ]+?(?=\s*[:=#\s]|\s*$)")


def _mask_match(match: re.Match[str]) -> str:
    group = match.lastgroup or ""
    if group in ("tag", "ref"):
        name = _TAG_NAME.match(match.group(0))
        return f"{name.group(0).strip() if name else 'id'} <id>"
    return _MASK_TOKENS.get(group, "<v>")


_VOLATILE_KEY = re.compile(
    r"^(?:x[-_])?(?:request|req|trace|span|correlation|idempotency|transaction|txn)[-_]?(?:id|key)$"
    r"|^(?:nonce|timestamp|ts|now|_t|cache_?buster|request_time|sent_at)$",
    re.IGNORECASE,
)

_first = operator.itemgetter(0)
_volatile_keys: dict[str, bool] = {}  # memo: argument names repeat across calls
_VOLATILE_MEMO_CAP = 4096


def _is_volatile_key(key: str) -> bool:
    known = _volatile_keys.get(key)
    if known is None:
        known = _VOLATILE_KEY.match(key) is not None
        if len(_volatile_keys) >= _VOLATILE_MEMO_CAP:
            _volatile_keys.clear()
        _volatile_keys[key] = known
    return known


# ---------------------------------------------------------------------------------------
# case and near-duplicate normalisation

_IDENTIFIER_TOKEN = re.compile(r"[/\\_@<]|\w[.:]\w|[a-z][A-Z]|\d")
_WORD = re.compile(r"[^\W_]+")
_FILLER_TEXT = """a an the this that these those of for to in on at by with from into about as and
or please kindly just can could would will should may might you your me my i we our us it its is
are was were be been being do does did what which who whom whose how when where any some all get
find show give tell look up search lookup info information details thanks thank"""
_FILLER_WORDS = frozenset(_FILLER_TEXT.split())


def _fold_free_text(text: str) -> str:
    """Lower-case words of free text; keep single-token values and identifier tokens as is."""
    if " " not in text or text == text.lower():
        return text
    return " ".join(
        [
            token if token.islower() or _IDENTIFIER_TOKEN.search(token) else token.lower()
            for token in text.split(" ")
        ]
    )


def _near_words(text: str, numbers_are_ids: bool) -> str:
    words = set(_WORD.findall(text.lower()))
    words -= _FILLER_WORDS
    normalise = _near_word_in_output if numbers_are_ids else _near_word_in_call
    return " ".join(sorted({normalise(word) for word in words}))


def _near_word_in_call(word: str) -> str:
    """Numbers in arguments are the work (ids, pages, counts): kept, leading zeros dropped."""
    if word.isdigit():
        return word.lstrip("0") or "0"
    if len(word) > 3 and word[-1] == "s" and word[-2] != "s":
        return word[:-1]  # plural: "plans" ~ "plan"
    return word


def _near_word_in_output(word: str) -> str:
    """Long numbers in outputs are ids and counters of the moment: one token for all."""
    if word.isdigit() and len(word) >= 6:
        return "#"
    return _near_word_in_call(word)


# ---------------------------------------------------------------------------------------
# canonical form


class _Walk:
    """One bounded canonicalisation: counts visited values and tracks the current path."""

    __slots__ = ("mask", "max_chars", "nodes", "numbers_are_ids", "path", "screen")

    def __init__(
        self,
        max_chars: int,
        mask: re.Pattern[str],
        screen: Callable[[str], bool] | None = None,
    ) -> None:
        self.max_chars = max_chars
        self.mask = mask
        self.numbers_are_ids = mask is _OUTPUT_MASK
        self.screen = screen
        self.nodes = 0
        self.path: set[int] = set()

    def text(self, value: str) -> tuple[str, str]:
        head = value[: self.max_chars + _SLACK]
        head = " ".join(head.split())
        if _DIGIT.search(head):
            screen = self.screen
            # non-ASCII text skips the screen: case-insensitive matching folds letters (the
            # long s, the Kelvin sign) that str.lower() keeps, which the checks could miss
            if screen is None or not head.isascii() or screen(head):
                head = self.mask.sub(_mask_match, head)
        else:
            lower = head.lower()
            if "id" in lower or "key" in lower:
                head = _TAG_ONLY.sub(_mask_match, head)  # the only mask that needs no digit
        head = _fold_free_text(head)[: self.max_chars]
        return head, _near_words(head, self.numbers_are_ids)

    def value(self, value: Any, depth: int) -> tuple[str, str]:
        """(exact canonical text, near-duplicate text) of ``value``; never raises."""
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            return _ELLIPSIS, ""
        if value is None or isinstance(value, bool):
            text = "null" if value is None else ("true" if value else "false")
            return text, text
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int):
            if -10_000_000 < value < 10_000_000:  # too short for any mask
                text = str(value)
                return text, text
            if value.bit_length() > 128:
                text = f"<int:{value.bit_length()}bits>"
                return text, text
            return self.text(str(value))
        if isinstance(value, float):
            text = repr(value) if math.isfinite(value) else str(value)
            return self.text(text)
        if isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value[: (self.max_chars + _SLACK) * 4])
            return self.text(raw.decode("utf-8", "replace"))
        marker = id(value)
        if marker in self.path:
            return "<cycle>", ""
        self.path.add(marker)
        try:
            return self._container(value, depth)
        finally:
            self.path.discard(marker)

    def _container(self, value: Any, depth: int) -> tuple[str, str]:
        if isinstance(value, Mapping):
            return self.mapping(value, depth)
        if isinstance(value, (list, tuple)):
            parts = [self.value(item, depth + 1) for item in itertools.islice(value, MAX_ITEMS)]
            if len(value) > MAX_ITEMS:
                parts.append((_ELLIPSIS, ""))
            return (
                "[" + ",".join(exact for exact, _ in parts) + "]",
                " ".join(sorted({near for _, near in parts if near})),
            )
        if isinstance(value, (set, frozenset)):
            items = value if len(value) <= MAX_SORTED_KEYS else itertools.islice(value, MAX_ITEMS)
            parts = sorted(self.value(item, depth + 1) for item in items)
            return (
                "{" + ",".join(exact for exact, _ in parts) + "}",
                " ".join(sorted({near for _, near in parts if near})),
            )
        if isinstance(value, enum.Enum):
            return self.text(f"{type(value).__name__}.{value.name}")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
            return self.mapping(fields, depth, type(value).__name__)
        attributes = getattr(value, "__dict__", None)
        if isinstance(attributes, dict) and not isinstance(value, type):
            public = {k: v for k, v in attributes.items() if not str(k).startswith("_")}
            return self.mapping(public, depth, type(value).__name__)
        slots = _slot_names(type(value))
        if slots:
            fields = {name: getattr(value, name, None) for name in slots[:MAX_ITEMS]}
            return self.mapping(fields, depth, type(value).__name__)
        try:
            text = _ADDRESS.sub(" at <addr>", repr(value)[: self.max_chars + _SLACK])
        except Exception:
            text = f"<{type(value).__name__}>"
        return self.text(text)

    def mapping(self, value: Mapping[Any, Any], depth: int, name: str = "") -> tuple[str, str]:
        try:
            size = len(value)
            items = value.items() if size <= MAX_SORTED_KEYS else None
            pairs = list(items if items is not None else itertools.islice(value.items(), MAX_ITEMS))
        except Exception:
            return f"<{type(value).__name__}>", ""
        keyed = []
        for key, item in pairs:
            key_text = key[:_MAX_NAME] if isinstance(key, str) else self.value(key, depth + 1)[0]
            keyed.append((key_text, item))
        keyed.sort(key=_first)
        exact_parts: list[str] = []
        near_parts: list[str] = []
        volatile_keys = _volatile_keys
        for key_text, item in keyed[:MAX_ITEMS]:
            volatile = volatile_keys.get(key_text)
            if volatile is None:
                volatile = _is_volatile_key(key_text)
            if volatile:
                exact, near = "<volatile>", ""
            elif type(item) is str and self.nodes < MAX_NODES and depth < MAX_DEPTH:
                self.nodes += 1  # what value() counts, without its type tests
                exact, near = self.text(item)
            else:
                exact, near = self.value(item, depth + 1)
            exact_parts.append(f"{key_text}={exact}")
            if near:
                near_parts.append(f"{key_text.lower()}={near}")
        if size > MAX_ITEMS:
            exact_parts.append(_ELLIPSIS)
        return f"{name}{{{','.join(exact_parts)}}}", ",".join(near_parts)


def _slot_names(cls: type) -> list[str]:
    """Public ``__slots__`` of a class and its bases (objects without a ``__dict__``)."""
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if isinstance(name, str) and not name.startswith("_") and name not in names:
                names.append(name)
    return names


def _canonical_arguments(arguments: Any, max_chars: int) -> tuple[str, str]:
    walk = _Walk(max_chars, _CALL_MASK, _may_mask_call)
    try:
        if isinstance(arguments, str) and len(arguments) <= max_chars * _JSON_PARSE_FACTOR:
            first = arguments[:64].lstrip()[:1]
            if first in ("{", "["):
                with contextlib.suppress(ValueError):  # not JSON after all: plain text
                    arguments = json.loads(arguments)
        if isinstance(arguments, Mapping):
            exact, near = walk.mapping(arguments, 0)
            return exact[1:-1], near  # search(query=x), not search({query=x})
        if arguments is None:
            return "", ""
        return walk.value(arguments, 0)
    except Exception:  # a hostile __len__/__iter__/__eq__: still a stable signature
        return f"<{type(arguments).__name__}>", ""


def _canonical_output(output: Any, max_chars: int) -> tuple[str, str]:
    walk = _Walk(max_chars, _OUTPUT_MASK, _may_mask_output)
    try:
        return walk.value(output, 0)
    except Exception:
        return f"<{type(output).__name__}>", ""


def _hash(*parts: str) -> str:
    data = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _tool_text(tool_name: Any) -> str:
    return str(tool_name)[:_MAX_NAME] if tool_name is not None else ""


# ---------------------------------------------------------------------------------------
# public API


def call_signature(tool_name: str, arguments: Any, max_chars: int = 200) -> tuple[str, str]:
    """``(exact, near)`` signatures of a tool call: 16-hex-digit hashes, no readable content."""
    tool = _tool_text(tool_name)
    exact, near = _canonical_arguments(arguments, max_chars)
    return _hash("call", tool, exact), _hash("call~", tool, near or exact.lower())


def output_signature(output: Any, max_chars: int = 200) -> tuple[str, str]:
    """``(exact, near)`` signatures of a tool output (or error text), volatile tokens masked."""
    exact, near = _canonical_output(output, max_chars)
    return _hash("out", exact), _hash("out~", near or exact.lower())


def describe_call(tool_name: str, arguments: Any, max_chars: int = 200) -> str:
    """Readable canonical form, ``search(query=pricing)``; only for content capture."""
    return f"{_tool_text(tool_name)}({_canonical_arguments(arguments, max_chars)[0]})"


def describe_output(output: Any, max_chars: int = 200) -> str:
    """Readable canonical, masked form of an output; only for content capture."""
    return _canonical_output(output, max_chars)[0]


def call_text(tool_name: str, arguments: Any, max_chars: int = 200) -> str:
    """The capped text a similarity hook compares: canonical arguments, at most ``max_chars``."""
    return describe_call(tool_name, arguments, max_chars)[: max_chars * 2]


Similarity = Callable[[str, str], float]


def load_similarity(path: str | None) -> Similarity | None:
    """Import ``module:callable`` for the similarity hook; ``None`` (one warning) if unusable."""
    if not path:
        return None
    try:
        module_name, _, attribute = path.partition(":")
        target: Any = importlib.import_module(module_name.strip())
        for part in attribute.strip().split("."):
            target = getattr(target, part)
        if not callable(target):
            raise TypeError(f"{path} is not callable")
        return target  # type: ignore[no-any-return]
    except Exception as exc:
        logger.warning(
            "otel-loopguard: ignoring OTEL_LOOPGUARD_SIMILARITY=%r: %s; expected "
            "'module:callable(a: str, b: str) -> float'; similarity matching is off",
            path,
            exc,
        )
        return None


def combine_signatures(signatures: Any) -> str:
    """One order-free signature for a set of signatures (a model turn's requested calls)."""
    return _hash("set", *sorted(set(signatures)))
