"""A compact, bounded map from signatures to a few small numbers, for per-run state.

Per-run memory is the budget that decides how many runs a process can watch: a dict of
256 signature strings with small lists as values costs ~60 KiB, which, times four tables
and ten thousand runs, is gigabytes. This table keeps each entry in a fixed-size record of
one ``bytearray``: a 32-bit fingerprint of the signature and the packed values
(``struct`` format), e.g. 6 bytes for a count, so 256 entries cost ~1.5 KiB.

Layout: set-associative, :data:`WAYS` records per set, the set chosen by the fingerprint.
Within a set records are kept most recently used first; a lookup moves its record to the
front and a new key evicts the last record of its set (least recently used of the set).
Every operation touches one set: O(WAYS) byte moves done in C, independent of the run's
length. Two distinct signatures collide only if their 32-bit fingerprints are equal and
land in the same set, about once in 500 million lookups at 8 ways; a collision merges two
counts, it never raises.

The compiled build also ships ``_native_table.c``: get, bump, insert and update in C, the
same moves on the same bytes for the plain case (an exact bytearray, int keys and values in
range), NotImplemented otherwise, when the method's Python body runs as here in the pure
build. tests/test_native_table.py holds the two to the same answers and the same bytes.
"""

from __future__ import annotations

import importlib
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

WAYS = 8
_EMPTY = b"\x00\x00\x00\x00"
_KEY = struct.Struct("<I")
_pack_key = _KEY.pack
_pack_count_into = struct.Struct("<IH").pack_into  # a key and its count, as bump writes them
# one Struct per value format, shared by every table (a Struct per table was per-run memory)
#: beside each Struct, its codes as the native functions read them (b"IHII")
_VALUE_STRUCTS: dict[str, tuple[struct.Struct, bytes]] = {}


def _load_native(name: str) -> Callable[..., Any] | None:
    """The native function ``name``, or None where the module is not built (or broken):
    the method's Python body, which makes the same moves, runs then."""
    try:
        module = importlib.import_module("otel_loopguard.engine.detectors._native_table")
        native: Callable[..., Any] = getattr(module, name)
    except Exception:
        return None
    return native


# module globals, read at each call: tests/test_native_table.py sets them to None to run
# the Python bodies as the reference
_native_get = _load_native("get")
_native_bump = _load_native("bump")
_native_insert = _load_native("insert")
_native_update = _load_native("update")


def fingerprint(signature: str) -> int:
    """A non-zero 32-bit fingerprint of a signature (0 marks an empty record).

    The monitor fingerprints each event's signature once (``pair_tool_event``) and hands the
    number to the detectors, so this is called about once per signature and keeps no memo.
    """
    try:
        return zlib.crc32(signature.encode()) or 1
    except UnicodeEncodeError:  # a lone surrogate from a hand-made event
        return zlib.crc32(signature.encode("utf-8", "surrogatepass")) or 1


