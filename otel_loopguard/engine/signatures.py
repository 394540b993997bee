"""Signatures: short, stable hashes that say "the same call" or "the same output".

Detectors compare signatures, never raw content, so a signature must be

* **canonical**: dict keys sorted at every depth; whitespace folded and case folded in free
  text only (values with spaces), never in identifiers (single-token values such as ids,
  paths, URLs and enum-like tokens, and tokens inside free text that contain ``/ \\ _ @``,
  digits, ``a.b`` / ``a:b`` or camelCase), so ``{"q": "Pricing  Plans", "n": 1}`` and
  ``{"n": 1, "q": "pricing plans"}`` are the same call while ``/Users/A`` and ``/users/a``
  are not. Code, patches, file contents, commands and paths are not free text: a value
  under a key that names them (``code``, ``content``, ``patch``, ``diff``, ``command``,
  ``cmd``, ``script``, ``path``, ``file``, ``url``, ``old_str`` / ``new_str`` ...: see
  :func:`_verbatim_key`) or shaped like code (indented lines, diff lines, braces, ``f(``,
  flags, shell operators: :func:`_code_shaped`) keeps its whitespace and case exactly;
* **masked**: volatile tokens are replaced before hashing so that
  ``no results (request 8f3a91c2)`` twice is the same output. Outputs mask UUIDs, ISO
  timestamps and dates, clock times, durations (``12 ms``), long hex (``0x7f..``, digests),
  digit runs of 8+ (epoch times, ids) and tagged ids (``request_id=...``, ``trace 4bf9..``).
  Call arguments mask less, because an id in an argument usually *is* the work
  (``get_order(id=<uuid>)`` for two uuids are two calls): only timestamps with a time of
  day, tagged request/trace/correlation/idempotency ids and values of keys such as
  ``nonce`` or ``timestamp``;
* **capped, not collapsed**: each string value's readable prefix is cut at ``max_chars``
  (after a little slack for masking), containers at :data:`MAX_ITEMS` items, nesting at
  :data:`MAX_DEPTH`, and the whole form at :data:`MAX_NODES` values. The cap bounds the
  cost, not the identity: a string longer than ``max_chars`` carries a hash of the whole
  value (masked and folded like its prefix up to 8 K characters, raw up to 1 M, then its
  first and last 512 K characters and its length: :func:`_rest_digest`), so two 2 KB edits
  that differ at character 1,500 are two calls, and a 10 MB value costs about 2 ms. A
  JSON-string argument (what models send) is parsed only when it is at most
  ``32 * max_chars`` long; longer ones are signed as text (hashed whole as well);
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
(:func:`load_similarity`) is for. A call argument kept verbatim (code, a command, a path)
has its exact form as its near key: two edits that differ only in indentation are not
near-duplicates.

Nothing here raises: any value, including cyclic structures, objects whose ``repr`` fails,
``bytes`` and strings with lone surrogates, yields a signature.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import itertools
import json
import logging
import math
import operator
import re
from collections.abc import Callable, Mapping
from hashlib import blake2b as _blake2b
from typing import Any
from zlib import crc32 as _crc32

logger = logging.getLogger("otel_loopguard.engine.signatures")

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
_OUTPUT_MASK_GROUPS = (  # in the order they are tried at each word start
    ("ts", _TIMESTAMP),
    ("tag", _TAGGED_ID),
    (
        "ref",
        r"(?i:\b(?:request|req|trace|span|correlation|transaction)\b)\s*[:=#]?\s*"
        r"(?=[\w.\-]*\d)[\w.\-]{4,}",
    ),
    ("uuid", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    ("date", r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{4}\b"),
    ("time", r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b"),
    ("dur", r"\b\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|s|sec|secs|seconds)\b"),
    ("hex", r"\b0x[0-9a-fA-F]{4,}\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b"),
    ("num", r"\b\d{8,}\b"),
)


def _output_mask_pattern(names: tuple[str, ...]) -> str:
    """The output mask made of the groups ``names`` only, in their usual order."""
    groups = "|".join(f"(?P<{name}>{body})" for name, body in _OUTPUT_MASK_GROUPS if name in names)
    return f"{_WORD_START}(?:{groups})"


_OUTPUT_MASK = re.compile(_output_mask_pattern(tuple(name for name, _ in _OUTPUT_MASK_GROUPS)))


class _OutputMasks(dict[tuple[str, ...], "re.Pattern[str]"]):
    """Group names -> the output mask of those groups only (at most 2**9 of them).

    Leaving out the groups that cannot match anywhere in a text changes nothing in what
    ``sub`` replaces there (at each position the first group that matches wins, and a
    left-out group never does), and spares the engine trying them at every word start.
    """

    def __missing__(self, names: tuple[str, ...]) -> re.Pattern[str]:
        mask = re.compile(_output_mask_pattern(names))
        self[names] = mask
        return mask


_output_masks = _OutputMasks()
_DIGIT = re.compile(r"\d")
# Cheap checks before a mask's ``sub``: most texts, even with a digit ("3 results for
# topic 17"), hold nothing volatile, and a check costs a fraction of the full pattern's
# work at every word start. Each finds a substring that every match of a mask group must
# contain (case-sensitive: the tag words are looked for in the lower-cased text). They are
# used on ASCII text only: there a case-insensitive match of an ASCII letter is exactly a
# match of its lower-case form, while in other text the engine also folds letters (the
# long s, the Kelvin sign) that ``str.lower()`` keeps, which the checks could miss.
_YEAR_DASH = re.compile(r"\d{4}-\d")  # timestamps, in call arguments


def _byte_classes(classes: dict[str, str]) -> bytes:
    """A ``bytes.translate`` table: each character of a key to its class, any other to ``.``."""
    table = bytearray(b"." * 256)
    for members, name in classes.items():
        for member in members:
            table[ord(member)] = ord(name)
    return bytes(table)


_SHAPE_CLASSES = _byte_classes(
    {
        "0123456789": "d",
        "smun": "s",
        "x": "x",
        "-": "-",
        "/": "/",
        ":": ":",
        " \t\n\r\x0b\x0c": " ",
    }
)
_HEX_CLASSES = _byte_classes({"0123456789abcdefABCDEF": "h"})


def _ascii_output_mask(head: str, lower: str) -> re.Pattern[str] | None:
    """The output mask for ASCII ``head`` with the groups that can match there, or None.

    Each group is kept where the text holds what every match of it holds, found by
    substring tests on the text mapped to byte classes (``in`` on ``str``: on ``bytes``
    it pays for the buffer protocol on every call): "d" a digit, "s" a letter that ends
    a duration (``12 ms``, ``3s``, ``5 secs``), "x" of ``0x``, and "h" a hex digit in the
    second map; every whitespace character maps to " " (``\\s`` in the masks), so a text
    kept verbatim (not folded) is screened alike. A text
    without a digit only gets the tagged-id mask, as in :func:`_mask_any`.
    """
    tag_word = _has_tag_word(lower)
    id_tag = tag_word and ("id" in lower or "key" in lower)
    encoded = head.encode("ascii")
    shapes = encoded.translate(_SHAPE_CLASSES).decode("ascii")
    if "d" not in shapes:
        return _TAG_ONLY if id_tag else None
    hex_run = "hhhhhhhh" in encoded.translate(_HEX_CLASSES).decode("ascii")  # [0-9a-fA-F]{8}
    year = "dddd-d" in shapes  # \d{4}-\d
    if not (
        tag_word
        or hex_run
        or year
        or "ds" in shapes  # \d\s?(?:ms|us|ns|s|sec...)
        or "d s" in shapes
        or "d:d" in shapes
        or "d/d" in shapes
        or "dx" in shapes  # 0x...
    ):
        return None  # the usual: nothing to mask (8 digits in a row are a hex run too)
    names: list[str] = []
    if year:
        names.append("ts")
    if tag_word:
        if id_tag:
            names.append("tag")
        if (
            "req" in lower
            or "trace" in lower
            or "span" in lower
            or "correlation" in lower
            or "transaction" in lower
        ):
            names.append("ref")
    if hex_run and "-" in head:
        names.append("uuid")
    if year or "d/d" in shapes:
        names.append("date")
    if "d:d" in shapes:
        names.append("time")
    if "ds" in shapes or "d s" in shapes:
        names.append("dur")
    if hex_run or "dx" in shapes:
        names.append("hex")
    if "dddddddd" in shapes:
        names.append("num")
    return _output_masks[tuple(names)] if names else None


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


def _mask_any(head: str, output: bool) -> str:
    """The masks on text of any script: the full pattern whenever there is a digit."""
    if _DIGIT.search(head):
        return (_OUTPUT_MASK if output else _CALL_MASK).sub(_mask_match, head)
    lower = head.lower()
    if "id" in lower or "key" in lower:
        return _TAG_ONLY.sub(_mask_match, head)  # the only mask that needs no digit
    return head


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
_KEY_MEMO_CAP = 4096
_KEY_MEMO_CHARS = 64  # longer keys are worked out each time, not kept


# Keys whose string values are code, patches, file contents, commands, paths or ids: kept
# verbatim (no whitespace or case folding, see :func:`_canonical_text`). A key matches
# when one of its words (snake_case, camelCase, kebab-case: ``file_path``, ``oldString``,
# ``shell-command``) is in :data:`_VERBATIM_WORDS`, or the whole key folded is in
# :data:`_VERBATIM_KEYS`. Free text keys (``query``, ``q``, ``prompt``, ``message``,
# ``text``) are not in them: their values are folded.
_VERBATIM_TEXT = """code content contents patch diff command commands cmd script source src snippet
program sql regex regexp pattern replacement stdin argv path paths file files filename dir
directory url uri glob old new"""
_VERBATIM_WORDS = frozenset(_VERBATIM_TEXT.split())
_VERBATIM_KEYS = frozenset({"oldstr", "newstr", "filetext", "filepath", "cwd", "workdir"})
_KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _verbatim_key(key: str) -> bool:
    """Does ``key`` name code, a command, a patch, file contents, a path or a URL?"""
    folded = key.lower().replace("_", "").replace("-", "")
    if folded in _VERBATIM_KEYS:
        return True
    return any(word.lower() in _VERBATIM_WORDS for word in _KEY_WORD.findall(key))


# Keys that describe a call rather than parametrise it: the one-line description a coding
# agent's shell tool asks for beside the command, a reason, a thought. In a dict that also
# holds a verbatim key (a command, code, a path: what the call does), their values are left
# out of the near key, so the same command with a display counter in its description
# (``"description": "noop17"``) is a near-duplicate (issue 18, point 6). Never out of the
# exact signature; and kept in the near key of a dict without a verbatim key, where the
# description may be the work (``create_issue(title, description)``).
_COSMETIC_KEYS = frozenset(
    {
        "description",
        "explanation",
        "reason",
        "reasoning",
        "rationale",
        "thought",
        "thoughts",
        "summary",
        "label",
        "comment",
        "note",
        "purpose",
        "intent",
        "justification",
        "display_name",
        "status_message",
    }
)


class _KeyParts(dict[str, tuple[str, "str | None", bool, bool]]):
    """key -> (``key=`` for the exact form, ``key=`` lower-cased for the near key, verbatim,
    cosmetic).

    A volatile key (``request_id``, ``nonce`` ...) gets ``(key=<volatile>, None, False,
    False)``: its value is never looked at. ``verbatim``: the key names code, a command, a
    path ... (:func:`_verbatim_key`); ``cosmetic``: it describes the call
    (:data:`_COSMETIC_KEYS`, matched lower-cased). Argument names repeat across calls, so
    this memo (bounded like :class:`_NearWordMemo`) saves the regex matches and two strings
    per key and call.
    """

    def __missing__(self, key: str) -> tuple[str, str | None, bool, bool]:
        if _VOLATILE_KEY.match(key) is not None:
            parts: tuple[str, str | None, bool, bool] = (f"{key}=<volatile>", None, False, False)
        else:
            cosmetic = key.lower() in _COSMETIC_KEYS
            parts = (f"{key}=", f"{key.lower()}=", _verbatim_key(key), cosmetic)
        if len(key) <= _KEY_MEMO_CHARS:
            if len(self) >= _KEY_MEMO_CAP:
                self.clear()
            self[key] = parts
        return parts


_key_parts = _KeyParts()


# ---------------------------------------------------------------------------------------
# case and near-duplicate normalisation

_IDENTIFIER_TOKEN = re.compile(r"[/\\_@<]|\w[.:]\w|[a-z][A-Z]|\d")
_WORD = re.compile(r"[^\W_]+")
_FILLER_TEXT = """a an the this that these those of for to in on at by with from into about as and
or please kindly just can could would will should may might you your me my i we our us it its is
are was were be been being do does did what which who whom whose how when where any some all get
find show give tell look up search lookup info information details thanks thank"""
_FILLER_WORDS = frozenset(_FILLER_TEXT.split())


def _fold_free_text(text: str, lower: str | None = None) -> str:
    """Lower-case words of free text; keep single-token values and identifier tokens as is."""
    if " " not in text or text == (text.lower() if lower is None else lower):
        return text
    return " ".join(
        [
            token
            if token.islower()
            # a word of letters capitalised or in capitals ("Pricing", "PLANS") cannot be
            # camelCase, the only identifier shape made of letters alone: no regex needed
            else token.lower()
            if token.isalpha() and (token[1:].islower() or token.isupper())
            else token
            if _IDENTIFIER_TOKEN.search(token)
            else token.lower()
            for token in text.split(" ")
        ]
    )


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


_NEAR_MEMO_CAP = 2048  # words per memo (4 memos); a full memo is emptied and refilled
_NEAR_MEMO_WORD_CHARS = 32  # longer words (rare: ids, digests) are normalised, not kept


class _NearWordMemo(dict[Any, str]):
    """word -> its near-key form, ``""`` for a filler word, for the words seen lately.

    The same content words come back call after call in a run, so looking them up with
    ``map(memo.__getitem__, words)`` (a loop in C) replaces a Python call per word, and
    ``__missing__`` computes a new one. Bounded (emptied when full, long words not kept)
    and thread-safe as far as it matters: dict operations are atomic and a race only
    computes the same value twice. A normalised word is never empty, so ``""`` marks filler.
    Words are ``str``, or ASCII ``bytes`` for the ASCII path of :func:`_canonical_text`.
    """

    def __init__(self, normalise: Callable[[str], str], ascii_bytes: bool = False) -> None:
        super().__init__()
        self.normalise = normalise
        self.ascii_bytes = ascii_bytes

    def __missing__(self, word: Any) -> str:
        text: str = word.decode("ascii") if self.ascii_bytes else word
        near = "" if text in _FILLER_WORDS else self.normalise(text)
        if len(word) <= _NEAR_MEMO_WORD_CHARS:
            if len(self) >= _NEAR_MEMO_CAP:
                self.clear()
            self[word] = near
        return near


_NEAR_WORD = {
    False: _NearWordMemo(_near_word_in_call).__getitem__,
    True: _NearWordMemo(_near_word_in_output).__getitem__,
}
_NEAR_ASCII_WORD = {
    False: _NearWordMemo(_near_word_in_call, ascii_bytes=True).__getitem__,
    True: _NearWordMemo(_near_word_in_output, ascii_bytes=True).__getitem__,
}


def _near_words(lower: str, numbers_are_ids: bool) -> str:
    """Content words of lower-cased ``lower``, normalised, de-duplicated and sorted."""
    words = set(map(_NEAR_WORD[numbers_are_ids], _WORD.findall(lower)))
    words.discard("")  # filler
    return " ".join(sorted(words))


# In ASCII text the words of :data:`_WORD` are the runs of letters and digits: every other
# byte becomes a space and ``split()`` cuts there, a few C loops instead of a regex scan
# (in :func:`_canonical_text`).
_ASCII_ALNUM = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ASCII_WORD_BYTES = bytes(byte if byte in _ASCII_ALNUM else 32 for byte in range(256))


# ---------------------------------------------------------------------------------------
# canonical form

# The compiled build also ships a C extension for the common case of _canonical_text:
# printable ASCII within the cap that no mask applies to (_native_signatures.c says which
# values exactly). It returns what _canonical_text(..., native=False) returns, or None for any
# other value; tests/test_native_signatures.py holds it to that. The pure build has none.
_NativeCanonicalText = Callable[[str, int, bool, bool, bool], "tuple[str, str] | None"]


def _load_native() -> _NativeCanonicalText | None:
    """The native ``canonical_text``, told the filler words; None where it is not built.

    The filler words are passed in rather than written out again in C, so the list has one
    source. Any failure leaves the Python implementation, which gives the same results.
    """
    try:
        module = importlib.import_module("otel_loopguard.engine._native_signatures")
        module.configure(_FILLER_WORDS)
        native: _NativeCanonicalText = module.canonical_text
    except Exception:  # not built (ImportError), or refused the words: the Python path
        return None
    return native


_native_canonical_text = _load_native()


def _canonical_text(
    value: str,
    max_chars: int,
    output: bool,
    verbatim: bool = False,
    near: bool = True,
    native: bool = True,
) -> tuple[str, str]:
    """(exact, near) of one string value: whitespace folded, masked, case folded, capped.

    The hot path of every signature, written out in one function. ASCII text (nearly all
    arguments and outputs) is lower-cased once and that copy serves the mask checks, the
    case folding and the near key: masking and folding keep ASCII text ASCII and keep its
    length, so the lower-case form of the result is the one computed here (recomputed only
    after a mask replaced something).

    Free text only is folded. ``verbatim`` (the value's key names code, a command, a path:
    :func:`_verbatim_key`), or a value shaped like code (:func:`_code_shaped`: indented or
    diff lines, braces, ``;``, ``f(``, ``--flag`` ...), keeps its whitespace and case, and
    a call argument's near key is then its exact form: indentation is meaning in Python,
    and two edits that differ in it are two edits.

    The cap bounds the cost, not the identity: a value longer than ``max_chars`` ends in
    :func:`_rest_digest`, a hash of the whole value, so two values that differ anywhere
    sign differently.

    ``near=False`` leaves the near key out (``""``): a tool's answer needs none
    (:func:`output_exact_signature`), and its words are a third of the work.

    The compiled build's native core answers first where it can (the common case) unless
    ``native=False``, which runs this Python implementation, the reference it is tested
    against. Checked here rather than in a wrapper: the pure build pays no extra call.
    """
    hook = _native_canonical_text if native else None
    if hook is not None:
        done = hook(value, max_chars, output, verbatim, near)
        if done is not None:
            return done
    raw = value[: max_chars + _SLACK]
    head = " ".join(raw.split())
    # the ASCII path below needs ASCII text; a verbatim value keeps raw's own whitespace, so
    # raw must be ASCII too (a no-break space folds away from head, not from raw)
    if not head.isascii() or (not raw.isascii() and (verbatim or _code_shaped(raw))):
        if not verbatim and _code_shaped(raw):
            verbatim = True
        if verbatim:
            exact = _mask_any(raw, output)[:max_chars]
        else:
            exact = _fold_free_text(_mask_any(head, output))[:max_chars]
        if not near:
            if len(value) > max_chars:
                return exact + _rest_digest(value, output, verbatim), ""
            return exact, ""
        words = exact if verbatim and not output else _near_words(exact.lower(), output)
        if len(value) > max_chars:
            rest = _rest_digest(value, output, verbatim)
            return exact + rest, words + rest
        return exact, words
    lower = head.lower()
    words_only = lower.replace(" ", "")  # letters and digits only: plain words
    if (
        not verbatim
        and (len(head) != len(raw) or not words_only.isalnum())  # else no code shape
        and _code_shaped(raw)
    ):
        verbatim = True
    if verbatim:
        head, lower = raw, raw.lower()
    # The masks of _mask_any, skipped where they cannot match. A text without a digit only
    # gets the tagged-id mask, which needs a tag word and "id" / "key". In outputs every
    # other mask needs a tag word, a digit shape or a hex run; in calls the only other
    # mask, a timestamp, needs "dddd-d".
    if output:
        mask = _ascii_mask(head, lower, words_only, True)
    elif ("id" in lower or "key" in lower) and _has_tag_word(lower):  # _ascii_mask's
        mask = _CALL_MASK if _DIGIT.search(head) else _TAG_ONLY  # call rules, inlined
    elif "-" in head and _YEAR_DASH.search(head):
        mask = _CALL_MASK
    else:
        mask = None
    if mask is not None:
        masked = mask.sub(_mask_match, head)
        if masked is not head:
            head, lower = masked, masked.lower()
    if not verbatim and " " in head and head != lower:  # else _fold_free_text: unchanged
        head = _fold_free_text(head, lower)
    if len(head) > max_chars:  # (ASCII: folding kept the length, head and lower agree)
        head, lower = head[:max_chars], lower[:max_chars]
    if len(value) > max_chars:
        rest = _rest_digest(value, output, verbatim)
        if not near:
            return head + rest, ""
        if verbatim and not output:
            return head + rest, head + rest
        return head + rest, _ascii_near_key(lower, mask is None, words_only, output) + rest
    if not near:
        return head, ""
    if verbatim and not output:
        return head, head
    return head, _ascii_near_key(lower, mask is None, words_only, output)


def _ascii_mask(head: str, lower: str, words_only: str, output: bool) -> re.Pattern[str] | None:
    """The mask to run on ASCII ``head`` (``lower`` its lower-case form), or None."""
    if output:
        if words_only.isalpha():  # letters and spaces: no digit, so only a tagged id
            if ("id" in lower or "key" in lower) and _has_tag_word(lower):
                return _TAG_ONLY
            return None
        return _ascii_output_mask(head, lower)
    if ("id" in lower or "key" in lower) and _has_tag_word(lower):
        return _CALL_MASK if _DIGIT.search(head) else _TAG_ONLY
    if "-" in head and _YEAR_DASH.search(head):
        return _CALL_MASK
    return None


def _ascii_near_key(lower: str, unmasked: bool, words_only: str, output: bool) -> str:
    """The near key of ASCII text: its runs of letters and digits, as :func:`_near_words`."""
    if lower.isalnum():  # one word: "pricing", "en", "17"
        return _NEAR_WORD[output](lower)
    if unmasked and words_only.isalnum():  # words and single spaces: "no results"
        words = {*map(_NEAR_WORD[output], lower.split())}
    else:
        spaced = lower.encode("ascii").translate(_ASCII_WORD_BYTES)
        words = {*map(_NEAR_ASCII_WORD[output], spaced.split())}
    words.discard("")  # filler
    if len(words) == 2:  # "no results", "topic 17": what sorted() would give, sooner
        first, second = words
        return f"{first} {second}" if first < second else f"{second} {first}"
    return " ".join(sorted(words))


# Code, patches, commands, file contents: not free text (see _canonical_text).
_INDENTED_OR_DIFF_LINE = re.compile(r"\n(?:[+\-@]|\t\S| {2,}\S)")
_STATEMENT_END = re.compile(r";(?:\S|\s*$|\n)")
_SHELL_VARIABLE = re.compile(r"\$[({\w]")
_FLAG = re.compile(r"(?:^|\s)--?[A-Za-z]")
_PIPE = re.compile(r"\s(?:[|>]|>>|2>)\s")


def _code_shaped(raw: str) -> bool:
    """Is ``raw`` shaped like code, a patch or a command rather than free text?

    A line after the first indented by a tab or two spaces, a diff line (``+`` / ``-`` /
    ``@@``), braces, backticks, ``&&`` / ``||``, a ``;`` that ends a statement (``;x``,
    ``;`` at a line end), ``$VAR`` / ``$(...)``, a call ``f(``, a flag ``-x`` /
    ``--name``, a pipe or redirection between spaces, a ``./`` / ``~/`` path. Substring
    tests first, a small regex only where its character occurs: this runs on every string
    value that holds more than letters, digits and spaces.
    """
    if "\n" in raw and _INDENTED_OR_DIFF_LINE.search(raw) is not None:
        return True
    if "{" in raw or "}" in raw or "`" in raw or "&&" in raw or "||" in raw:
        return True
    if ";" in raw and _STATEMENT_END.search(raw) is not None:
        return True
    if "$" in raw and _SHELL_VARIABLE.search(raw) is not None:
        return True
    at = raw.find("(")
    while at > 0:
        before = raw[at - 1]
        if before.isalnum() or before == "_":
            return True
        at = raw.find("(", at + 1)
    flag_dash = raw[:1] == "-" or " -" in raw or "\n-" in raw or "\t-" in raw
    if flag_dash and _FLAG.search(raw) is not None:
        return True
    if ("|" in raw or ">" in raw) and _PIPE.search(raw) is not None:
        return True
    return "/" in raw and (raw.startswith(("./", "~/")) or " ./" in raw or " ~/" in raw)


_WHOLE_MASKED_CHARS = 1 << 13  # values up to this long are masked and folded whole
_WHOLE_HASHED_CHARS = 1 << 20  # up to this long hashed whole; longer: head, tail, length


def _rest_digest(value: str, output: bool, verbatim: bool) -> str:
    """``…#<hash>/<length>``: what a capped value's prefix does not show, in a few bytes.

    Up to :data:`_WHOLE_MASKED_CHARS` the whole value is hashed as the head is signed
    (masked, and whitespace folded unless ``verbatim``), so volatile tokens or spacing
    past the cap do not split two same values of free text. Up to
    :data:`_WHOLE_HASHED_CHARS` the raw value is hashed (a BLAKE2b pass, about 1 ms per
    MB); past that its first and last half of that bound and its length: a 10 MB value
    costs as much as a 1 MB one.
    """
    size = len(value)
    digest = _blake2b(digest_size=8)
    if size <= _WHOLE_MASKED_CHARS:
        text = value if verbatim else " ".join(value.split())
        if text.isascii():
            lower = text.lower()
            mask = _ascii_mask(text, lower, lower.replace(" ", ""), output)
            if mask is not None:
                text = mask.sub(_mask_match, text)
        else:
            text = _mask_any(text, output)
        digest.update(text.encode("utf-8", "surrogatepass"))
        size = len(text)
    elif size <= _WHOLE_HASHED_CHARS:
        digest.update(value.encode("utf-8", "surrogatepass"))
    else:
        half = _WHOLE_HASHED_CHARS // 2
        digest.update(value[:half].encode("utf-8", "surrogatepass"))
        digest.update(value[-half:].encode("utf-8", "surrogatepass"))
    return f"{_ELLIPSIS}#{digest.hexdigest()}/{size}"


_SMALL_INT = 10_000_000  # ints strictly inside +- this are too short for any mask


def _leaf(value: Any, max_chars: int, output: bool) -> tuple[str, str] | None:
    """(exact, near) of a value that holds no other values, ``None`` for anything else."""
    if value is None or isinstance(value, bool):
        text = "null" if value is None else ("true" if value else "false")
        return text, text
    if isinstance(value, str):
        return _canonical_text(value, max_chars, output)
    if isinstance(value, int):
        if -_SMALL_INT < value < _SMALL_INT:
            text = str(value)
            return text, text
        if value.bit_length() > 128:
            text = f"<int:{value.bit_length()}bits>"
            return text, text
        return _canonical_text(str(value), max_chars, output)
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else str(value)
        return _canonical_text(text, max_chars, output)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value[: (max_chars + _SLACK) * 4])
        exact, near = _canonical_text(raw.decode("utf-8", "replace"), max_chars, output)
        size = len(value)
        if size > len(raw):  # the rest, as _rest_digest hashes a long string's
            half = _WHOLE_HASHED_CHARS // 2
            whole = bytes(value) if size <= _WHOLE_HASHED_CHARS else None
            digest = _blake2b(whole if whole is not None else bytes(value[:half]), digest_size=8)
            if whole is None:
                digest.update(bytes(value[-half:]))
            rest = f"{_ELLIPSIS}#{digest.hexdigest()}/{size}b"
            return exact + rest, near + rest
        return exact, near
    return None


def _flat_mapping(value: dict[Any, Any], max_chars: int, output: bool) -> tuple[str, str] | None:
    """(exact form without braces, near key) of a flat dict, as :meth:`_Walk.mapping` makes it.

    Nearly every tool call, and many a JSON result, is a dict of at most :data:`MAX_ITEMS`
    string keys holding strings, numbers, booleans or ``None``. For those the walk has
    nothing to do but sort the keys and sign the leaves: no value can reach a cap (the
    dict and its items are fewer than :data:`MAX_NODES` values, one level deep), none can
    hold a cycle, and no key needs a text of its own (each is a ``str`` of at most
    :data:`_MAX_NAME` characters). ``None`` for any other dict: at once for its keys (so
    that sorting them runs no code of theirs), or at the first value that is not a leaf
    (what was done by then has no effect: signing a leaf runs no code of the caller's).
    """
    if len(value) > MAX_ITEMS:
        return None
    for key in value:
        if type(key) is not str or len(key) > _MAX_NAME:
            return None
    exact_parts: list[str] = []
    near_parts: list[str] = []
    key_parts = _key_parts
    cosmetic_at: list[int] | None = None  # where cosmetic keys' near parts are
    any_verbatim = False
    for key in sorted(value):
        exact_key, near_key, verbatim, cosmetic = key_parts[key]
        if near_key is None:  # volatile
            exact_parts.append(exact_key)
            continue
        item = value[key]
        kind = type(item)
        if kind is str:
            exact, near = _canonical_text(item, max_chars, output, verbatim)
        elif kind is int and -_SMALL_INT < item < _SMALL_INT:
            exact = near = str(item)
        elif kind is int or item is None or kind is bool or kind is float:
            exact, near = _leaf(item, max_chars, output)  # type: ignore[misc]
        else:
            return None
        exact_parts.append(exact_key + exact)
        if verbatim:
            any_verbatim = True
        if near:
            if cosmetic:
                cosmetic_at = [*(cosmetic_at or ()), len(near_parts)]
            near_parts.append(near_key + near)
    if cosmetic_at is not None and any_verbatim:
        _drop(near_parts, cosmetic_at)
    return ",".join(exact_parts), ",".join(near_parts)


def _drop(parts: list[str], indexes: list[int]) -> None:
    """Remove ``parts[i]`` for each of the ascending ``indexes`` (cosmetic near parts)."""
    for index in reversed(indexes):
        del parts[index]


class _Walk:
    """One bounded canonicalisation: counts visited values and tracks the current path."""

    __slots__ = ("max_chars", "nodes", "output", "path")

    def __init__(self, max_chars: int, output: bool) -> None:
        self.max_chars = max_chars
        self.output = output  # output masks and numbers-as-ids near keys, else call rules
        self.nodes = 0
        self.path: set[int] = set()

    def value(self, value: Any, depth: int) -> tuple[str, str]:
        """(exact canonical text, near-duplicate text) of ``value``; never raises."""
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            return _ELLIPSIS, ""
        kind = type(value)
        if kind is str:
            return _canonical_text(value, self.max_chars, self.output)
        if kind is int and -_SMALL_INT < value < _SMALL_INT:
            text = str(value)
            return text, text
        leaf = _leaf(value, self.max_chars, self.output)
        if leaf is not None:
            return leaf
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
            text = f"{type(value).__name__}.{value.name}"
            return _canonical_text(text, self.max_chars, self.output)
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
        return _canonical_text(text, self.max_chars, self.output)

    def mapping(self, value: Mapping[Any, Any], depth: int, name: str = "") -> tuple[str, str]:
        try:
            size = len(value)
            items = value.items() if size <= MAX_SORTED_KEYS else None
            pairs = list(items if items is not None else itertools.islice(value.items(), MAX_ITEMS))
        except Exception:
            return f"<{type(value).__name__}>", ""
        for key, _ in pairs:
            if type(key) is not str or len(key) > _MAX_NAME:
                keyed = [
                    (
                        key[:_MAX_NAME] if isinstance(key, str) else self.value(key, depth + 1)[0],
                        item,
                    )
                    for key, item in pairs
                ]
                keyed.sort(key=_first)
                break
        else:  # the usual: every key is its own key text, and keys are unique
            keyed = pairs
            keyed.sort(key=_first)
        exact_parts: list[str] = []
        near_parts: list[str] = []
        key_parts = _key_parts
        max_chars, output = self.max_chars, self.output
        cosmetic_at: list[int] | None = None  # as in _flat_mapping
        any_verbatim = False
        for key_text, item in keyed[:MAX_ITEMS] if size > MAX_ITEMS else keyed:
            exact_key, near_key, verbatim, cosmetic = key_parts[key_text]
            if near_key is None:  # volatile
                exact_parts.append(exact_key)
                continue
            # the common leaves without value()'s type tests; the node is counted as there
            kind = type(item)
            if self.nodes >= MAX_NODES or depth >= MAX_DEPTH:
                exact, near = self.value(item, depth + 1)
            elif kind is str:
                self.nodes += 1
                exact, near = _canonical_text(item, max_chars, output, verbatim)
            elif kind is int and -_SMALL_INT < item < _SMALL_INT:
                self.nodes += 1
                exact = near = str(item)
            else:
                exact, near = self.value(item, depth + 1)
            exact_parts.append(exact_key + exact)
            if verbatim:
                any_verbatim = True
            if near:
                if cosmetic:
                    cosmetic_at = [*(cosmetic_at or ()), len(near_parts)]
                near_parts.append(near_key + near)
        if cosmetic_at is not None and any_verbatim:
            _drop(near_parts, cosmetic_at)
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


# json.loads(text) is the default decoder's decode(text): skip JSON whitespace, scan one
# value, skip JSON whitespace, fail unless at the end. _parse_json does just that with the
# same scanner, without the layers of Python calls around it on every JSON-string argument.
_JSON_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # CPython API
_JSON_SPACE = re.compile(r"[ \t\n\r]*").match


def _parse_json(text: str) -> Any:
    """``json.loads(text)``, or ``text`` itself where that raises ``ValueError``."""
    start = 0 if text[:1] in ("{", "[") else _JSON_SPACE(text).end()  # type: ignore[union-attr]
    try:
        value, end = _JSON_SCAN(text, start)
    except (StopIteration, ValueError):  # no value there / a malformed one
        return text
    if end != len(text) and _JSON_SPACE(text, end).end() != len(text):  # type: ignore[union-attr]
        return text  # extra data after the value
    return value


def _canonical_arguments(arguments: Any, max_chars: int) -> tuple[str, str]:
    try:
        if isinstance(arguments, str):
            if len(arguments) <= max_chars * _JSON_PARSE_FACTOR:
                first = arguments[:1]
                if first.isspace():
                    first = arguments[:64].lstrip()[:1]
                if first in ("{", "["):
                    arguments = _parse_json(arguments)  # not JSON after all: plain text
            if type(arguments) is str:  # one value, not a container: no walk needed
                return _canonical_text(arguments, max_chars, False)
        if type(arguments) is dict:
            flat = _flat_mapping(arguments, max_chars, False)
            if flat is not None:
                return flat
        if isinstance(arguments, Mapping):
            exact, near = _Walk(max_chars, False).mapping(arguments, 0)
            return exact[1:-1], near  # search(query=x), not search({query=x})
        if arguments is None:
            return "", ""
        return _Walk(max_chars, False).value(arguments, 0)
    except Exception:  # a hostile __len__/__iter__/__eq__: still a stable signature
        return f"<{type(arguments).__name__}>", ""


def _canonical_output(output: Any, max_chars: int) -> tuple[str, str]:
    try:
        kind = type(output)
        if kind is str:
            return _canonical_text(output, max_chars, True)
        if kind is dict:
            flat = _flat_mapping(output, max_chars, True)
            if flat is not None:
                return "{" + flat[0] + "}", flat[1]
        return _Walk(max_chars, True).value(output, 0)
    except Exception:
        return f"<{type(output).__name__}>", ""


def _hash(*parts: str) -> str:
    data = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return _blake2b(data, digest_size=8).hexdigest()


# The four hashes of every tool span start with a fixed prefix: a copy of a hash object
# that has already read it costs less than a new one (keyword parsing, parameter block)
# and no string is built to join the prefix on. UTF-8 encodes each code point on its
# own (lone surrogates too, with "surrogatepass"), so the bytes read are those of the
# joined text, and each digest is exactly _hash(prefix, ...).
_OUT_EXACT = _blake2b(b"out\x00", digest_size=8)
_OUT_NEAR = _blake2b(b"out~\x00", digest_size=8)
_TOOL_MEMO_CAP = 1024


class _ToolHashes(dict[str, tuple[Any, Any]]):
    """tool name -> hash objects that have read ``call\0<tool>\0`` and ``call~\0<tool>\0``.

    Tool names are few and come back on every call; bounded like :class:`_NearWordMemo`.
    """

    def __missing__(self, tool: str) -> tuple[Any, Any]:
        encoded = tool.encode("utf-8", "surrogatepass") + b"\x00"
        hashes = (
            _blake2b(b"call\x00" + encoded, digest_size=8),
            _blake2b(b"call~\x00" + encoded, digest_size=8),
        )
        if len(self) >= _TOOL_MEMO_CAP:
            self.clear()
        self[tool] = hashes
        return hashes


_tool_hashes = _ToolHashes()


def _tool_text(tool_name: Any) -> str:
    return str(tool_name)[:_MAX_NAME] if tool_name is not None else ""


# ---------------------------------------------------------------------------------------
# public API


def call_signature(tool_name: Any, arguments: Any, max_chars: int = 200) -> tuple[str, str]:
    """``(exact, near)`` signatures of a tool call: 16-hex-digit hashes, no readable content."""
    # = _hash("call", tool, exact), _hash("call~", tool, near or exact.lower())
    tool = tool_name if type(tool_name) is str and len(tool_name) <= _MAX_NAME else None
    exact_seed, near_seed = _tool_hashes[_tool_text(tool_name) if tool is None else tool]
    flat = None
    if type(arguments) is dict:  # _canonical_arguments' usual case, without its frame
        try:
            flat = _flat_mapping(arguments, max_chars, False)
        except Exception:
            flat = ("<dict>", "")
    exact, near = _canonical_arguments(arguments, max_chars) if flat is None else flat
    if not near:
        near = exact.lower()
    try:  # _digests, inlined: once per tool span
        exact_bytes, near_bytes = exact.encode(), near.encode()
    except UnicodeEncodeError:
        return _digests(exact_seed, near_seed, exact, near)
    exact_hash = exact_seed.copy()
    exact_hash.update(exact_bytes)
    near_hash = near_seed.copy()
    near_hash.update(near_bytes)
    return exact_hash.hexdigest(), near_hash.hexdigest()


def output_signature(output: Any, max_chars: int = 200) -> tuple[str, str]:
    """``(exact, near)`` signatures of a tool output (or error text), volatile tokens masked."""
    if type(output) is str:  # _canonical_output's first case, without its frame
        try:
            exact, near = _canonical_text(output, max_chars, True)
        except Exception:
            exact, near = "<str>", ""
    else:
        exact, near = _canonical_output(output, max_chars)
    # = _hash("out", exact), _hash("out~", near or exact.lower())
    return _digests(_OUT_EXACT, _OUT_NEAR, exact, near or exact.lower())


def output_exact_signature(output: Any, max_chars: int = 200) -> str:
    """The exact signature of a tool output (``output_signature(output)[0]``) alone.

    What tool results and errors are signed with on the hot path: no detector compares
    answers by their words (answers count as the same only when exactly the same, once
    masked), so an answer's near key would be computed per tool span for nothing. Events
    made from answers carry this signature as their ``near_key`` too.
    """
    if type(output) is str:
        try:
            exact = _canonical_text(output, max_chars, True, False, False)[0]
        except Exception:
            exact = "<str>"
    else:
        exact = _canonical_output(output, max_chars)[0]
    digest = _OUT_EXACT.copy()
    try:
        digest.update(exact.encode())
    except UnicodeEncodeError:  # lone surrogates, as _digests encodes them
        digest.update(exact.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


_TEXT_EXACT = _blake2b(b"text\x00", digest_size=8)
_TEXT_NEAR = _blake2b(b"text~\x00", digest_size=8)
SKETCH_CHARS = 2000  # the prefix of a text its sketch is made of
SKETCH_WORDS = 128  # word fingerprints a sketch keeps at most


def text_signature(text: str, max_chars: int = 200) -> tuple[str, str]:
    """``(exact, near)`` signatures of a model's own text, masked and folded as an output.

    The exact signature covers the whole text (see :func:`_rest_digest`); the near key is
    the content words of its first :data:`SKETCH_CHARS` characters, in any order, case or
    punctuation, so "the same answer reworded a little" can share it. Hashes only.
    """
    try:
        exact, _ = _canonical_text(text, max_chars, True)
        near = _near_words(" ".join(text[:SKETCH_CHARS].split()).lower(), True)
    except Exception:
        exact, near = "<str>", ""
    return _digests(_TEXT_EXACT, _TEXT_NEAR, exact, near or exact.lower())


def text_sketch(text: str) -> tuple[int, ...]:
    """The content words of ``text``'s first :data:`SKETCH_CHARS` characters as sorted
    32-bit fingerprints (at most :data:`SKETCH_WORDS`, the smallest kept: a bottom-k
    sample, so two sketches estimate their texts' word overlap), for "nearly the same"."""
    try:
        words = set(map(_NEAR_WORD[True], _WORD.findall(text[:SKETCH_CHARS].lower())))
        words.discard("")
        prints = sorted({_crc32(word.encode("utf-8", "surrogatepass")) for word in words})
    except Exception:
        return ()
    return tuple(prints[:SKETCH_WORDS])


def _digests(exact_seed: Any, near_seed: Any, exact: str, near: str) -> tuple[str, str]:
    """Hex digests of ``exact`` and ``near`` each hashed on from its seeded BLAKE2b state
    (the kind prefix, and for calls the tool name, already fed in)."""
    try:  # the strict encoder is quicker and gives the same bytes where it succeeds
        exact_bytes, near_bytes = exact.encode(), near.encode()
    except UnicodeEncodeError:  # lone surrogates, encoded one by one as _hash does
        exact_bytes = exact.encode("utf-8", "surrogatepass")
        near_bytes = near.encode("utf-8", "surrogatepass")
    exact_hash = exact_seed.copy()
    exact_hash.update(exact_bytes)
    near_hash = near_seed.copy()
    near_hash.update(near_bytes)
    return exact_hash.hexdigest(), near_hash.hexdigest()


def describe_call(tool_name: Any, arguments: Any, max_chars: int = 200) -> str:
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
