"""The compact per-run table: bounded, least recently used evicted per set, exportable."""

from __future__ import annotations

import json
import sys

from otel_loopguard.engine.detectors.fingerprint_table import WAYS, FingerprintTable, fingerprint


def same_set_keys(table: FingerprintTable, count: int) -> list[int]:
    """Keys that land in set 0 (the set is the key modulo the number of sets)."""
    sets = table.capacity // WAYS
    return [sets * i + sets for i in range(count)]


def test_put_get_pop() -> None:
    table = FingerprintTable(64, "IH")
    table.put(7, 123456, 3)
    assert table.get(7) == (123456, 3)
    table.put(7, 1, 4)
    assert table.get(7) == (1, 4) and len(table) == 1
    table.pop(7)
    assert table.get(7) is None and len(table) == 0


def test_the_least_recently_used_key_of_a_set_is_evicted() -> None:
    table = FingerprintTable(64, "H")
    keys = same_set_keys(table, WAYS + 1)
    for key in keys[:WAYS]:
        table.put(key, 1)
    table.get(keys[0])  # used again: now the most recent
    table.put(keys[WAYS], 1)
    assert table.get(keys[0]) == (1,)
    assert table.get(keys[1]) is None  # the oldest untouched one went
    assert all(table.get(key) == (1,) for key in keys[2:])


def test_bump_counts_and_saturates() -> None:
    table = FingerprintTable(8, "H")
    assert [table.bump(5) for _ in range(3)] == [1, 2, 3]
    table.put(5, FingerprintTable.MAX_COUNT)
    assert table.bump(5) == FingerprintTable.MAX_COUNT


def test_size_is_fixed_whatever_goes_in() -> None:
    table = FingerprintTable(256, "IHI")
    empty = sys.getsizeof(table._buffer)
    for i in range(100_000):
        table.put(fingerprint(f"signature {i}"), i, 1, i)
    assert sys.getsizeof(table._buffer) == empty <= 256 * 14 + 100
    assert len(table) == table.capacity == 256


def test_json_round_trip_keeps_values_and_recency() -> None:
    table = FingerprintTable(16, "IH")
    for i in range(40):
        table.put(fingerprint(str(i)), i, i % 7)
    copy = FingerprintTable(16, "IH")
    copy.load_json(json.loads(json.dumps(table.to_json())))
    assert copy.to_json() == table.to_json()


def test_malformed_exports_are_skipped() -> None:
    table = FingerprintTable(16, "IH")
    table.load_json([[1, 2], "x", [3, "a", 1], [4, -1, 1], [5, 6, 7], None])
    table.load_json({"not": "a list"})
    assert table.to_json() == [[5, 6, 7]]


def test_fingerprints_are_stable_and_never_zero() -> None:
    assert fingerprint("abc") == fingerprint("abc") != fingerprint("abd")
    assert fingerprint("") != 0 and fingerprint("\ud800") > 0
