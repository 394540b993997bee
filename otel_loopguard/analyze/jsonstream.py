"""Walking one huge JSON document without loading it: stdlib only.

A single ``ExportTraceServiceRequest`` (or a Jaeger export) can be far larger than memory
should allow. :class:`JsonScanner` keeps a sliding text buffer over the stream and lets a
caller step through the containers it cares about (``{``, keys, ``[``, ``,``) by hand
while every *leaf of interest* (one span, one resource, one Jaeger trace) is decoded whole
by the C-accelerated :meth:`json.JSONDecoder.raw_decode`. Memory is one such value plus one
read chunk, whatever the file size.

Why no third-party streaming parser: the walk needs three container levels and C-speed
decoding of the values under them; ``raw_decode`` on a sliding buffer gives both in ~150
lines, without a compiled dependency.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

CHUNK_CHARS = 1 << 20
# a value that still does not parse after the buffer grew this large is broken, not cut
MAX_VALUE_CHARS = 1 << 30
# a decode error this close to the end of the buffer may only mean "read more"
_TAIL_MARGIN = 8
_WHITESPACE = " \t\r\n"


class JsonSyntaxError(ValueError):
    """Invalid or truncated JSON; ``str()`` is one line with the character offset."""


class JsonScanner:
    """Pull-style access to one JSON text (or several concatenated ones) from a stream.

    ``prefix`` is text already read from ``stream`` (format sniffing reads ahead).
    """

    def __init__(self, stream: TextIO, prefix: str = "", chunk_chars: int = CHUNK_CHARS) -> None:
        self._stream = stream
        self._buf = prefix
        self._pos = 0
        self._offset = 0  # characters dropped from the front of the buffer so far
        self._eof = False
        self._chunk = chunk_chars
        self._decoder = json.JSONDecoder()

    # -- buffer management -------------------------------------------------------------

    def _read_more(self, at_least: int) -> bool:
        """Append at least ``at_least`` characters (fewer only at end of input)."""
        if self._eof:
            return False
        if self._pos > self._chunk:  # drop consumed text so the buffer stays one value long
            self._offset += self._pos
            self._buf = self._buf[self._pos :]
            self._pos = 0
        pieces = []
        got = 0
        while got < at_least:
            piece = self._stream.read(max(self._chunk, at_least - got))
            if not piece:
                self._eof = True
                break
            pieces.append(piece)
            got += len(piece)
        if pieces:
            self._buf += "".join(pieces)
        return got > 0

    def offset(self) -> int:
        """Characters consumed so far (for error messages)."""
        return self._offset + self._pos

    def _error(self, message: str, at: int | None = None) -> JsonSyntaxError:
        where = self._offset + (self._pos if at is None else at)
        return JsonSyntaxError(f"{message} at character {where}")

    # -- tokens --------------------------------------------------------------------------

    def peek(self) -> str:
        """The next non-whitespace character without consuming it; ``""`` at end of input."""
        while True:
            buf, pos, end = self._buf, self._pos, len(self._buf)
            while pos < end and buf[pos] in _WHITESPACE:
                pos += 1
            self._pos = pos
            if pos < end:
                return buf[pos]
            if not self._read_more(self._chunk):
                return ""

    def take(self, expected: str) -> None:
        """Consume the next non-whitespace character, which must be ``expected``."""
        found = self.peek()
        if found != expected:
            what = repr(found) if found else "end of input (truncated?)"
            raise self._error(f"expected {expected!r}, found {what}")
        self._pos += 1

    def value(self) -> Any:
        """Decode the next complete JSON value."""
        if not self.peek():
            raise self._error("unexpected end of input (truncated?)")
        while True:
            try:
                result, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                near_end = exc.pos >= len(self._buf) - _TAIL_MARGIN
                unterminated = exc.msg.startswith("Unterminated string")
                if (near_end or unterminated) and self._grow():
                    continue
                if self._eof and (near_end or unterminated):
                    raise self._error("unexpected end of input (truncated?)", exc.pos) from None
                raise self._error(exc.msg, exc.pos) from None
            except (ValueError, RecursionError) as exc:  # an integer of 5,000 digits, deep nesting
                raise self._error(str(exc).split(";")[0]) from None
            # a number (or literal) that ends exactly at the buffer's end may be cut short
            if end == len(self._buf) and not self._eof and self._grow():
                continue
            self._pos = end
            return result

    def _grow(self) -> bool:
        pending = len(self._buf) - self._pos
        if pending >= MAX_VALUE_CHARS:
            raise self._error(f"a single JSON value is larger than {MAX_VALUE_CHARS} characters")
        return self._read_more(max(self._chunk, pending))

    def key(self) -> str:
        """Read an object key and its colon."""
        if self.peek() != '"':
            raise self._error("expected an object key")
        name = self.value()
        self.take(":")
        return name  # type: ignore[no-any-return]

    def object_keys(self) -> Iterator[str]:
        """Iterate the keys of an object whose ``{`` is next; the caller consumes each value."""
        self.take("{")
        if self.peek() == "}":
            self._pos += 1
            return
        while True:
            yield self.key()
            following = self.peek()
            self._pos += 1
            if following == "}":
                return
            if following != ",":
                self._pos -= 1
                raise self._error("expected ',' or '}' in an object" + _at_end(following))

    def array_items(self) -> Iterator[None]:
        """Iterate the items of an array whose ``[`` is next; the caller consumes each item."""
        self.take("[")
        if self.peek() == "]":
            self._pos += 1
            return
        while True:
            yield None
            following = self.peek()
            self._pos += 1
            if following == "]":
                return
            if following != ",":
                self._pos -= 1
                raise self._error("expected ',' or ']' in an array" + _at_end(following))


def _at_end(found: str) -> str:
    return ", found end of input (truncated?)" if not found else f", found {found!r}"