class FingerprintTable:
    """At most ``capacity`` (rounded up to a multiple of :data:`WAYS`) keys with packed values."""

    __slots__ = ("_buffer", "_codes", "_record", "_sets", "_span", "_values")

    MAX_COUNT: ClassVar[int] = 0xFFFF  # counts stored as "H" saturate here

    def __init__(self, capacity: int, value_format: str) -> None:
        shared = _VALUE_STRUCTS.get(value_format)
        if shared is None:
            made = (struct.Struct("<" + value_format), value_format.encode("ascii", "replace"))
            shared = _VALUE_STRUCTS.setdefault(value_format, made)
        self._values, self._codes = shared
        self._record = 4 + self._values.size
        self._sets = max(1, -(-capacity // WAYS))
        self._span = WAYS * self._record  # bytes per set
        self._buffer = bytearray(self._sets * self._span)

    @property
    def capacity(self) -> int:
        return self._sets * WAYS

    def __len__(self) -> int:
        record, buffer = self._record, self._buffer
        return sum(buffer[at : at + 4] != _EMPTY for at in range(0, len(buffer), record))

    def _find(self, key: int) -> tuple[int, int]:
        """(start of the key's set, offset of its record or -1)."""
        record, span = self._record, self._span
        start = (key % self._sets) * span
        end = start + span
        needle = _pack_key(key)
        buffer = self._buffer
        at = buffer.find(needle, start, end)
        while at != -1 and (at - start) % record:  # matched across two records
            at = buffer.find(needle, at + 1, end)
        return start, at

    def get(self, key: int) -> tuple[Any, ...] | None:
        """The values of ``key`` (and mark it most recently used), or ``None``."""
        native = _native_get
        if native is not None:
            found = native(self._buffer, key, self._sets, self._span, self._codes)
            if found is not NotImplemented:
                return found  # type: ignore[no-any-return]
        # _find inlined: get and bump run several times per event
        record, span, buffer = self._record, self._span, self._buffer
        start = (key % self._sets) * span
        end = start + span
        needle = _pack_key(key)
        at = buffer.find(needle, start, end)
        while at != -1 and (at - start) % record:  # matched across two records
            at = buffer.find(needle, at + 1, end)
        if at == -1:
            return None
        if at != start:  # move to the front of its set
            moved = buffer[at : at + record]
            buffer[start + record : at + record] = buffer[start:at]
            buffer[start : start + record] = moved
        return self._values.unpack_from(buffer, start + 4)

    def put(self, key: int, *values: Any) -> None:
        """Set ``key``'s values as the most recently used record of its set."""
        packed = _pack_key(key) + self._values.pack(*values)  # raises before any change
        start, at = self._find(key)
        self._write_front(start, at, packed)

    def insert(self, key: int, *values: Any) -> None:
        """:meth:`put` for a key that :meth:`get` just did not find (skips the lookup)."""
        native = _native_insert
        if (
            native is not None
            and native(self._buffer, key, self._sets, self._span, self._codes, values) is None
        ):
            return
        packed = _pack_key(key) + self._values.pack(*values)
        # _write_front(start, -1, packed), inlined: a first-time call inserts in two tables
        buffer, record, span = self._buffer, self._record, self._span
        start = (key % self._sets) * span
        buffer[start + record : start + span] = buffer[start : start + span - record]
        buffer[start : start + record] = packed

    def update(self, key: int, *values: Any) -> None:
        """New values for a key that :meth:`get` just found (it is at the front of its set)."""
        native = _native_update
        if (
            native is not None
            and native(self._buffer, key, self._sets, self._span, self._codes, values) is None
        ):
            return
        self._values.pack_into(self._buffer, (key % self._sets) * self._span + 4, *values)

    def _write_front(self, start: int, at: int, packed: bytes) -> None:
        buffer, record = self._buffer, self._record
        if at == -1:  # evict the set's last (least recently used) record
            at = start + self._span - record
        if at != start:
            buffer[start + record : at + record] = buffer[start:at]
        buffer[start : start + record] = packed

    def bump(self, key: int) -> int:
        """Add one to the count of ``key`` (a table of format ``"H"``); return the new count.

        The hot path of repetition counting, so one lookup and byte moves only.
        """
        native = _native_bump
        if native is not None:
            count = native(self._buffer, key, self._sets, self._span, self._codes, self.MAX_COUNT)
            if count is not NotImplemented:
                return count  # type: ignore[no-any-return]
        record, span, buffer = self._record, self._span, self._buffer
        start = (key % self._sets) * span
        end = start + span
        needle = _pack_key(key)
        at = buffer.find(needle, start, end)
        while at != -1 and (at - start) % record:  # matched across two records
            at = buffer.find(needle, at + 1, end)
        if at == -1:
            count = 1
            at = end - record  # evict the set's least recently used
        else:
            count = min(buffer[at + 4] | buffer[at + 5] << 8, self.MAX_COUNT - 1) + 1
        if at != start:
            buffer[start + record : at + record] = buffer[start:at]
        _pack_count_into(buffer, start, key, count)
        return count

    def pop(self, key: int) -> bool:
        """Forget ``key``; ``True`` when it was there."""
        start, at = self._find(key)
        if at == -1:
            return False
        buffer, record = self._buffer, self._record
        end = start + self._span
        buffer[at : end - record] = buffer[at + record : end]
        buffer[end - record : end] = bytes(record)
        return True

    def items(self) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """Every record, least recently used of each set first (the order ``put`` rebuilds)."""
        record, buffer = self._record, self._buffer
        for start in range(0, len(buffer), self._span):
            for at in range(start + (WAYS - 1) * record, start - 1, -record):
                (key,) = _KEY.unpack_from(buffer, at)
                if key:
                    yield key, self._values.unpack_from(buffer, at + 4)

    def to_json(self) -> list[list[Any]]:
        return [[key, *values] for key, values in self.items()]

    def load_json(self, data: Any, fill: Any = None) -> None:
        """Re-insert exported records; malformed ones are skipped, never raised.

        ``fill``: the value of a field added since older exports were made; their records,
        one value short, get it as their last value (``None``: such records are skipped).
        """
        if not isinstance(data, list):
            return
        width = len(self._values.unpack(bytes(self._values.size)))
        for item in data[-self.capacity * 4 :]:
            if isinstance(item, list) and len(item) == width and fill is not None:
                item = [*item, fill]
            if not isinstance(item, list) or len(item) != width + 1:
                continue
            try:
                self.put(int(item[0]) or 1, *item[1:])
            except (struct.error, TypeError, ValueError):
                continue
